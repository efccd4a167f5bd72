"""Helpers shared by the optimizer family modules: the per-parameter step counter that
PyTorch keeps as a float32 0-d tensor, and the maximize flag applied to a gradient."""

import numpy as np

from runtime import ops as F
from runtime.creation import zeros_like
from runtime.ops._core import wrap
from runtime import dtypes



def step_tensor():
    return wrap(np.zeros((), np.float32), dtypes.float32)


def advance(state):
    """Increment the step counter in place and return it as a Python float."""
    state["step"]._data = state["step"]._data + np.float32(1)
    return float(state["step"]._data)


def signed_grad(p, group):
    return F.neg(p._grad) if group["maximize"] else p._grad


def new_state(p, *names):
    state = {"step": step_tensor()}
    for name in names:
        state[name] = zeros_like(p)
    return state


def check_unsupported(group):
    """Only PyTorch's single-tensor CPU path exists here; refuse the switches that select
    another implementation instead of silently ignoring them."""
    for flag in ("capturable", "differentiable", "foreach", "fused"):
        if group.get(flag):
            raise NotImplementedError(f"{flag}=True is not supported: only the single-tensor "
                                      "update (PyTorch's CPU default) is implemented")


def check_nonneg(**values):
    for name, v in values.items():
        if not 0.0 <= v:
            raise ValueError(f"invalid {name}: {v} (must be >= 0)")


def check_unit(name, v):
    if not 0.0 <= v < 1.0:
        raise ValueError(f"invalid {name}: {v} (must be in [0, 1))")
