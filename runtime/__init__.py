"""adcompile's eager runtime: a numpy-backed Tensor with PyTorch 2.13's autograd semantics.

This package is the foundation (it depends only on numpy). Its public names mirror the
`torch` namespace so that `import adcompile as torch` runs PyTorch autograd code unchanged;
`adcompile/__init__.py` re-exports everything listed in `__all__`.
"""

import sys as _sys

from runtime import autograd, dtypes, nn, optim
from runtime import ops as _ops
from runtime.accelerators import (accelerator, backends, cuda, get_default_device, mps,
                                  set_default_device)
from runtime.creation import (
    arange,
    as_tensor,
    device,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    legacy_constructors,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from runtime.dtypes import (
    bool_ as bool,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from runtime.dtypes import dtype
from runtime.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from runtime.ops._core import get_default_dtype, set_default_dtype
from runtime.out_param import with_copy_out as _with_copy_out, with_out as _with_out
from runtime.serialization import load, save
from runtime.random import Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state
from runtime.tensor import Size, Tensor
from runtime.viz import make_dot
from runtime.printing import get_printoptions, set_printoptions

half = float16
float = float32
double = float64
short = int16
int = int32
long = int64
cfloat = complex64
cdouble = complex128

globals().update(legacy_constructors())


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


_FUNCTIONS = [
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "tanh", "sigmoid", "relu", "clamp", "reciprocal", "sign", "floor",
    "ceil", "trunc", "round", "square", "maximum", "minimum", "where", "masked_fill", "eq", "ne",
    "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or", "logical_xor", "isnan",
    "isinf", "isfinite", "sum", "mean", "prod", "max", "min", "argmax", "argmin", "norm", "var",
    "std", "dot", "vdot", "mm", "mv", "bmm", "matmul", "outer", "addmm", "reshape", "flatten", "t",
    "transpose", "permute", "squeeze", "unsqueeze", "select", "narrow", "cat", "stack",
    "split", "chunk", "unsafe_chunk", "unbind", "clone", "diag", "softmax", "log_softmax", "logsumexp",
    "cumsum", "all", "any", "remainder", "floor_divide", "rsub", "addcmul", "addcdiv", "lerp",
    "swapaxes", "swapdims", "index_select", "gather", "cumprod", "float_power", "clamp_min",
    "clamp_max", "nonzero",
]


globals().update({name: _with_out(getattr(_ops, name)) for name in _FUNCTIONS})
subtract, multiply, divide, true_divide = sub, mul, div, div
absolute, negative, clip = abs, neg, clamp
concat = concatenate = cat

from runtime import breadth as _breadth  # noqa: E402  (issue 16's operator families)

globals().update({name: _with_out(fn) for name, fn in _breadth.TORCH.items()})
from runtime.ops import contractions as _contractions  # noqa: E402



globals().update({name: (_with_copy_out if name in _contractions.COPY_OUT else _with_out)(
    getattr(_contractions, name)) for name in _contractions.FUNCTIONS})
for _name in _contractions.METHODS:
    setattr(Tensor, _name, getattr(_contractions, _name))
from runtime import dtype_info as _dtype_info, predicates as _predicates  # noqa: E402
from runtime import sampling as _sampling  # noqa: E402
from runtime.ops import counting as _counting, integration as _integration  # noqa: E402
from runtime.ops import stacking as _stacking  # noqa: E402
from runtime.ops import distance as _distance  # noqa: E402
from runtime.ops import covariance as _covariance  # noqa: E402
from runtime.ops import vander as _vander  # noqa: E402

globals().update(_dtype_info.FUNCTIONS)
globals().update(_sampling.FUNCTIONS)
globals().update(_predicates.FUNCTIONS)
for _name in _predicates.METHODS:
    setattr(Tensor, _name, getattr(_predicates, _name))
for _family in (_stacking, _counting, _integration, _distance, _covariance,
                _vander):
    globals().update({name: getattr(_family, name) for name in _family.FUNCTIONS})
    for _name in _family.METHODS:
        setattr(Tensor, _name, getattr(_family, _name))
Tensor.bernoulli = _sampling.bernoulli
dist = Tensor.dist = _ops.reductions.dist
from runtime.ops import blas as _blas  # noqa: E402

addr = _with_out(_blas.addr)
Tensor.addr = _blas.addr
from runtime import special  # noqa: E402


from runtime.creation import tensor  # noqa: E402  (rebinds the name the submodule took)
from runtime import linalg  # noqa: E402
from runtime.linalg import toplevel as _linalg_toplevel  # noqa: E402
from runtime.linalg.toplevel import *  # noqa: E402,F401,F403

_linalg_toplevel.install(Tensor)
addbmm, addmv, baddbmm = _with_out(addbmm), _with_out(addmv), _with_out(baddbmm)
linalg.multi_dot = _with_out(linalg.multi_dot)
linalg.cross = _with_out(linalg.cross)
cross = _with_out(_ops.cross)
Tensor.cross = _ops.cross
from runtime import return_types  # noqa: E402,F401
from runtime import func  # noqa: E402
from runtime.func import vmap  # noqa: E402,F401
from runtime import batching as _batching  # noqa: E402

# while a vmap runs, these namespaces' functions dispatch batched arguments
_batching.NAMESPACES.extend([_sys.modules[__name__], nn.functional, special, linalg])
from runtime.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402,F401


equal = _ops.equal
real, imag, conj, angle = _ops.real, _ops.imag, _ops.conj, _ops.angle
complex, polar = _ops.complex.from_parts, _ops.complex.polar
sgn = _with_out(_ops.sgn)
view_as_real, view_as_complex = _ops.view_as_real, _ops.view_as_complex


def detach(t):
    return t.detach()


__version__ = "0.1.0"
