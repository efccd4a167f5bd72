"""vmap's batching rules: for each op name, how a call on batched operands becomes one call
on their physical tensors (runtime.batching holds the machinery and the fallback loop).

Every level's batch dimension is at the front of the physical tensor, so

- elementwise ops need their batched operands lifted to the same number of batch dimensions
  and padded to the same logical rank (size-1 dimensions; broadcasting does the rest);
- ops with dimension arguments get them shifted by the number of batch dimensions (negative
  dimensions count from the end and are the same logically and physically); a reduction over
  every dimension reduces the logical ones;
- products use batched matmul (a logical vector is a matrix with one row or column);
- indexing prefixes the key with full slices for the batch dimensions.

A rule returns NotImplemented for the cases it does not cover (they take the fallback loop).
"""

from runtime import ops as F
from runtime.batching import (
    RULES,
    BatchedTensor,
    _is_tensor_like,
    _operands,
    expand_batch,
    is_batched,
    lift,
    lrank,
    nb_of,
    pad_logical,
    physical,
    wrap_out,
)

_REQUIRED = object()


def rule(*names):
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn

    return register


def _batch_nb(args, kwargs):
    return max(nb_of(x) for x in _operands(args, kwargs))


def _map_args(args, kwargs, convert):
    def one(a):
        if isinstance(a, (tuple, list)) and any(_is_tensor_like(x) for x in a):
            return type(a)(convert(x) if _is_tensor_like(x) else x for x in a)
        return convert(a) if _is_tensor_like(a) else a

    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}


# -- elementwise ----------------------------------------------------------------------------------

_UNARY = """abs neg exp log log1p sqrt rsqrt sin cos tan tanh sigmoid relu reciprocal sign floor
ceil trunc round square logical_not isnan isinf isfinite acos asin atan sinh cosh asinh acosh
atanh expm1 log2 log10 exp2 erf erfc erfinv lgamma digamma logit nan_to_num arccos arcsin arctan
arcsinh arccosh arctanh clone detach contiguous float double half bfloat16 long int bool to
type_as zeros_like ones_like empty_like full_like rand_like randn_like clamp clamp_min clamp_max
clip gelu silu elu leaky_relu softplus relu6 hardtanh selu celu mish hardswish hardsigmoid
logsigmoid softsign tanhshrink threshold negative absolute positive frac angle conj real imag
tril triu requires_grad_ nan_to_num deg2rad rad2deg sgn signbit exp_ sin_ cos_ neg_ abs_
sqrt_ log_ tanh_ sigmoid_ relu_ clamp_ zero_ fill_ detach_ __neg__ __pos__ __abs__ __invert__"""
_BINARY = """add sub mul div true_divide pow maximum minimum fmax fmin where masked_fill eq ne lt
le gt ge logical_and logical_or logical_xor remainder fmod floor_divide rsub addcmul addcdiv
lerp atan2 arctan2 hypot xlogy float_power copysign bitwise_and bitwise_or bitwise_xor
subtract multiply divide isclose add_ sub_ mul_ div_ pow_ copy_ masked_fill_
lerp_ addcmul_ addcdiv_ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__
__rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __pow__ __rpow__ __and__ __or__
__xor__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __iadd__ __isub__ __imul__ __itruediv__"""
ELEMENTWISE = set(_UNARY.split()) | set(_BINARY.split())


@rule(*ELEMENTWISE)
def elementwise(fn, args, kwargs):
    operands = _operands(args, kwargs)
    nb = max(nb_of(x) for x in operands)
    rank = max(lrank(x) for x in operands)

    def convert(x):
        return pad_logical(lift(x, nb), nb, lrank(x), rank) if is_batched(x) else x

    target = args[0] if args else None
    inplace = getattr(fn, "__name__", "").endswith("_") and not fn.__name__.endswith("__")
    inplace = inplace or fn.__name__ in ("__iadd__", "__isub__", "__imul__", "__itruediv__")
    if inplace:
        if not is_batched(target) or convert(target) is not target._t:
            return NotImplemented  # the target must take the batch as it is: loop
        fn(*_map_args(args, kwargs, convert)[0], **_map_args(args, kwargs, convert)[1])
        return target
    new_args, new_kwargs = _map_args(args, kwargs, convert)
    return wrap_out(fn(*new_args, **new_kwargs), nb)


# -- dimension arguments ------------------------------------------------------------------------

def _shift(d, nb):
    if isinstance(d, (tuple, list)):
        return type(d)(_shift(x, nb) for x in d)
    return d + nb if d >= 0 else d


def _get(args, kwargs, pos, name, default):
    if pos < len(args):
        return args[pos]
    return kwargs.get(name, default)


def _put(args, kwargs, pos, name, value):
    if pos < len(args):
        args[pos] = value
    else:
        kwargs[name] = value


def dim_rule(positions, names, defaults, when_none=None, rank_extra=0, first_only=False):
    """A rule for ops whose dimension arguments sit at `positions` (or keyword `names`).
    `when_none`: what a missing/None dimension means ("all": every logical dimension,
    "flatten": the flattened logical tensor, "squeeze": every size-1 logical dimension)."""

    def batched(fn, args, kwargs):
        x = args[0]
        if not is_batched(x):
            return NotImplemented
        nb = _batch_nb(args, kwargs)
        args, kwargs = _map_args(args, kwargs, lambda t: expand_batch(t, nb))
        rank = lrank(x) + rank_extra
        take_first = False
        for pos, name, default in zip(positions, names, defaults):
            d = _get(args, kwargs, pos, name, default)
            if d is _REQUIRED:
                return NotImplemented
            if d is None:
                if when_none is None:
                    return NotImplemented
                d, args[0], take_first = _none_dim(when_none, args[0], nb, rank, first_only)
            else:
                d = _shift(d, nb)
            _put(args, kwargs, pos, name, d)
        out = fn(*args, **kwargs)
        return wrap_out(out[0] if take_first else out, nb)

    return batched


def _none_dim(mode, p, nb, rank, first_only):
    """(dim, physical tensor, take the values of a (values, indices) result)."""
    shape = tuple(p._data.shape)
    if mode == "all" and rank > 0:
        return tuple(range(nb, nb + rank)), p, False
    if mode == "squeeze":
        return tuple(i for i in range(nb, len(shape)) if shape[i] == 1), p, False
    return nb, F.reshape(p, shape[:nb] + (-1,)), first_only


def _register_dims(table, **options):
    for names, spec in table.items():
        rule(*names.split())(dim_rule(*spec, **options))


_DIMS = {
    "softmax log_softmax cumsum cumprod logcumsumexp cummax cummin":
        ((1,), ("dim",), (_REQUIRED,)),
    "select narrow index_select": ((1,), ("dim",), (_REQUIRED,)),
    "unbind": ((1,), ("dim",), (0,)),
    "split chunk tensor_split": ((2,), ("dim",), (0,)),
    "sort argsort mode": ((1,), ("dim",), (-1,)),
    "topk kthvalue diff": ((2,), ("dim",), (-1,)),
    "transpose swapaxes swapdims": ((1, 2), ("dim0", "dim1"), (_REQUIRED, _REQUIRED)),
    "movedim moveaxis": ((1, 2), ("source", "destination"), (_REQUIRED, _REQUIRED)),
    "flatten": ((1, 2), ("start_dim", "end_dim"), (0, -1)),
    "diagonal": ((2, 3), ("dim1", "dim2"), (0, 1)),
    "unflatten": ((1,), ("dim",), (_REQUIRED,)),
    "normalize": ((2,), ("dim",), (1,)),
    "logsumexp": ((1,), ("dim",), (_REQUIRED,)),
}
_register_dims(_DIMS)
_register_dims({"sum mean nansum nanmean amax amin var std all any count_nonzero var_mean "
                "std_mean": ((1,), ("dim",), (None,))}, when_none="all")
_register_dims({"norm vector_norm": ((2,), ("dim",), (None,))}, when_none="all")
_register_dims({"argmax argmin prod": ((1,), ("dim",), (None,))}, when_none="flatten")
_register_dims({"median nanmedian": ((1,), ("dim",), (None,))}, when_none="flatten",
               first_only=True)
_register_dims({"squeeze": ((1,), ("dim",), (None,))}, when_none="squeeze")
_register_dims({"unsqueeze": ((1,), ("dim",), (_REQUIRED,))}, rank_extra=1)
_MAXMIN = dim_rule((1,), ("dim",), (None,), when_none="flatten", first_only=True)


@rule("max", "min")
def max_min(fn, args, kwargs):
    if len(args) > 1 and _is_tensor_like(args[1]) or "other" in kwargs:
        return elementwise(fn, args, kwargs)  # torch.max(a, b) is maximum
    return _MAXMIN(fn, args, kwargs)


@rule("gather", "take_along_dim")
def gather(fn, args, kwargs):
    if fn.__name__ == "take_along_dim":
        return dim_rule((2,), ("dim",), (_REQUIRED,))(fn, args, kwargs)
    return dim_rule((1,), ("dim",), (_REQUIRED,))(fn, args, kwargs)


@rule("flip")
def flip(fn, args, kwargs):
    dims = args[1:] if len(args) > 2 or (len(args) == 2 and isinstance(args[1], int)) else None
    if dims is not None:
        args = (args[0], tuple(dims))
    return dim_rule((1,), ("dims",), (_REQUIRED,))(fn, args, kwargs)


@rule("cat", "concat", "concatenate", "stack", "hstack", "vstack")
def cat(fn, args, kwargs):
    name = fn.__name__
    if name in ("hstack", "vstack"):
        return NotImplemented
    tensors = args[0]
    nb = max(nb_of(t) for t in tensors)
    physical_list = [expand_batch(t, nb) for t in tensors]
    d = _get(args, kwargs, 1, "dim", 0)
    rest = {k: v for k, v in kwargs.items() if k != "dim"}
    return wrap_out(fn(physical_list, _shift(d, nb), **rest), nb)


# -- shapes -------------------------------------------------------------------------------------

def _sizes_arg(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


@rule("reshape", "view")
def reshape(fn, args, kwargs):
    x = args[0]
    if not is_batched(x) or kwargs or (args[1:] and not isinstance(args[1], (int, tuple, list))):
        return NotImplemented  # view(dtype)
    p = x._t
    shape = tuple(p._data.shape[:x._nb]) + _sizes_arg(args[1:])
    return BatchedTensor(F.reshape(p, shape), x._nb)


@rule("reshape_as", "view_as", "expand_as")
def reshape_as(fn, args, kwargs):
    if not is_batched(args[0]) or is_batched(args[1]):
        return NotImplemented
    name = "expand" if fn.__name__ == "expand_as" else "reshape"
    return RULES[name](fn, (args[0],) + tuple(args[1].shape), {})


@rule("expand", "broadcast_to")
def expand(fn, args, kwargs):
    x = args[0]
    if not is_batched(x) or kwargs:
        return NotImplemented
    sizes = _sizes_arg(args[1:])
    nb = x._nb
    p = pad_logical(x._t, nb, lrank(x), len(sizes))
    return BatchedTensor(F.expand(p, tuple(p._data.shape[:nb]) + sizes), nb)


@rule("repeat", "tile")
def repeat(fn, args, kwargs):
    x = args[0]
    if not is_batched(x) or kwargs:
        return NotImplemented
    reps = _sizes_arg(args[1:])
    nb = x._nb
    if fn.__name__ == "tile" and len(reps) < lrank(x):
        reps = (1,) * (lrank(x) - len(reps)) + reps
    p = pad_logical(x._t, nb, lrank(x), max(len(reps), lrank(x)))
    return BatchedTensor(fn(p, (1,) * nb + reps), nb)


@rule("permute")
def permute(fn, args, kwargs):
    x = args[0]
    if not is_batched(x):
        return NotImplemented
    dims = _sizes_arg(args[1:]) if args[1:] else tuple(kwargs["dims"])
    nb, rank = x._nb, lrank(x)
    full = tuple(range(nb)) + tuple((d % rank if rank else 0) + nb for d in dims)
    return BatchedTensor(F.permute(x._t, full), nb)


@rule("t")
def transpose_2d(fn, args, kwargs):
    x = args[0]
    if not is_batched(x):
        return NotImplemented
    if lrank(x) < 2:
        return x
    return BatchedTensor(F.transpose(x._t, -2, -1), x._nb)


# -- products -----------------------------------------------------------------------------------

@rule("matmul", "mm", "bmm", "mv", "dot", "inner", "__matmul__", "__rmatmul__", "vdot")
def matmul(fn, args, kwargs):
    a, b = args[:2]
    if fn.__name__ == "__rmatmul__":
        a, b = b, a
    if fn.__name__ == "inner" and lrank(b) != 1 or kwargs or len(args) > 2:
        return NotImplemented
    return _matmul(a, b)


def _matmul(a, b):
    nb = max(nb_of(a), nb_of(b))
    ra, rb = lrank(a), lrank(b)
    pa, pb = _operand(a, nb), _operand(b, nb)
    if is_batched(a) and ra == 1:
        pa = F.unsqueeze(pa, -2)
    if is_batched(b) and rb == 1:
        pb = F.unsqueeze(pb, -1)
    if is_batched(a) and is_batched(b) and min(ra, rb) >= 2 and ra != rb:
        pa = pad_logical(pa, nb, ra, max(ra, rb))
        pb = pad_logical(pb, nb, rb, max(ra, rb))
    out = F.matmul(pa, pb)
    if is_batched(b) and rb == 1:
        out = F.squeeze(out, -1)
    if is_batched(a) and ra == 1:
        out = F.squeeze(out, -2 if not (is_batched(b) and rb == 1) else -1)
    return wrap_out(out, nb)


def _operand(x, nb):
    return lift(x, nb) if is_batched(x) else physical(x)


@rule("outer", "ger")
def outer(fn, args, kwargs):
    a, b = args[:2]
    nb = _batch_nb(args, kwargs)
    pa = F.unsqueeze(lift(a, nb) if is_batched(a) else a, -1)
    pb = F.unsqueeze(lift(b, nb) if is_batched(b) else b, -2)
    return wrap_out(F.mul(pa, pb), nb)


@rule("linear")
def linear(fn, args, kwargs):
    x, weight = args[:2]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if not (is_batched(weight) or is_batched(bias)):
        return wrap_out(fn(physical(x), weight, bias), nb_of(x))
    if lrank(weight) >= 2:
        weight = (RULES["transpose"](F.transpose, (weight, -2, -1), {}) if is_batched(weight)
                  else F.transpose(weight, -2, -1))
    out = _matmul(x, weight)
    if bias is None:
        return out
    return elementwise(F.add, (out, bias), {})


@rule("mse_loss", "l1_loss")
def pointwise_loss(fn, args, kwargs):
    if len(args) > 2 or set(kwargs) - {"reduction"}:
        return NotImplemented
    reduction = kwargs.get("reduction", "mean")
    out = elementwise(fn, args, {"reduction": "none"})
    if reduction == "none":
        return out
    reduce = F.mean if reduction == "mean" else F.sum
    p, nb = out._t, out._nb
    dims = tuple(range(nb, p._data.ndim))
    return BatchedTensor(reduce(p, dims) if dims else p, nb)


@rule("einsum")
def einsum(fn, args, kwargs):
    """Each batched operand gets the batch labels in front of its subscripts, the output too
    (the implicit output spelled out first)."""
    equation, operands = args[0], args[1:]
    if not isinstance(equation, str) or kwargs:
        return NotImplemented
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    nb = max(nb_of(x) for x in operands)
    free = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
            if c not in equation][:nb]
    if len(free) < nb:
        return NotImplemented
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if "->" not in equation:
        rhs = _implicit_output(terms)
    batch = "".join(free)
    terms = [batch + t if is_batched(x) else t for t, x in zip(terms, operands)]
    physical_ops = [lift(x, nb) if is_batched(x) else x for x in operands]
    return wrap_out(fn(",".join(terms) + "->" + batch + rhs, *physical_ops), nb)


def _implicit_output(terms):
    counts = {}
    for t in terms:
        for c in t.replace("...", ""):
            counts[c] = counts.get(c, 0) + 1
    ell = "..." if any("..." in t for t in terms) else ""
    return ell + "".join(sorted(c for c, n in counts.items() if n == 1))


@rule("cross_entropy", "nll_loss")
def class_loss(fn, args, kwargs):
    """Per-sample class losses: the batch folded into the loss's own batch dimension with
    reduction='none', then reduced over the logical dimensions."""
    x, target = args[:2]
    extra = set(kwargs) - {"reduction"}
    if len(args) > 2 or extra or not is_batched(x) or lrank(x) not in (1, 2):
        return NotImplemented
    reduction = kwargs.get("reduction", "mean")
    if reduction not in ("mean", "sum", "none"):
        return NotImplemented
    nb = max(x._nb, nb_of(target))
    px, pt = expand_batch(x, nb), expand_batch(target, nb)
    classes = px._data.shape[-1]
    losses = fn(F.reshape(px, (-1, classes)), F.reshape(pt, (-1,)), reduction="none")
    losses = F.reshape(losses, tuple(pt._data.shape))
    dims = tuple(range(nb, losses._data.ndim))
    if reduction != "none" and dims:
        losses = (F.mean if reduction == "mean" else F.sum)(losses, dims)
    return wrap_out(losses, nb)


# -- indexing -----------------------------------------------------------------------------------

def _is_advanced(k):
    return _is_tensor_like(k) or isinstance(k, (list, bool))


def _physical_key(key, nb):
    """The key on the physical tensor, or None when the batch dimensions would move (the
    advanced indices are not adjacent, or one of them is batched)."""
    keys = key if isinstance(key, tuple) else (key,)
    if any(is_batched(k) for k in keys):
        return None
    advanced = [i for i, k in enumerate(keys) if _is_advanced(k)]
    if advanced and any(isinstance(k, int) for k in keys):
        advanced = [i for i, k in enumerate(keys) if _is_advanced(k) or isinstance(k, int)]
    if advanced and advanced != list(range(advanced[0], advanced[-1] + 1)):
        return None
    return (slice(None),) * nb + keys


@rule("__getitem__")
def getitem(fn, args, kwargs):
    x, key = args
    if not is_batched(x):
        return NotImplemented
    phys_key = _physical_key(key, x._nb)
    if phys_key is None:
        return NotImplemented
    return BatchedTensor(fn(x._t, phys_key), x._nb)


@rule("__setitem__")
def setitem(fn, args, kwargs):
    x, key, value = args
    if not is_batched(x):
        raise RuntimeError("vmap: a batched value cannot be written into a tensor that is "
                           "not batched (it has one value per batch entry); build the result "
                           "out of place, e.g. with torch.where or torch.stack")
    phys_key = _physical_key(key, x._nb)
    if phys_key is None:
        return NotImplemented
    if is_batched(value):
        target_rank = x._t[phys_key].dim() - x._nb
        value = pad_logical(lift(value, x._nb), x._nb, lrank(value), target_rank)
    fn(x._t, phys_key, value)
    return None


# -- names that are aliases of a ruled op -------------------------------------------------------

for _alias, _name in {"absolute": "abs", "negative": "neg", "clip": "clamp"}.items():
    RULES.setdefault(_alias, RULES[_name])
