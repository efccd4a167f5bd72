"""Memory behaviour of the eager runtime: saved tensors are released by backward, and a
training loop does not grow memory."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest
import torch as real_torch

import adcompile as torch


def test_saved_tensors_released_after_backward():
    x = torch.tensor(np.linspace(0.0, 1.0, 1000), requires_grad=True)
    y = (x * 2).exp()
    node = y.grad_fn
    z = (y * y).sum()
    exp_result = weakref.ref(y)
    del y
    z.backward()
    assert node._args is None, "ExpBackward0 kept its saved result after backward"
    del z, node
    gc.collect()
    assert exp_result() is None


def test_saved_input_freed_when_graph_dies():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    m = x * 3
    probe = weakref.ref(m)
    out = (m * m).sum()
    del m
    assert probe() is not None  # MulBackward0 saved it
    out.backward()
    assert probe() is None  # released by backward, without waiting for the graph to die


def test_retain_grad_does_not_keep_tensor_alive():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    probe = weakref.ref(y)
    out = y.sum()
    del y
    gc.collect()
    assert probe() is None
    out.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def _train(steps, w, b, data, target):
    for _ in range(steps):
        pred = (data @ w + b).tanh()
        loss = ((pred - target) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.01 * w.grad
            b -= 0.01 * b.grad
        w.grad = None
        b.grad = None


def test_training_loop_does_not_grow_memory():
    torch.manual_seed(0)
    w = torch.randn(8, 4, requires_grad=True)
    b = torch.zeros(4, requires_grad=True)
    data = torch.randn(16, 8)
    target = torch.randn(16, 4)
    _train(200, w, b, data, target)
    gc.collect()
    tracemalloc.start()
    _train(1000, w, b, data, target)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    _train(9000, w, b, data, target)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 64 * 1024, f"memory grew by {after - before} bytes over 9000 steps"


def test_copy_slices_releases_the_node_it_wraps():
    """A backward that does not retain the graph frees what the in-place op on a view saved
    (CopySlices' wrapped node), not only CopySlices' own state."""
    x = torch.ones(3, requires_grad=True)
    w = torch.tensor(np.full(2, 2.0), requires_grad=True)
    y = x * 1
    y[0:2].mul_(w * 1)
    assert y.grad_fn.fn._args is not None
    y.sum().backward()
    assert y.grad_fn.fn._args is None


@pytest.mark.parametrize("lib", [torch, real_torch], ids=["adcompile", "torch"])
@pytest.mark.parametrize("inplace", ["mul_", "add_"])
def test_second_backward_through_copy_slices(lib, inplace):
    """A second backward through CopySlices raises, whether or not its wrapped node saved
    anything (PyTorch drops the wrapped node); with retain_graph it runs."""
    def build():
        x = lib.ones(3, requires_grad=True)
        y = x + 0
        getattr(y[0:2], inplace)(2.0)
        return x, y
    x, y = build()
    y.sum().backward()
    with pytest.raises(RuntimeError):
        y.sum().backward()
    x, y = build()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert x.grad.tolist() == ([4.0, 4.0, 2.0] if inplace == "mul_" else [2.0, 2.0, 2.0])
