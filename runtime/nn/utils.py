"""torch.nn.utils: gradient clipping (clip_grad_norm_, clip_grad_value_) and
parameters_to_vector / vector_to_parameters."""

import math

import numpy as np

from runtime import ops as F
from runtime.grad_mode import no_grad
from runtime.ops._core import wrap
from runtime.tensor import Tensor


def _grads(parameters):
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p._grad for p in params if p._grad is not None]


def _total_norm(grads, norm_type):
    if norm_type == math.inf:
        norms = [np.abs(g._data).max() if g._data.size else 0.0 for g in grads]
        return max(norms) if norms else 0.0
    norms = [np.linalg.norm(g._data.reshape(-1).astype(np.float32), norm_type) for g in grads]
    return np.linalg.norm(np.asarray(norms, np.float32), norm_type)


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients together so that their joint norm is at most max_norm; returns
    the joint norm before clipping (a 0-d tensor)."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return wrap(np.zeros((), np.float32), None)
    total = np.float32(_total_norm(grads, norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"the total norm of order {norm_type} of the gradients is "
                           "non-finite, so it cannot be clipped")
    coef = np.float32(max_norm) / (total + np.float32(1e-6))
    coef = min(coef, np.float32(1.0))
    for g in grads:
        g.mul_(float(coef))
    return wrap(np.asarray(total, np.float32), None)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    for g in _grads(parameters):
        g.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    return F.cat([F.reshape(p, (-1,)) for p in parameters], 0)


@no_grad()
def vector_to_parameters(vec, parameters):
    offset = 0
    for p in parameters:
        n = p.numel()
        p.copy_(F.reshape(vec[offset:offset + n], p.shape))
        offset += n
