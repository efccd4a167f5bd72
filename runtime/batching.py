"""torch.func.vmap's batching: BatchedTensor, the batching rules, and the fallback loop.

Inside `vmap(f)`, each mapped argument becomes a `BatchedTensor`: a plain *physical* Tensor
whose first `nb` dimensions are the batch dimensions of the open vmap levels (outermost
first) and whose other dimensions are the *logical* tensor that `f` sees. Every level's
batch dimension sits at the front, so an op on batched operands is one call on the physical
tensors with its dimension arguments shifted by `nb` (a batching rule, keyed by the op's
name in `RULES`). Ops without a rule run once per batch entry and their results are stacked
(`_loop`, the documented fallback: correct, slower).

Invariants:
- a BatchedTensor at level k is batched at every level 1..k (an argument unmapped at an
  outer level is expanded when an inner level maps it), so aligning two operands only ever
  inserts size-1 dimensions after the shorter one's batch dimensions;
- the autograd graph only ever sees physical Tensors (BatchedTensor is a wrapper, not a
  Tensor subclass; `isinstance(b, Tensor)` holds through `__class__`), so saved tensors,
  derivative rules and the engine are unchanged; `grad` inside `vmap` differentiates the
  physical tensors (runtime.func);
- dispatch: BatchedTensor's methods and operators go through `dispatch`; while a vmap is
  running, the public functions of the torch namespaces (`NAMESPACES`) and the methods of
  Tensor are swapped for wrappers that dispatch when an argument is batched (restored when
  the outermost vmap returns), so `torch.sin(b)` and `w @ b` batch too.
"""

import collections
import functools
import types

from runtime import ops as F
from runtime.ops.indexing import movedim
from runtime.tensor import Size, Tensor

_sizes = []  # batch size of each open vmap level, outermost first
NAMESPACES = []  # modules whose public functions dispatch while a vmap runs
_PASS = {"vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
         "functional_call", "is_tensor", "is_grad_enabled", "set_grad_enabled",
         "get_default_dtype", "manual_seed", "is_floating_point"}
_TENSOR_PASS = {"__init__", "__new__", "__repr__", "__str__", "__getattribute__",
                "__setattr__", "__class__", "__reduce_ex__", "__hash__", "__len__",
                "__iter__", "__bool__", "__format__", "__deepcopy__", "_wrap", "_init_from",
                "_new_like", "__getattr__", "__dir__", "__sizeof__", "__init_subclass__",
                "__subclasshook__", "__reduce__", "__eq__", "__ne__"}


class BatchedTensor:
    """A logical tensor batched over the open vmap levels (see the module docstring)."""

    __slots__ = ("_t", "_nb")

    def __init__(self, physical, nb):
        self._t = physical
        self._nb = nb

    @property
    def __class__(self):
        return Tensor

    # -- logical metadata ---------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._t._data.shape[self._nb:])

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self):
        return self._t._data.ndim - self._nb

    ndimension = dim

    @property
    def ndim(self):
        return self.dim()

    def numel(self):
        return self.shape.numel()

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        return iter(dispatch("unbind", original_methods()["unbind"], (self, 0), {}))

    @property
    def dtype(self):
        return self._t.dtype

    @property
    def device(self):
        return self._t.device

    @property
    def requires_grad(self):
        return self._t.requires_grad

    @property
    def is_leaf(self):
        return self._t.is_leaf

    @property
    def grad_fn(self):
        return self._t.grad_fn

    @property
    def grad(self):
        g = self._t._grad
        return None if g is None else BatchedTensor(g, self._nb)

    @property
    def data(self):
        return BatchedTensor(self._t.data, self._nb)

    @property
    def T(self):
        dims = tuple(range(self.dim() - 1, -1, -1))
        return dispatch("permute", original_methods()["permute"], (self,) + dims, {})

    @property
    def mT(self):
        return dispatch("transpose", original_methods()["transpose"], (self, -2, -1), {})

    def is_floating_point(self):
        return self._t.is_floating_point()

    # -- what a batched value cannot do ---------------------------------------------------------
    def _data_dependent(self, *args, **kwargs):
        raise RuntimeError("vmap: the function reads a batched tensor's value as a Python "
                           "value (item(), tolist(), bool(), float() or control flow on a "
                           "tensor); that value differs across the batch. Use torch.where "
                           "or keep the value a tensor instead")

    item = tolist = __bool__ = __float__ = __int__ = numpy = _data_dependent

    def __repr__(self):
        return f"BatchedTensor(lvl={self._nb}, bdim=0, value=\n{self._t!r})"

    def __hash__(self):
        return id(self)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        method = original_methods().get(name)
        if method is None or not callable(method):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        return functools.partial(_method, name, method, self)


def _method(name, method, self, *args, **kwargs):
    return dispatch(name, method, (self,) + args, kwargs)


def _operator(name):
    def op(self, *args):
        return dispatch(name, original_methods()[name], (self,) + args, {})

    op.__name__ = name
    return op


_methods = {}


def original_methods():
    """Tensor's methods as installed (read once, before any vmap patches them)."""
    if not _methods:
        _methods.update({name: value for klass in reversed(Tensor.__mro__)
                         for name, value in vars(klass).items()
                         if callable(value) and not isinstance(value, type)})
    return _methods


_OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__",
              "__pos__", "__abs__", "__invert__", "__and__", "__or__", "__xor__", "__eq__",
              "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__",
              "__iadd__", "__isub__", "__imul__", "__itruediv__"]
for _name in _OPERATORS:
    setattr(BatchedTensor, _name, _operator(_name))


# -- physical views of operands --------------------------------------------------------------

def is_batched(x):
    return type(x) is BatchedTensor


def _is_tensor_like(x):
    return type(x) is BatchedTensor or isinstance(x, Tensor)


def nb_of(x):
    return x._nb if type(x) is BatchedTensor else 0


def physical(x):
    return x._t if type(x) is BatchedTensor else x


def lrank(x):
    return x.dim()


def lift(x, nb):
    """x's physical tensor with `nb` batch dimensions (size-1 ones inserted as needed)."""
    p = physical(x)
    k = nb_of(x)
    if k == nb:
        return p
    shape = tuple(p._data.shape)
    return F.reshape(p, shape[:k] + (1,) * (nb - k) + shape[k:])


def expand_batch(x, nb):
    """x's physical tensor with the batch dimensions of the `nb` innermost-open levels at
    their full sizes (for ops that do not broadcast)."""
    p = lift(x, nb)
    sizes = tuple(_sizes[:nb])
    shape = tuple(p._data.shape)
    if shape[:nb] == sizes:
        return p
    return F.expand(p, sizes + shape[nb:])


def pad_logical(p, nb, have, want):
    """Insert size-1 logical dimensions in front of a physical tensor's logical part."""
    if have == want:
        return p
    shape = tuple(p._data.shape)
    return F.reshape(p, shape[:nb] + (1,) * (want - have) + shape[nb:])


def wrap_out(out, nb):
    if nb == 0:
        return out
    if isinstance(out, Tensor) and type(out) is not BatchedTensor:
        return BatchedTensor(out, nb)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)(*(wrap_out(o, nb) for o in out))
    if isinstance(out, (tuple, list)):
        return type(out)(wrap_out(o, nb) for o in out)
    return out


def _operands(args, kwargs):
    """The tensor operands of a call, one level into lists and tuples (cat, stack ...)."""
    found = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (tuple, list)):
            found.extend(x for x in a if _is_tensor_like(x))
        elif _is_tensor_like(a):
            found.append(a)
    return found


def any_batched(args, kwargs):
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if isinstance(a, (tuple, list)) and any(type(x) is BatchedTensor for x in a):
            return True
    return any(type(v) is BatchedTensor for v in kwargs.values())


# -- dispatch -----------------------------------------------------------------------------------

RULES = {}  # op name -> rule(fn, args, kwargs) giving the batched result, or NotImplemented
FALLBACKS = collections.Counter()  # op name -> calls that took the loop (to see what to rule)


def dispatch(name, fn, args, kwargs):
    rule = RULES.get(name)
    if rule is not None:
        out = rule(fn, args, kwargs)
        if out is not NotImplemented:
            return out
    return _loop(name, fn, args, kwargs)


def _loop(name, fn, args, kwargs):
    """The fallback: the op once per entry of the outermost batch dimension, then stacked."""
    FALLBACKS[name] += 1
    size = max(physical(x)._data.shape[0] for x in _operands(args, kwargs) if is_batched(x))
    results = [_call_entry(name, fn, args, kwargs, b) for b in range(size)]
    if name.endswith("_") and not name.endswith("__") and args and is_batched(args[0]):
        return args[0]  # an in-place method wrote through the entries' views
    return _stack_entries(results)


def _call_entry(name, fn, args, kwargs, b):
    pick = functools.partial(_entry, b=b)
    sliced = [type(a)(pick(x) for x in a) if isinstance(a, (tuple, list)) else pick(a)
              for a in args]
    sliced_kw = {k: pick(v) for k, v in kwargs.items()}
    if any_batched(sliced, sliced_kw):
        return dispatch(name, fn, tuple(sliced), sliced_kw)
    return fn(*sliced, **sliced_kw)


def _entry(x, b):
    if not is_batched(x):
        return x
    p = F.select(x._t, 0, b)
    return p if x._nb == 1 else BatchedTensor(p, x._nb - 1)


def _stack_entries(results):
    first = results[0]
    if _is_tensor_like(first):
        nb = nb_of(first)
        return wrap_out(F.stack([expand_batch(r, nb) for r in results], 0), nb + 1)
    if isinstance(first, (tuple, list)):
        columns = [_stack_entries([r[i] for r in results]) for i in range(len(first))]
        return type(first)(*columns) if hasattr(first, "_fields") else type(first)(columns)
    if any(r != first for r in results):
        raise RuntimeError("vmap: an operation returned a Python value that differs across "
                           "the batch; return a tensor instead")
    return first


# -- patching the namespaces while a vmap runs -------------------------------------------------

_saved = []  # (owner, name, original) while patched


RANDOM_FACTORIES = {"rand", "randn", "randint", "randperm"}
RANDOM_LIKE = {"rand_like", "randn_like", "randint_like", "dropout", "uniform_", "normal_"}
_randomness = []  # the randomness mode of each open level


def _dispatching(name, fn):
    if name in RANDOM_FACTORIES or name in RANDOM_LIKE:
        return _random_dispatching(name, fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if any_batched(args, kwargs):
            return dispatch(name, fn, args, kwargs)
        return fn(*args, **kwargs)

    return call


def _random_dispatching(name, fn):
    """Random ops under vmap's `randomness`: "error" refuses them, "same" draws one value
    for every batch entry, "different" draws one per entry."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        mode = _randomness[-1]
        if mode == "error":
            raise RuntimeError("vmap: a random operation was called inside vmap with "
                               "randomness='error'; pass randomness='same' or 'different' "
                               "to vmap, or draw the random values outside it")
        batched = any_batched(args, kwargs)
        if name in RANDOM_FACTORIES:
            return fn(*args, **kwargs) if mode == "same" else _per_entry(fn, args, kwargs)
        if mode == "different" or not batched:
            return dispatch(name, fn, args, kwargs) if batched else fn(*args, **kwargs)
        return _same_for_all(fn, args, kwargs)

    return call


def _per_entry(fn, args, kwargs):
    """A random factory drawn once per entry of every open level."""
    sizes = tuple(_sizes)
    draws = [fn(*args, **kwargs) for _ in range(int(functools.reduce(
        lambda a, b: a * b, sizes, 1)))]
    stacked = F.stack(draws, 0) if draws else fn(*args, **kwargs)
    shape = tuple(stacked._data.shape[1:])
    return BatchedTensor(F.reshape(stacked, sizes + shape), len(sizes))


def _same_for_all(fn, args, kwargs):
    """rand_like(b) / dropout(b) with randomness='same': one draw of the logical shape (the
    op applied to entry 0's values), the same for every entry."""
    x = args[0]
    if fn.__name__ in ("uniform_", "normal_"):
        return dispatch(fn.__name__, fn, args, kwargs)  # in place: per entry
    if fn.__name__ == "dropout":  # one mask (scaled) for every entry
        from runtime.creation import ones_like

        mask = fn(ones_like(_entry_zero(x)), *args[1:], **kwargs)
        return dispatch("mul", F.mul, (x, mask), {})
    logical = fn(_entry_zero(x), *args[1:], **kwargs)
    nb = x._nb
    shape = tuple(logical._data.shape)
    return BatchedTensor(F.expand(F.reshape(logical, (1,) * nb + shape),
                                  tuple(_sizes[:nb]) + shape), nb)


def _entry_zero(x):
    p = x._t
    for _ in range(x._nb):
        p = F.select(p, 0, 0)
    return p


_plan = []  # (owner, name, original, dispatching wrapper), built on the first vmap
_wrapper_of = {}  # id(original) -> its dispatching wrapper, for the functions in _plan


def patch():
    if not _plan or any(vars(owner).get(name) is not original
                        for owner, name, original, _ in _plan):
        _build_plan()
    for owner, name, original, wrapper in _plan:
        setattr(owner, name, wrapper)
    _saved.extend((owner, name, original) for owner, name, original, _ in _plan)


def _build_plan():
    """What to swap: the namespaces' public runtime functions and Tensor's methods (rebuilt
    when one of them was rebound since)."""
    original_methods()
    _plan.clear()
    _wrapper_of.clear()
    for module in NAMESPACES:
        for name, value in list(vars(module).items()):
            if (isinstance(value, types.FunctionType) and not name.startswith("_")
                    and name not in _PASS and value.__module__.startswith("runtime")):
                _plan.append((module, name, value, _dispatching(name, value)))
    for name, value in list(vars(Tensor).items()):
        if isinstance(value, types.FunctionType) and name not in _TENSOR_PASS:
            _plan.append((Tensor, name, value, _dispatching(name, value)))
    _wrapper_of.update((id(original), wrapper) for _, _, original, wrapper in _plan)


def dispatching_form(fn):
    """What stands for `fn` while a vmap runs: a namespace function or Tensor method passed
    by value (`vmap(torch.dot)`) was read before the swap, so it is swapped here."""
    return _wrapper_of.get(id(fn), fn) if _sizes else fn


def unpatch():
    while _saved:
        owner, name, original = _saved.pop()
        setattr(owner, name, original)


# -- entering and leaving a level --------------------------------------------------------------

def to_level(x, in_dim, size):
    """x (plain, or batched at the outer levels) batched at a new level along logical
    dimension `in_dim`."""
    nb = len(_sizes) - 1  # the outer levels (this one is already open)
    p = expand_batch(x, nb) if nb else physical(x)
    d = in_dim + lrank(x) if in_dim < 0 else in_dim
    return BatchedTensor(movedim(p, nb + d, nb), nb + 1)


def from_level(x, out_dim, size):
    """A result of the level being closed, with its batch dimension moved to `out_dim`."""
    nb = len(_sizes)
    if not _is_tensor_like(x):
        raise ValueError(f"vmap: the function must return Tensors, got {type(x).__name__}")
    if nb_of(x) < nb:  # does not depend on this level: the same value for every entry
        p = lift(x, nb)
        shape = tuple(p._data.shape)
        p = F.expand(p, shape[:nb - 1] + (size,) + shape[nb:])
    else:
        p = x._t
    if out_dim is None:
        raise ValueError("vmap: out_dims None is only allowed for outputs that do not "
                         "depend on the mapped inputs")
    rank = p._data.ndim - nb
    d = out_dim + rank + 1 if out_dim < 0 else out_dim
    p = movedim(p, nb - 1, nb - 1 + d)
    return p if nb == 1 else BatchedTensor(p, nb - 1)


def run_level(size, call, randomness="error"):
    """Run `call` with a new vmap level of batch size `size` open."""
    if not _sizes:
        patch()
    _sizes.append(size)
    _randomness.append(randomness)
    try:
        return call()
    finally:
        _sizes.pop()
        _randomness.pop()
        if not _sizes:
            unpatch()


def open_sizes():
    return tuple(_sizes)


from runtime import batching_rules  # noqa: E402,F401  (registers RULES)
