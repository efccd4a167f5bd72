"""make_dot: a picture of the dynamic graph behind a tensor, drawn as torchviz draws it.

grad_fn nodes are grey boxes named by class; AccumulateGrad nodes are drawn as their leaf
(light blue, named from `params` when given, with the shape); the outputs are green boxes.
Edges run from each next_function to the node that uses it. The walk is iterative, so deep
graphs are fine. With the `graphviz` package installed the result is a `graphviz.Digraph`;
otherwise a `DotGraph` holding the DOT text, which renders through the `dot` program.
"""

import shutil
import subprocess

from runtime.function import AccumulateGrad

NODE_ATTR = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1",
                 height="0.2", fontname="monospace")


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """The graph that produced `var` (a tensor or tuple of tensors) as a Digraph/DotGraph."""
    names = {id(v): k for k, v in (params or {}).items()}
    graph = _new_graph()
    outputs = var if isinstance(var, (tuple, list)) else (var,)
    seen = set()
    stack = []
    for out in outputs:
        graph.node(str(id(out)), _shape_label(out), fillcolor="darkolivegreen1")
        if out.grad_fn is not None:
            stack.append(out.grad_fn)
            graph.edge(str(id(out.grad_fn)), str(id(out)))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        _draw_node(graph, node, names, show_attrs, max_attr_chars)
        for child, _ in node.next_functions:
            if child is not None:
                graph.edge(str(id(child)), str(id(node)))
                stack.append(child)
    return graph


def _draw_node(graph, node, names, show_attrs, max_chars):
    if isinstance(node, AccumulateGrad):
        v = node.variable
        name = names.get(id(v))
        label = _shape_label(v) if name is None else f"{name}\n {_shape_text(v)}"
        graph.node(str(id(node)), label, fillcolor="lightblue")
        return
    label = type(node).__name__
    if show_attrs:
        label += "".join(f"\n{a}"[: max_chars + 1] for a in _plain_attrs(node))
    graph.node(str(id(node)), label, fillcolor="lightgrey")


def _plain_attrs(node):
    """The node's saved non-tensor values (what its rule needs besides tensors)."""
    args = node._args or ()
    return [repr(a) for a in args if isinstance(a, (int, float, bool, str, tuple))]


def _shape_text(t):
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _shape_label(t):
    return _shape_text(t)


def _new_graph():
    try:
        import graphviz
    except ImportError:
        return DotGraph()
    return graphviz.Digraph(node_attr=dict(NODE_ATTR), graph_attr=dict(size="12,12"))


class DotGraph:
    """A minimal Digraph stand-in: collects nodes and edges, renders with the `dot` program."""

    def __init__(self):
        self.body = []

    def node(self, name, label, **attrs):
        extra = "".join(f" {k}={_quote(v)}" for k, v in attrs.items())
        self.body.append(f"\t{name} [label={_quote(label)}{extra}]")

    def edge(self, tail, head):
        self.body.append(f"\t{tail} -> {head}")

    @property
    def source(self):
        attrs = " ".join(f"{k}={_quote(v)}" for k, v in NODE_ATTR.items())
        lines = ["digraph {", '\tgraph [size="12,12"]', f"\tnode [{attrs}]", *self.body, "}"]
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.source

    def pipe(self, format="svg"):
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError("rendering a graph needs the Graphviz 'dot' program; install it "
                               "(Debian/Ubuntu: apt-get install graphviz) or use .source")
        run = subprocess.run([dot, f"-T{format}"], input=self.source.encode(),
                             capture_output=True, check=True)
        return run.stdout

    def render(self, filename, format="svg"):
        path = f"{filename}.{format}"
        with open(path, "wb") as f:
            f.write(self.pipe(format))
        return path

    def _repr_svg_(self):
        return self.pipe("svg").decode() if shutil.which("dot") else None


def _quote(value):
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'
