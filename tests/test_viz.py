"""make_dot draws the graph as torchviz does: every node, every named parameter, colours."""

import shutil

import pytest

import adcompile as torch
from runtime.viz import DotGraph


def _net():
    torch.manual_seed(0)
    w = torch.randn(4, 3, requires_grad=True)
    b = torch.zeros(4, requires_grad=True)
    x = torch.randn(2, 3)
    out = (x @ w.t() + b).tanh().sum()
    return out, {"w": w, "b": b}


def test_dot_names_every_node_and_parameter():
    out, params = _net()
    source = torch.make_dot(out, params=params).source.replace("\\n", "\n")
    for name in ["SumBackward0", "TanhBackward0", "AddBackward0", "MmBackward0", "TBackward0"]:
        assert name in source
    assert "w\n (4, 3)" in source and "b\n (4)" in source
    assert "lightblue" in source and "darkolivegreen1" in source and "lightgrey" in source
    assert source.count("->") == 7


def test_tuple_of_outputs_and_unnamed_leaves():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    source = torch.make_dot((x * 2, x.exp())).source
    assert "MulBackward0" in source and "ExpBackward0" in source and "(2)" in source


def test_deep_graph_is_drawn_without_recursion():
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0
    assert torch.make_dot(y).source.count("MulBackward0") == 5000


def test_plain_dotgraph_source_is_valid_dot():
    g = DotGraph()
    g.node("1", 'a "quoted"\nlabel', fillcolor="lightgrey")
    g.edge("2", "1")
    assert g.source.startswith("digraph {") and '\\"quoted\\"' in g.source


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_rendered_svg_names_every_node():
    out, params = _net()
    graph = torch.make_dot(out, params=params)
    svg = graph.pipe(format="svg").decode()
    for label in ["SumBackward0", "TanhBackward0", "AddBackward0", "MmBackward0", "TBackward0"]:
        assert label in svg
    assert ">w<" in svg or "w" in svg
