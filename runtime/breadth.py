"""Issue 16's operator families, registered: `torch.*` functions, Tensor methods and their
in-place `name_` forms for `runtime.ops.special`, `runtime.ops.scans` and
`runtime.ops.indexing`.

`runtime/__init__.py` publishes `TORCH` (the torch-namespace part); importing this module
installs the methods on Tensor. The names follow PyTorch 2.13: a function appears
in `torch` / as a method / in place exactly where PyTorch has it (`tests/claimed_names.txt`).
"""

import functools

from runtime import ops as F
from runtime.ops import indexing, scans, special
from runtime.tensor import Tensor

_FAMILIES = (special, scans, indexing)

# torch.* functions that are not Tensor methods, and methods that are not torch.* functions
_NOT_METHODS = {"var_mean", "std_mean", "broadcast_tensors", "broadcast_shapes", "meshgrid",
                "cartesian_prod"}
_METHOD_ONLY = {"sum_to_size": indexing.sum_to_size, "unfold": indexing.unfold,
                "t_": indexing.t_, "transpose_": indexing.transpose_,
                "squeeze_": indexing.squeeze_, "unsqueeze_": indexing.unsqueeze_,
                "polygamma": lambda self, n: special.polygamma(n, self)}

# in-place forms: name_ -> the out-of-place function it writes back
_INPLACE = [
    "acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log2",
    "log10", "exp2", "erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "nan_to_num",
    "atan2", "arctan2", "hypot", "fmod", "remainder", "xlogy", "scatter", "scatter_add",
    "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put", "masked_scatter",
    "tril", "triu", "clamp_min", "clamp_max", "sign", "square", "reciprocal", "rsqrt", "tan",
    "trunc", "ceil", "log1p", "sinc", "copysign", "heaviside", "sgn",
    "i0", "ldexp", "nextafter",
]
_TORCH_INPLACE = [
    "acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log2",
    "log10", "exp2", "erf", "erfc", "logit", "nan_to_num", "xlogy", "index_put", "clamp_min",
    "clamp_max", "square", "reciprocal", "rsqrt", "tan", "trunc", "ceil", "log1p", "sigmoid", "sinc",
    "i0", "ldexp",
]
_ALIASES = {"arccos": "acos", "arcsin": "asin", "arctan": "atan", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh"}


def _functions():
    table = {name: getattr(family, name) for family in _FAMILIES for name in family.FUNCTIONS}
    table.update({alias: table[name] for alias, name in _ALIASES.items()})
    return table


FUNCTIONS = _functions()


def _out_of_place(name):
    return FUNCTIONS.get(name) or getattr(F, name)


def _inplace_method(name):
    fn = _out_of_place(name)

    def method(self, *args, **kwargs):
        return self._inplace(functools.partial(fn, **kwargs) if kwargs else fn, *args)

    method.__name__ = name + "_"
    method.__doc__ = f"In-place {name}: writes {name}(self, ...) into self."
    return method


def _polygamma_(self, n):
    return self._inplace(lambda t: special.polygamma(n, t, special.PolygammaBackward1))


def _install():
    for name, fn in FUNCTIONS.items():
        if name not in _NOT_METHODS:
            setattr(Tensor, name, fn)
    for name, fn in _METHOD_ONLY.items():
        setattr(Tensor, name, fn)
    for name in _INPLACE:
        setattr(Tensor, name + "_", _inplace_method(name))
    Tensor.polygamma_ = _polygamma_
    for alias, name in _ALIASES.items():
        setattr(Tensor, alias + "_", getattr(Tensor, name + "_"))
    torch_names = dict(FUNCTIONS)
    torch_names.update({name + "_": _torch_inplace(name)
                        for name in _TORCH_INPLACE + list(_ALIASES)})
    return torch_names


def _torch_inplace(name):
    method = getattr(Tensor, name + "_")

    def fn(x, *args, **kwargs):
        return method(x, *args, **kwargs)

    fn.__name__ = name + "_"
    return fn


TORCH = _install()  # the torch.* names; runtime/__init__.py adds out= support to each
