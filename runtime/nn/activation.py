"""Activations with their PyTorch node names (GeluBackward0, SiluBackward0, EluBackward0,
LeakyReluBackward0, SoftplusBackward0) and the Embedding lookup (EmbeddingBackward0).

Each forward is a numpy expression; the derivative rules are in runtime/rules/activation.py.
GELU's erf form on contiguous float32 is oneDNN's, as PyTorch computes it (dnnl_eltwise.py).
"""

import math

import numpy as np
from scipy import special

from runtime import dnnl_eltwise
from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.nn.modules import Module, Parameter
from runtime.ops._core import float_dtype, wrap
from runtime.tensor import Tensor


def _pointwise(node_name, prim, fn, *params):
    cls = node_class(node_name, prim)

    def op(x):
        dt = float_dtype(x)
        d = x._data.astype(dt.np, copy=False)
        data, extra = fn(d, *params)
        out = wrap(np.asarray(data, dt.np), dt)
        if any_requires_grad((x,)):
            record(cls, (x,), out, (save_input(x),) + tuple(extra))
        return out

    return op


def _gelu_none(d):
    if dnnl_eltwise.gelu_applies(d):  # the rule's exact slope needs no CDF (rules/activation)
        return dnnl_eltwise.gelu(d), (None, "none")
    cdf = special.ndtr(d).astype(d.dtype)
    return d * cdf, (save_input(wrap(cdf, None)), "none")


def _gelu_tanh(d):
    inner = np.tanh(math.sqrt(2.0 / math.pi) * (d + 0.044715 * d * d * d)).astype(d.dtype)
    return 0.5 * d * (1 + inner), (save_input(wrap(inner, None)), "tanh")


_GELU = {"none": _gelu_none, "tanh": _gelu_tanh}


def gelu(input, approximate="none"):
    if approximate not in _GELU:
        raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    return _pointwise("GeluBackward0", "gelu", _GELU[approximate])(input)


def silu(input, inplace=False):
    return _pointwise("SiluBackward0", "silu", lambda d: (d / (1 + np.exp(-d)), ()))(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    def fn(d, slope):
        return np.where(d > 0, d, d * d.dtype.type(slope)), (slope,)

    return _pointwise("LeakyReluBackward0", "leaky_relu", fn, negative_slope)(input)


def elu(input, alpha=1.0, inplace=False):
    def fn(d, a):
        return np.where(d > 0, d, d.dtype.type(a) * np.expm1(d)), (a,)

    return _pointwise("EluBackward0", "elu", fn, alpha)(input)


def softplus(input, beta=1.0, threshold=20.0):
    def fn(d, b, t):
        bx = d * d.dtype.type(b)
        with np.errstate(over="ignore"):
            soft = np.log1p(np.exp(bx)) / d.dtype.type(b)
        return np.where(bx > t, d, soft), (b, t)

    return _pointwise("SoftplusBackward0", "softplus", fn, beta, threshold)(input)


EmbeddingBackward0 = node_class("EmbeddingBackward0", "embedding")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported")
    idx = input._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError("embedding expects integer indices (Long or Int)")
    n = weight._data.shape[0]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"embedding: an index is out of range for {n} rows")
    out = wrap(weight._data[idx], weight._dtype)
    if any_requires_grad((weight,)):
        flat = idx.reshape(-1) % n
        pad = None if padding_idx is None else padding_idx % n
        kept = np.flatnonzero(flat != pad) if pad is not None else np.arange(flat.size)
        record(EmbeddingBackward0, (weight,), out, (weight._data.shape, kept, flat[kept]))
    return out


def functional_module():
    from runtime.nn import functional

    return functional


def _act_module(name, fn, fields, fmt):
    """A Module class calling fn(input, **fields) whose repr prints `fmt` over its fields."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(fields)
        values.update(zip(fields, args))
        values.update(kwargs)
        for k, v in values.items():
            setattr(self, k, v)

    def forward(self, input):
        # looked up on each call, so that vmap's dispatching torch.nn.functional is used
        call = getattr(functional_module(), fn.__name__, fn)
        return call(input, **{k: getattr(self, k) for k in fields if k != "inplace"})

    def extra_repr(self):
        return fmt.format(**{k: getattr(self, k) for k in fields})

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__module__": __name__,
                                  "_vmap_batches": True})


GELU = _act_module("GELU", gelu, {"approximate": "none"}, "approximate={approximate!r}")
SiLU = _act_module("SiLU", silu, {"inplace": False}, "")
LeakyReLU = _act_module("LeakyReLU", leaky_relu, {"negative_slope": 0.01, "inplace": False},
                        "negative_slope={negative_slope}")
ELU = _act_module("ELU", elu, {"alpha": 1.0, "inplace": False}, "alpha={alpha}")
Softplus = _act_module("Softplus", softplus, {"beta": 1.0, "threshold": 20.0},
                       "beta={beta}, threshold={threshold}")


class Embedding(Module):
    """A lookup table of num_embeddings rows, initialised from N(0, 1) as in PyTorch (the
    padding row, if any, is then zeroed and receives no gradient)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        dt = dtype or F.get_default_dtype()
        data = np.empty((num_embeddings, embedding_dim), dt.np) if _weight is None \
            else _weight._data
        self.weight = Parameter(Tensor._wrap(data, dt), requires_grad=not _freeze)
        if _weight is None:
            self.reset_parameters()

    def reset_parameters(self):
        from runtime.grad_mode import no_grad
        from runtime.nn import init

        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        s += f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        s += f", max_norm={self.max_norm}" if self.max_norm is not None else ""
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kwargs):
        rows, dim = embeddings.shape
        return cls(rows, dim, padding_idx, _weight=embeddings.detach().clone(),
                   _freeze=freeze, **kwargs)
