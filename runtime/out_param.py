"""The `out=` keyword of torch.* functions, as PyTorch 2.13 treats it.

`with_out(fn)` computes `fn`'s result, then writes it into `out`; `with_copy_out(fn)` does the
same as a recorded `copy_`, for the ops whose PyTorch out= form joins the graph. Both go
through `fit_out`, which keeps PyTorch's rules in one place:

- shape: an `out` of another shape is resized to the result's (keeping its dtype); silently
  when it held no elements, with a UserWarning when it did (PyTorch deprecates that), except
  for the ops of `QUIET_RESIZE` and the factories (torch.zeros(2, out=t));
- dtype: `out` keeps its dtype. Ops in `EXACT_DTYPE` refuse an `out` of another dtype (the
  products, selections, index ops ...); the others cast the result into it when the result's
  dtype can be cast safely (not float into an integer, not complex into a real dtype). Ops in
  `COMPUTE_IN_OUT_DTYPE` (sum, prod, cumsum, cumprod) compute in out's dtype instead, as
  if it were passed as their dtype= argument.

The ops returning a (values, indices) pair (max and min over a dim, sort, topk, kthvalue,
median, mode, cummax, cummin) take a pair of tensors as out=, each fitted to its part by the
same rules, and return them as torch.return_types.<name>_out.
"""

import warnings

from runtime import return_types
from runtime.grad_mode import is_grad_enabled, no_grad

# ops whose out must have the result's dtype exactly (observed on torch 2.13 CPU)
EXACT_DTYPE = frozenset("""
    mm matmul dot vdot mv bmm addmm addmv addbmm baddbmm inner tensordot chain_matmul multi_dot
    clamp clamp_min clamp_max where softmax log_softmax amax amin max min argmax argmin norm
    index_select gather take_along_dim masked_select nonzero diag tril triu index_add scatter_add
    sort topk kthvalue median nanmedian mode cummax cummin logcumsumexp all any abs sign round
    trunc floor ceil cross
""".split())
COMPUTE_IN_OUT_DTYPE = frozenset(("sum", "prod", "cumsum", "cumprod"))
QUIET_RESIZE = frozenset(("addbmm",))  # resized without the warning, as PyTorch's kernel does


def can_cast(source, target):
    """Whether PyTorch writes a `source` result into a `target` tensor (out=, in place)."""
    if source.is_complex and not target.is_complex:
        return False
    return source.category <= target.category


def _check_dtype(name, out, result):
    if out.dtype is result.dtype:
        return
    if name in EXACT_DTYPE or not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{name}(): the result has dtype {result.dtype}, which cannot be "
                           f"written into out= of dtype {out.dtype}")


def fit_out(name, out, result):
    """Check out's dtype against `result` and resize it to result's shape (see the module
    docstring); the caller then copies the result in."""
    _check_dtype(name, out, result)
    shape = tuple(result.shape)
    if tuple(out.shape) == shape:
        return
    if out.numel() and name not in QUIET_RESIZE:
        _warn_resize(name, out, shape)
    resize(out, shape)


def _warn_resize(name, out, shape):
    warnings.warn(f"{name}(): out= had shape {list(out.shape)} but the result has shape "
                  f"{list(shape)}, so out was resized; resizing a non-empty out= is "
                  f"deprecated: pass an empty tensor, or one of the result's shape",
                  UserWarning, stacklevel=4)


def resize(out, shape):
    """Give `out` a new shape (zero-filled, its own dtype) without recording anything."""
    from runtime.creation import zeros

    with no_grad():
        out.data = zeros(shape, dtype=out.dtype)


def _tensor_args(args):
    """The Tensors among `args`, also those inside a list or tuple (multi_dot's operands)."""
    from runtime.tensor import Tensor

    for a in args:
        if isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, Tensor))
        elif isinstance(a, Tensor):
            yield a


def _compute(fn, out, args, kwargs):
    if fn.__name__ in COMPUTE_IN_OUT_DTYPE and kwargs.get("dtype") is None:
        kwargs = {**kwargs, "dtype": out.dtype}
    return fn(*args, **kwargs)


def _write_pair(name, outs, result):
    """Fit each tensor of the pair `outs` to its part of `result` and copy it in."""
    if len(outs) != len(result):
        raise TypeError(f"{name}(): out= must be a tuple of {len(result)} tensors, not of "
                        f"{len(outs)}")
    for out, part in zip(outs, result):
        fit_out(name, out, part)
    with no_grad():
        for out, part in zip(outs, result):
            out.copy_(part)
    return return_types.named(f"{name}_out", result._fields)(*outs)


def with_out(fn):
    """torch.fn(..., out=t): compute, then copy into `t`; refused while recording."""

    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if is_grad_enabled() and any(t.requires_grad for t in (*outs, *_tensor_args(args))):
            raise RuntimeError(f"{fn.__name__}(): out= cannot be used when an argument "
                               f"requires grad, since the result could not be differentiated; "
                               f"drop out= or compute under torch.no_grad()")
        if isinstance(out, (tuple, list)):
            return _write_pair(fn.__name__, outs, fn(*args, **kwargs))
        result = _compute(fn, out, args, kwargs)
        fit_out(fn.__name__, out, result)
        with no_grad():
            out.copy_(result)
        return out

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def with_copy_out(fn):
    """torch.fn(..., out=t) for ops whose PyTorch out= form computes the result, then copies
    it into `t` as a recorded copy_: `t` joins the graph (CopyBackwards) instead of refusing
    arguments that require grad."""

    def call(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        fit_out(fn.__name__, out, result)
        return out.copy_(result)

    call.__name__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def factory_out(out, data, name=None):
    """A factory's out= (torch.zeros(2, out=t)): resized silently, as PyTorch's factories
    do (except the `name`d ones, which warn as other ops do), then filled with `data` (a
    numpy array of the result's shape)."""
    from runtime.ops._core import wrap

    if tuple(out.shape) != data.shape:
        if name is not None and out.numel():
            _warn_resize(name, out, data.shape)
        resize(out, data.shape)
    with no_grad():
        out.copy_(wrap(data.astype(out.dtype.np, copy=False), out.dtype))
    return out
