"""torch.nn.init: in-place initialisers drawing from the PyTorch-exact random stream."""

import math
import warnings

import numpy as np

from runtime import random
from runtime.grad_mode import no_grad


def _fans(t):
    shape = t._data.shape
    if len(shape) < 2:
        raise ValueError("fan in and fan out need a tensor with at least 2 dimensions")
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"unsupported nonlinearity {nonlinearity!r}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def _normal_cdf(v):
    return (1.0 + math.erf(v / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) restricted to [a, b], by rejection as PyTorch 2.13 draws it: when
    [a, b] holds more than 30% of the mass, whole-tensor normal draws replace the values
    outside; otherwise uniform candidates on [a, b] are accepted against the density."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("trunc_normal_: mean is more than 2 std outside [a, b], so the values "
                      "may not follow the intended distribution", stacklevel=2)
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    with no_grad():
        if mass > 0.3:
            _trunc_by_normal_draws(tensor, mean, std, a, b, generator)
        else:
            _trunc_by_uniform_candidates(tensor, mean, std, a, b, generator)
    return tensor


def _trunc_by_normal_draws(tensor, mean, std, a, b, generator):
    from runtime import creation, ops as F

    lo, hi = (float(np.asarray(v, tensor._data.dtype)) for v in (a, b))
    result = tensor.normal_(mean, std, generator=generator)
    while True:
        outside = F.logical_or(F.lt(result, lo), F.gt(result, hi))
        if not bool(outside.any()):
            break
        fresh = creation.empty_like(result).normal_(mean, std, generator=generator)
        result = F.where(outside, fresh, result)
    if result is not tensor:
        tensor.copy_(result)


def _log_density_excess(candidates, mean, std, log_peak):
    """log pdf(candidates) - log pdf(mode), in place, up to the shared normalising constant."""
    return candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)


def _trunc_by_uniform_candidates(tensor, mean, std, a, b, generator):
    from runtime import creation, ops as F

    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2
    candidates, accept = creation.empty_like(tensor), creation.empty_like(tensor)
    tensor.uniform_(a, b, generator=generator)
    candidates.copy_(tensor)
    _log_density_excess(candidates, mean, std, log_peak)
    pending = F.gt(accept.uniform_(generator=generator).log_(), candidates)
    result = tensor
    while bool(pending.any()):
        candidates.uniform_(a, b, generator=generator)
        result = F.where(pending, candidates, result)
        _log_density_excess(candidates, mean, std, log_peak)
        rejected = F.gt(accept.uniform_(generator=generator).log_(), candidates)
        pending = F.where(pending, rejected, pending)
    if result is not tensor:
        tensor.copy_(result)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def default_layer_init_(weight, bias, fan_in):
    """PyTorch's default for Linear and Conv layers: kaiming-uniform weight (a = sqrt(5)) and
    a bias uniform in +-1/sqrt(fan_in), drawn in that order."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_"]


def eye_(tensor):
    import numpy as np

    if tensor._data.ndim != 2:
        raise ValueError("eye_ needs a 2-d tensor")
    with no_grad():
        tensor._data[...] = np.eye(*tensor._data.shape, dtype=tensor._data.dtype)
    return tensor


def dirac_(tensor, groups=1):
    import numpy as np

    shape = tensor._data.shape
    if len(shape) not in (3, 4, 5) or shape[0] % groups:
        raise ValueError("dirac_ needs a 3, 4 or 5-d tensor whose first dimension is "
                         "divisible by groups")
    per_group = shape[0] // groups
    centre = tuple(s // 2 for s in shape[2:])
    data = np.zeros(shape, tensor._data.dtype)
    for g in range(groups):
        for d in range(min(per_group, shape[1])):
            data[(g * per_group + d, d) + centre] = 1
    with no_grad():
        tensor._data[...] = data
    return tensor


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of normal draws, with the signs
    fixed by R's diagonal, as PyTorch builds it."""
    import numpy as np

    from runtime import random as _random

    if tensor._data.ndim < 2:
        raise ValueError("orthogonal_ needs a tensor with at least 2 dimensions")
    rows = tensor._data.shape[0]
    cols = tensor._data.size // rows
    flat = _random.randn((rows, cols), tensor._data.dtype, generator)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        tensor._data[...] = (q * gain).reshape(tensor._data.shape).astype(tensor._data.dtype)
    return tensor


__all__ += ["eye_", "dirac_", "orthogonal_", "default_layer_init_", "trunc_normal_"]
