"""Draw the autograd graph of a small network with make_dot and write it as SVG.

Run: python examples/graph_picture.py [out.svg]   (needs Graphviz's `dot` program)
"""

import sys

import adcompile as torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
x = torch.randn(2, 3)
loss = model(x).pow(2).mean()

graph = torch.make_dot(loss, params=dict(model.named_parameters()))
print(graph.source)
path = sys.argv[1] if len(sys.argv) > 1 else "graph_picture.svg"
with open(path, "wb") as f:
    f.write(graph.pipe(format="svg"))
print("wrote", path)
