"""Minimise f(x) = x0^2 + (x1 - 1)^2 with SGD and momentum (the seed tutorial's example).

Run: python examples/minimize.py
"""

import adcompile as torch


def fun(x):
    return x[0] ** 2 + (x[1] - 1) ** 2


x = torch.tensor([1.0, -1.0], requires_grad=True)
optimizer = torch.optim.SGD([x], lr=1, momentum=0.5)
for step in range(20):
    optimizer.zero_grad()
    y = fun(x)
    y.backward()
    optimizer.step()
    print(step, y.item(), x.detach().numpy())
print("minimum near", x, "after", x._version, "in-place updates")
