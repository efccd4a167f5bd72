"""torch.func: function transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian,
vmap) over functions of Tensors, built on the eager graph.

A transform re-leafs the arguments it differentiates (an alias when the argument already
requires grad, so transforms nest and compose with ordinary autograd), runs the function with
grad enabled, and differentiates with create_graph=True; results are detached unless an
argument required grad on entry (then an outer transform or backward sees through them). An
output that does not depend on an argument gives zeros, as functorch's do.

Forward-mode transforms (jvp, jacfwd) give functorch's values through reverse mode: jvp by the
double-backward trick, jacfwd as the Jacobian (one VJP per output element). vmap runs the
function once on batched tensors (runtime.batching). Inside a vmap, `grad`/`vjp` differentiate
the batched tensors' physical values: an argument not batched is first expanded over the
open batch dimensions, so its gradient is per batch entry (per-sample gradients), as
functorch's are.
"""

import functools

from runtime import grad_mode
from runtime import batching
from runtime.ops._core import is_tensor


# -- argument handling --------------------------------------------------------------------------

def _argnums_tuple(argnums, n):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -n <= a < n:
            raise RuntimeError(f"argnums {a} is out of range for a function called with {n} "
                               f"positional arguments")
    return tuple(a % n for a in nums)


def _leaf(x):
    if batching.is_batched(x):
        return batching.BatchedTensor(_plain_leaf(x._t), x._nb)
    if is_tensor(x) and batching.open_sizes():
        return _leaf_per_entry(x)
    return _plain_leaf(x)


def _plain_leaf(x):
    if not is_tensor(x):
        raise RuntimeError(f"a differentiated argument must be a Tensor, got "
                           f"{type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"only floating point Tensors can be differentiated, got {x.dtype}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _leaf_per_entry(x):
    """A plain argument differentiated inside vmap: one copy per batch entry, so that its
    gradient is per entry too."""
    sizes = batching.open_sizes()
    leaf = _plain_leaf(x)
    with grad_mode.enable_grad():
        expanded = leaf.expand(sizes + tuple(leaf.shape))
    if not x.requires_grad:
        expanded = expanded.detach().requires_grad_()
    return batching.BatchedTensor(expanded, len(sizes))


def _keep_graph(args):
    """Whether results must stay differentiable: some argument requires grad on entry."""
    return any(_is_t(a) and a.requires_grad for a in _flatten(args))


def _is_t(x):
    return is_tensor(x) or batching.is_batched(x)


def _flatten(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _flatten(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _flatten(item)]
    return [tree]


def _map(fn, tree):
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(_map(fn, t) for t in tree))
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _finish(tree, keep):
    return tree if keep else _map(lambda t: t.detach() if _is_t(t) else t, tree)


def _grads(outputs, inputs, cotangents):
    """Cotangent-weighted gradients of `outputs` w.r.t. `inputs`, zeros where unused."""
    from runtime import autograd
    from runtime.creation import zeros_like

    outputs, cotangents = _physical_outputs(outputs, cotangents)
    nbs = [batching.nb_of(x) for x in inputs]
    inputs = [batching.physical(x) for x in inputs]
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        grads = [None] * len(inputs)
    else:
        outs, cots = zip(*pairs)
        grads = autograd.grad(outs, inputs, cots, retain_graph=True, create_graph=True,
                              allow_unused=True)
    grads = [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]
    return tuple(batching.wrap_out(g, nb) for g, nb in zip(grads, nbs))


def _physical_outputs(outputs, cotangents):
    """Batched outputs and cotangents as physical tensors (an implicit cotangent of a batched
    scalar is one per batch entry)."""
    from runtime.creation import ones_like

    outs, cots = [], []
    for o, c in zip(outputs, cotangents):
        if batching.is_batched(o):
            c = ones_like(o._t) if c is None else batching.expand_batch(c, o._nb)
            o = o._t
        elif batching.is_batched(c):
            c = batching.physical(c)
        outs.append(o)
        cots.append(c)
    return outs, cots


def _split_aux(result, has_aux, name):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{name}(f, has_aux=True): f must return a pair (output, aux)")
    return result


# -- grad / vjp ---------------------------------------------------------------------------------

def _differentiated_call(func, args, kwargs, argnums, has_aux, name):
    """Run func with the `argnums` arguments re-leafed (call under enable_grad): returns the
    argnums tuple, the arguments as passed, the output and the aux value."""
    nums = _argnums_tuple(argnums, len(args))
    args = list(args)
    for a in nums:
        args[a] = _map(_leaf, args[a])
    out, aux = _split_aux(func(*args, **kwargs), has_aux, name)
    return nums, args, out, aux


def grad_and_value(func, argnums=0, has_aux=False):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        keep = _keep_graph(args)
        with grad_mode.enable_grad():
            nums, args, out, aux = _differentiated_call(func, args, kwargs, argnums, has_aux,
                                                        "grad")
            _check_scalar(out)
            diff = [leaf for a in nums for leaf in _flatten(args[a])]
            flat = _grads((out,), diff, (None,))
        grads = tuple(_unflatten([args[a] for a in nums], list(flat)))
        grads = grads if isinstance(argnums, tuple) else grads[0]
        value = (out, aux) if has_aux else out
        return _finish(grads, keep), _finish(value, keep)

    return wrapper


def _unflatten(trees, leaves):
    return [_map(lambda _: leaves.pop(0), t) for t in trees]


def _check_scalar(out):
    if not _is_t(out):
        raise RuntimeError(f"grad(f)(*args): f must return a Tensor, got {type(out).__name__}")
    if out.dim() != 0:
        raise RuntimeError(f"grad(f)(*args): f must return a scalar (0-dim) Tensor, got one "
                           f"with {out.dim()} dimensions")


def grad(func, argnums=0, has_aux=False):
    pair = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = pair(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


def vjp(func, *primals, has_aux=False):
    keep = _keep_graph(primals)
    with grad_mode.enable_grad():
        leaves = _map(_leaf, primals)
        out, aux = _split_aux(func(*leaves), has_aux, "vjp")
    flat_in = _flatten(leaves)
    flat_out = _flatten(out)

    def vjp_fn(cotangents):
        flat_ct = _flatten(cotangents)
        if len(flat_ct) != len(flat_out):
            raise RuntimeError(f"vjp_fn: expected {len(flat_out)} cotangents (the structure of "
                               f"the output), got {len(flat_ct)}")
        for o, c in zip(flat_out, flat_ct):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"vjp_fn: a cotangent has shape {list(c.shape)}, but the "
                                   f"output has shape {list(o.shape)}")
        with grad_mode.enable_grad():
            flat = _grads(flat_out, flat_in, flat_ct)
        inner_keep = keep or _keep_graph(cotangents)
        return _finish(tuple(_unflatten(list(leaves), list(flat))), inner_keep)

    result = (_finish(out, keep), vjp_fn)
    return result + (_finish(aux, keep),) if has_aux else result


def _cotangent_seed(o):
    """Zeros shaped like output `o` that require grad (per batch entry inside vmap)."""
    from runtime.creation import zeros_like

    if batching.is_batched(o):
        return batching.BatchedTensor(zeros_like(o._t, requires_grad=True), o._nb)
    return zeros_like(o, requires_grad=True)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): primals and tangents must have the "
                           "same length")
    keep = _keep_graph(primals) or _keep_graph(tangents)
    with grad_mode.enable_grad():
        leaves = _map(_leaf, primals)
        out, aux = _split_aux(func(*leaves), has_aux, "jvp")
        flat_out = _flatten(out)
        u = [_cotangent_seed(o) for o in flat_out]
        vjps = _grads(flat_out, _flatten(leaves), u)
        flat_t = _flatten(tangents)
        jv = _grads(vjps, u, flat_t)
    tangent_out = _unflatten([out], list(jv))[0]
    result = (_finish(out, keep), _finish(tangent_out, keep))
    return result + (_finish(aux, keep),) if has_aux else result


# -- Jacobians ----------------------------------------------------------------------------------

def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        keep = _keep_graph(args)
        with grad_mode.enable_grad():
            nums, args, out, aux = _differentiated_call(func, args, kwargs, argnums, has_aux,
                                                        "jacrev")
            diff = [args[a] for a in nums]
            jac = _map(lambda o: _jacobian_rows(o, diff, isinstance(argnums, tuple)), out)
        result = _finish(jac, keep)
        return (result, _finish(aux, keep)) if has_aux else result

    return wrapper


def _jacobian_rows(out, diff, as_tuple):
    """d out / d diff[j] for each j, shaped out.shape + arg.shape (pytrees of args kept)."""
    from runtime.creation import zeros
    import runtime

    flat_in = _flatten(diff)
    rows = []
    flat_out = out.reshape(-1)
    for k in range(out.numel()):
        rows.append(_grads((flat_out[k],), flat_in, (None,)))
    per_input = []
    for j, x in enumerate(flat_in):
        shape = tuple(out.shape) + tuple(x.shape)
        col = [r[j] for r in rows]
        # runtime.stack and the methods dispatch batched rows inside vmap
        per_input.append(runtime.stack(col, 0).reshape(shape) if col else
                         zeros(shape, dtype=x.dtype))
    trees = _unflatten(diff, per_input)
    return tuple(trees) if as_tuple else trees[0]


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian, with jacfwd's result layout (values through reverse mode)."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap ---------------------------------------------------------------------------------------

def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorised map: `func` runs once on batched tensors (runtime.batching: rules per
    op, a per-entry loop for ops without one). `randomness` as in PyTorch ("error" refuses
    random ops, "same" draws once for all entries, "different" once per entry).
    `chunk_size` is accepted and ignored."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"vmap: randomness must be 'error', 'different' or 'same', got "
                           f"{randomness!r}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _in_dims_per_arg(in_dims, args)
        size = _batch_size(args, dims)

        def call():
            flat = [a if d is None else batching.to_level(a, d, size)
                    for a, d in zip(_flatten(args), _flatten(dims))]
            body = batching.dispatching_form(func)
            out = body(*_unflatten(list(args), flat), **kwargs)
            return _unbatch_results(out, out_dims, size)

        return batching.run_level(size, call, randomness)

    return wrapper


def _in_dims_per_arg(in_dims, args):
    if isinstance(in_dims, (int, type(None))):
        return [_map(lambda _: in_dims, a) for a in args]
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap: in_dims must be an int, None, or a tuple with one entry per "
                         f"positional argument ({len(args)}), got {in_dims!r}")
    return [_broadcast_dims(d, a) for d, a in zip(in_dims, args)]


def _broadcast_dims(d, arg):
    if isinstance(d, (int, type(None))):
        return _map(lambda _: d, arg)
    if isinstance(d, (tuple, list)) and isinstance(arg, (tuple, list)) and len(d) == len(arg):
        return type(arg)(_broadcast_dims(x, a) for x, a in zip(d, arg))
    raise ValueError(f"vmap: in_dims {d!r} does not match the argument's structure")


def _batch_size(args, dims):
    sizes = set()
    for a, d in zip(_flatten(args), _flatten(dims)):
        if d is None:
            continue
        if not is_tensor(a) and not batching.is_batched(a):
            raise ValueError(f"vmap: in_dims {d} given for an argument of type "
                             f"{type(a).__name__}; only Tensors can be mapped over")
        if not -a.dim() <= d < max(a.dim(), 1) or a.dim() == 0:
            raise ValueError(f"vmap: in_dim {d} is out of range for a Tensor with {a.dim()} "
                             f"dimensions")
        sizes.add(a.shape[d])
    if not sizes:
        raise ValueError("vmap: at least one argument must be a Tensor mapped over (in_dims "
                         "not None)")
    if len(sizes) > 1:
        raise ValueError(f"vmap: the mapped dimensions have different sizes {sorted(sizes)}")
    return sizes.pop()


def _unbatch_results(out, out_dims, size):
    flat = _flatten(out)
    if isinstance(out_dims, int):
        dims = [out_dims] * len(flat)
    else:
        dims = _flatten(_broadcast_dims(out_dims, out))
    return _unflatten([out], [batching.from_level(o, d, size)
                              for o, d in zip(flat, dims)])[0]


def functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, *, tie_weights=True,
                    strict=False):
    """Call `module` with some parameters/buffers replaced by the given tensors."""
    dicts = parameter_and_buffer_dicts
    merged = {}
    for d in (dicts if isinstance(dicts, (tuple, list)) else (dicts,)):
        merged.update(d)
    saved = {}
    try:
        for name, value in merged.items():
            owner, attr = _owner(module, name)
            saved[name] = (owner, attr, owner.__dict__.get(attr, getattr(owner, attr)))
            _set(owner, attr, value)
        args = args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, value in saved.values():
            _set(owner, attr, value)


def _owner(module, name):
    *path, attr = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, attr


def _set(owner, attr, value):
    params = getattr(owner, "_parameters", None)
    if params is not None and attr in params:
        params[attr] = value
    else:
        object.__setattr__(owner, attr, value)
