"""The bridge: a compiled function called with eager Tensors is one node of the eager graph.

`call(program, args)` runs a compiled program (an @adcompile function, a grad/value_and_grad
of one, a jvp or pullback program) on the numpy memory of the Tensors among `args` — no copy;
0-d tensors travel as numpy scalars of their dtype — and wraps what it returns as Tensors.
When recording is on and an argument requires grad, the outputs share one node of class
`CompiledFunctionBackward`, a custom `autograd.Function` context (runtime/custom_function.py),
so hooks, retain_graph, version checks, freeing and make_dot are the engine's own:

- a float-scalar result (a loss) runs the program's vjp with the cotangent 1 in the forward
  call, once: primal and reverse sweep together, the gradients kept on the node; backward
  scales them by the incoming cotangent (the primal is never run again);
- any other result runs the augmented forward half of the split vjp program (ad/split.py),
  which returns the result and the residuals its reverse half needs (loop tapes handed over as
  arrays, tapes of shadow arrays as their layout); backward runs the reverse half on them
  with the incoming cotangents. Where the program does not split (ad/split.py's guard: a
  reverse half that may write into a residual; no test corpus program) the forward call runs
  the primal and backward the pullback program, which computes the primal again;
- with create_graph, backward calls the bridge again on the pullback program with the saved
  tensors and the cotangents as Tensors, so the gradient gets a compiled node (split as any
  other, except a pullback whose split would rebuild shadow memory: its halves are
  third-order-sized programs, so it runs unsplit) whose backward is the reverse half of the
  pullback's vjp, or that pullback's pullback: derivatives of any order, all compiled. That backward computes
  the primal again, by design: a differentiable backward must be a function of the inputs, and
  reusing the residuals would make them differentiable outputs of the forward node, whose
  second-order pass would run the primal anyway (docs/architecture.md, "The bridge").

Invariant: every Tensor argument is an edge of the node (in argument order); a tensor that
requires grad inside a tuple argument, or one the program writes into, is refused with an
error rather than detached.
"""

import numpy as np

from adcompile import api
from adcompile.ad.forward import jvp_function
from adcompile.ad.reverse import vjp_function
from adcompile.ir import types as T
from adcompile.ir.nodes import Op, Value, walk
from runtime import batching, grad_mode
from runtime.autograd_meta import any_requires_grad
from runtime.custom_function import Function, _connect, _new_ctx
from runtime.tensor import Tensor

_DTYPES = ("float64", "float32", "int64", "bool")


def has_tensor(args):
    for a in args:
        if isinstance(a, Tensor) or type(a) is tuple and has_tensor(a):
            return True
    return False


# -- programs ---------------------------------------------------------------------------------

class Derived(api._Transformed):
    """A program derived from a compiled callable `cf` (a CompiledFunction, a grad, or another
    Derived): its pullback ((args..., out_bar leaves...) -> cotangents of the active args),
    its vjp ((args..., out_bar leaves...) -> (result, cotangents)) or its jvp ((args...,
    tangents of the active args...) -> (result, tangent)). The output cotangent is taken one
    leaf per parameter, so each can be differentiated again."""

    def __init__(self, cf, active, mode):
        self.cf = cf
        self.argnums = active  # (for the IR cache key and names, as _Transformed's)
        self.with_value = mode
        self.mode = mode
        self.fn = cf.fn
        self.backend, self.options, self.verify = cf.backend, cf.options, cf.verify
        self._cache = cf._cache.setdefault(("derived", mode, active), {})
        self._entry = None
        self.n = len(active)

    def signature(self, args):
        extra = tuple(T.of_value(a) for a in args[self.n:])
        return self.cf.signature(args[: self.n]) + extra

    def specialize(self, *args):
        key = (self.mode, self.signature(args))
        spec = self._cache.get(key)
        if spec is None:
            primals = args[: self.n]
            api._check_aliasing(self.cf, primals, self.argnums)
            spec = self._cache[key] = api._specialization(
                self, key, lambda: self._build(self.cf.specialize(*primals).ir),
                _user_arity(self))
        return spec

    def _build(self, ir):
        if self.mode == "jvp":
            return jvp_function(ir, self.argnums)
        if self.mode in ("forward", "reverse"):
            forward, reverse = vjp_function(ir, self.argnums, "split")
            return forward if self.mode == "forward" else _spread_cotangent(reverse)
        return _spread_cotangent(vjp_function(ir, self.argnums, self.mode))

    def __call__(self, *args):
        entry = self._entry
        if entry is not None:
            result = entry(*args)
            if result is not api._MISS:
                return result
        spec = self.specialize(*args)
        result = spec.callable(*args)
        fast = spec.native is not None and not api._written_arrays(spec)
        self._entry = spec.native.last.lasting_entry if fast else None  # (see _Transformed.__call__)
        return result


def derived(cf, active, mode):
    """The Derived program of `cf`, one object per (mode, active): it keeps its last native
    entry point, so later calls skip the signature and the cache lookup."""
    key = ("derived object", mode, active)
    program = cf._cache.get(key)
    if program is None:
        program = cf._cache[key] = Derived(cf, active, mode)
    return program


class _Facts:
    """What the bridge needs to know about one signature of a program, worked out once: its
    result type, the Tensor-taking parameters it writes into, and (per set of active
    arguments) whether its vjp program splits."""

    def __init__(self, program, values):
        spec = program.specialize(*values)
        self.program, self.values = program, values
        self.out_type = spec.ir.body.terminator.operands[0].type
        self.written = api._written_arrays(spec) if isinstance(program, api.CompiledFunction) \
            else ()
        self.splits = {}

    def splittable(self, active):
        known = self.splits.get(active)
        if known is None:
            ir = self.program.specialize(*self.values).ir
            halves = vjp_function(ir, active, "split")
            known = self.splits[active] = halves is not None and not (
                _is_pullback(self.program) and _rebuilds_shadows(halves[1]))
        return known


def _is_pullback(program):
    return isinstance(program, Derived) and program.mode == "pullback"


def _rebuilds_shadows(reverse):
    """Whether a reverse half rebuilds shadow memory from the forward's layout table. A
    pullback (the create_graph path) whose vjp needs that runs unsplit: its backward computes
    the primal again anyway, and the split halves of a pullback that keeps shadow arrays on
    tapes are third-order-sized programs (tens of seconds of LLVM for a small RNN's Hessian)."""
    return any(op.prim == "strided" for op in walk(reverse.body))


def _facts(program, values):
    key = ("bridge facts", program.signature(values))
    facts = program._cache.get(key)
    if facts is None:
        facts = program._cache[key] = _Facts(program, values)
    return facts


def _user_arity(cf):
    """How many leading parameters are the user's (the entry point checks them exactly)."""
    return cf.fn.__code__.co_argcount


def _spread_cotangent(fn):
    """The program with its tuple-typed last parameter (out_bar) replaced by one parameter per
    leaf, tupled again at the top of the body (the simplifier folds the tuple_gets away)."""
    out_bar = fn.params[-1]
    if not isinstance(out_bar.type, T.Tuple):
        return fn
    leaves, ops = [], []
    _retuple(out_bar, leaves, ops)
    fn.params[-1:] = leaves
    fn.body.ops[0:0] = ops
    return fn


def _retuple(value, leaves, ops):
    items = []
    for k, t in enumerate(value.type.items):
        leaf = Value(t, f"{value.name}_{k}")
        if isinstance(t, T.Tuple):
            _retuple(leaf, leaves, ops)
        else:
            leaves.append(leaf)
        items.append(leaf)
    op = Op("tuple", items, [value.type])
    op.results = [value]
    value.owner = op
    ops.append(op)


# -- arguments and results --------------------------------------------------------------------

def _param_name(program, i):
    code = program.fn.__code__
    names = code.co_varnames[: code.co_argcount]
    return repr(names[i]) if i < len(names) else f"{i} (a cotangent or tangent)"


def _value(program, i, a, in_tuple=False):
    """Argument i as the compiled program takes it: a tensor's numpy memory (a numpy scalar
    for 0-d), checked; tuples item by item (their tensors cannot be differentiated)."""
    if type(a) is tuple:
        return tuple(_value(program, i, item, True) for item in a) if has_tensor(a) else a
    if not isinstance(a, Tensor):
        return a
    if a._dtype.name not in _DTYPES:
        raise TypeError(f"{program.fn.__name__}(): parameter {_param_name(program, i)} got a "
                        f"Tensor of dtype {a._dtype}; compiled functions take tensors of "
                        f"torch.float64, torch.float32, torch.int64 or torch.bool")
    if in_tuple and a.requires_grad and grad_mode._state.enabled:
        raise TypeError(f"{program.fn.__name__}(): parameter {_param_name(program, i)} holds a "
                        f"tensor that requires grad inside a tuple; pass it as an argument of "
                        f"its own so the compiled node can differentiate it")
    data = a._data
    return data[()] if data.ndim == 0 else data


def _flatten(out, leaves):
    """Leaves of a (nested) tuple result in order; the structure to rebuild it."""
    if type(out) is tuple:
        return tuple(_flatten(o, leaves) for o in out)
    leaves.append(out)
    return None


def _rebuild(structure, leaves):
    if structure is None:
        return next(leaves)
    return tuple(_rebuild(s, leaves) for s in structure)


def _tensor(v):
    if isinstance(v, np.ndarray):
        return Tensor._wrap(v)
    return Tensor._wrap(np.asarray(v))  # numpy scalars keep their dtype; a float is float64


def _outputs(result):
    leaves = []
    structure = _flatten(result, leaves)
    return structure, [_tensor(v) for v in leaves]


def _bump_written(program, facts, args, recording):
    """A program writing into a tensor argument: its version counter moves (so saved copies of
    it are checked), and one that requires grad while recording is refused."""
    written = [j for j in facts.written if j < len(args) and isinstance(args[j], Tensor)]
    for j in written:
        if recording and args[j].requires_grad:
            raise RuntimeError(f"{program.fn.__name__}() writes into its argument "
                               f"{_param_name(program, j)}, a tensor that requires grad; a "
                               f"compiled node cannot modify a differentiated input in place: "
                               f"pass a clone, or return the new values")
    return written


# -- the node ---------------------------------------------------------------------------------

def call(program, args):
    """Run a compiled program on arguments that include Tensors; see the module docstring.
    Inside `torch.func.vmap` (batched tensors among the arguments) the node runs once per
    entry of the batch, vmap's fallback for an op without a batching rule."""
    if batching.open_sizes() and batching.any_batched(args, {}):
        return batching.dispatch(program.fn.__name__, lambda *a: call(program, a), args, {})
    recording = any_requires_grad([a for a in args if isinstance(a, Tensor)])
    values = tuple(_value(program, i, a) for i, a in enumerate(args))
    facts = _facts(program, values)
    written = _bump_written(program, facts, args, recording)
    if not recording:
        result = program(*values)
        for j in written:
            args[j]._vc[0] += 1
        structure, outs = _outputs(result)
        return _rebuild(structure, iter(outs))
    return _record(program, args, values, facts)


def _record(program, args, values, facts):
    ctx = _new_ctx(CompiledFunction, args)
    active = tuple(isinstance(a, Tensor) and a.requires_grad and a._dtype.is_floating_point
                   for a in args)
    out_type = facts.out_type
    grads, residuals = (), None
    if isinstance(out_type, T.Scalar) and out_type.is_float:
        result, grads = derived(program, active, "vjp")(*values, _one(out_type))
    elif facts.splittable(active):
        result, residuals = derived(program, active, "forward")(*values)
    else:
        result = program(*values)
    if type(program) is api._Transformed and (grads or residuals is not None):
        result = program._finish(result)  # (grad / value_and_grad's Python-level shape)
    structure, outs = _outputs(result)
    # an output the reverse sweep reads (a residual) is saved too: changing it in place
    # before backward is then the usual version-counter error
    read = [o for o in outs if residuals and _shares(o._data, residuals)]
    ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)],
                          *[_tensor(g) for g in grads], *read)
    _connect(ctx, args, outs)
    # the bridge's own state rides on the saved values, so backward frees it with them
    ctx._args += ((program, active, values, out_type, residuals),)
    return _rebuild(structure, iter(outs))


def _shares(data, residuals):
    return any(isinstance(r, np.ndarray) and np.may_share_memory(data, r) for r in residuals)


def _one(out_type):
    return 1.0 if out_type.weak else T.NUMPY[out_type.dtype].type(1.0)


def _backward(ctx, *cotangents):
    *saved, (program, active, values, out_type, residuals) = ctx.saved_tensors  # (checks)
    positions = ctx._tensor_positions
    tensors = saved[: len(positions)]
    grads = saved[len(positions):] if residuals is None else ()
    if grad_mode.is_grad_enabled():  # create_graph: the backward is a compiled node again
        args = list(values)
        for i, t in zip(positions, tensors):
            args[i] = t
        out = call(derived(program, active, "pullback"), (*args, *cotangents))
    elif grads:
        c = cotangents[0]._data[()]
        out = tuple(_scaled(g._data, c) for g in grads)
        out = out[0] if len(out) == 1 else out  # (as the pullback returns them)
    elif residuals is not None:
        out = derived(program, active, "reverse")(*values, *residuals,
                                                  *_cotangent_leaves(cotangents, out_type))
    else:
        out = derived(program, active, "pullback")(*values, *_cotangent_leaves(cotangents,
                                                                               out_type))
    return _per_argument(out, active)


def _scaled(g, c):
    if c == 1.0:
        return g
    return (g * c).astype(g.dtype, copy=False)


def _cotangent_leaves(cotangents, out_type):
    """The incoming gradients as the pullback's out_bar leaves: a numpy scalar (or Python
    number, for a Python-number result) where the result was one, the array otherwise."""
    types = []
    _leaf_types(out_type, types)
    return tuple(_leaf(c._data, t) for c, t in zip(cotangents, types))


def _leaf_types(t, types):
    if isinstance(t, T.Tuple):
        for item in t.items:
            _leaf_types(item, types)
    else:
        types.append(t)


def _leaf(data, t):
    if isinstance(t, T.Array):
        return data
    value = data[()]
    return value.item() if t.weak else value


def _per_argument(out, active):
    """The pullback's cotangents (one value, or a tuple, for the active arguments) as one
    entry per argument."""
    n = sum(active)
    it = iter((out,) if n == 1 else out)
    return tuple(next(it) if on else None for on in active)


class CompiledFunction(Function):
    """The autograd Function behind every compiled node (its context class is named
    `CompiledFunctionBackward`, as torch.compile names its node); `call` builds the context
    directly rather than through apply()."""

    backward = staticmethod(_backward)


def jvp(f, primals, tangents):
    """api.jvp on arguments that include Tensors: (f(*primals), J·tangents) as Tensors, a
    compiled node when recording (its backward is the jvp program's pullback)."""
    primals, tangents = tuple(primals), tuple(tangents)
    active = tuple(t is not None for t in tangents)
    program = derived(api._as_compiled(f), active, "jvp")
    return call(program, primals + tuple(t for t in tangents if t is not None))


def vjp(f, primals):
    """api.vjp on arguments that include Tensors: (f(*primals), pullback) as Tensors; the
    pullback is a compiled node too (differentiable when its inputs require grad)."""
    cf = api._as_compiled(f)
    values = tuple(_value(cf, i, a) for i, a in enumerate(primals))
    active = tuple(api._differentiable_value(v) for v in values)
    program = derived(cf, active, "pullback")
    out = call(cf, primals)

    def pullback(cotangent):
        leaves = []
        _flatten(cotangent, leaves)
        return _per_argument(call(program, (*primals, *leaves)), active)

    return out, pullback
