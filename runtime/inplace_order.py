"""Elementwise in-place operations as PyTorch's TensorIterator runs them: the broadcast
shape checked before anything else (`check_shape`), and an operand that reads memory the
operation writes (`ordered`).

PyTorch refuses an operand that overlaps part of its target only when both are dense
(runtime/overlap.py); otherwise (`v.copy_(v[:, 0])`, `v.add_(v[:, :1])`) its CPU kernel
reads and writes element by element, so an operand element may hold a value the same
operation wrote a moment before. numpy reads a snapshot instead. `ordered` redoes such an
operation as PyTorch's TensorIterator visits the elements (index_put_, `x[index] = v`, with a
`v` reading x's memory, one element at a time in its iterator's order: `_ordered_put`):

- the dimensions from the fastest to the slowest as TensorIterator orders them (layout.py's
  iteration_order over the target and the operands), those that run on as one coalesced;
- the innermost run, when every operand walks it contiguously (or one of them stays put),
  goes one SIMD vector (64 bytes with AVX-512, else 32) at a time as far as whole vectors
  reach, each
  read whole before it is written (an operand that stays put is read once, as the run
  starts); the rest of the run, and every other run, goes one element at a time.
  (Measured on PyTorch 2.13's CPU kernels: copy_, add_, sub_, mul_, float32 and float64.)

Each element's value then depends on at most one earlier element per operand; elements are
computed in waves (those whose inputs are all known), each wave one call of the ordinary
out-of-place function on the gathered values.
"""

import functools

import numpy as np

from runtime import grad_mode
from runtime import ops as F
from runtime.ops._core import is_tensor, wrap
from runtime.ops import indexing, inplace
from runtime.ops.layout import index_put_order, iteration_order
from runtime.rules.numpy_ops import shares_memory_within

_ELEMENTWISE = (F.copy_like_op, F.add, F.sub, F.mul, F.div, F.pow, F.floor_divide,
                F.remainder, F.clamp, F.lerp, F.addcmul, F.addcdiv)


@functools.cache
def _vector_bytes():
    """PyTorch's SIMD width on this CPU: AVX-512's where the CPU has it, else AVX2's."""
    try:
        with open("/proc/cpuinfo") as f:
            return 64 if "avx512bw" in f.read() else 32
    except OSError:
        return 32


def check_shape(t, result_fn, args):
    """An elementwise in-place op whose tensor operands broadcast to a shape other than the
    target's is refused before anything else about it (its dtypes) is looked at, as
    PyTorch's TensorIterator refuses it while it is being set up."""
    shape = t._data.shape
    shapes = [a._data.shape for a in args if is_tensor(a)]
    if all(s == shape for s in shapes) or result_fn not in _ELEMENTWISE:
        return
    try:
        fits = np.broadcast_shapes(shape, *shapes) == shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"an in-place operation cannot write a result of the broadcast "
                           f"shape of {[list(s) for s in shapes]} into a tensor of shape "
                           f"{list(shape)}")


def ordered(t, result_fn, args):
    """A result_fn computing `result_fn(t, *args)` in PyTorch's element order, or None when
    no operand of this elementwise op (or index_put_) reads an element it writes at another
    step."""
    d = t._data
    put = _index_put_call(result_fn, args)
    if put is not None:
        return _ordered_put(t, result_fn, *put)
    if result_fn not in _ELEMENTWISE or d.size < 2 or shares_memory_within(d):
        return None
    try:
        spread = {i: np.broadcast_to(a._data, d.shape) for i, a in enumerate(args)
                  if is_tensor(a) and a._data.ndim > 0}
    except ValueError:
        return None  # the ordinary path raises PyTorch's error
    readers = [i for i in spread if np.may_share_memory(spread[i], d)
               and not _same_walk(spread[i], d)]
    if not readers:
        return None
    visit, times = _schedule(d, spread)
    written = _addresses(d)[visit]
    deps = {i: _last_write(written, _addresses(spread[i])[visit], times[i]) for i in readers}
    if all((dep < 0).all() for dep in deps.values()):
        return None
    values = _in_waves(t, result_fn, args, spread, visit, deps)

    def run(target, *call_args):
        result = result_fn(target, *call_args)
        out = np.array(result._data, order="C")
        out.reshape(-1)[visit] = values  # a fresh C-ordered array: the reshape is a view
        result._data = out
        return result

    return run


def _same_walk(a, d):
    """Whether each element of `a` is the element of `d` at the same place (x.add_(x)):
    each step then reads only what it writes itself."""
    return a.strides == d.strides and a.ctypes.data == d.ctypes.data


def _addresses(a):
    """The memory address of each element of `a`, in C order."""
    out = np.full(a.shape, a.__array_interface__["data"][0], np.int64)
    for dim, (n, st) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[dim] = n
        out = out + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return out.reshape(-1)


def _schedule(d, spread):
    """(visit, times): the C-order index of the element each step writes, and per operand
    the step at which each step's read happens (the first step of its SIMD chunk, or of its
    run for an operand that stays put along the run, else the step itself)."""
    perm = iteration_order(d.shape, [d] + list(spread.values()))
    visit = np.arange(d.size).reshape(d.shape).transpose(perm[::-1]).reshape(-1)
    size, inner, vector = _inner_run(d, list(spread.values()), perm)
    steps = np.arange(d.size)
    within = steps % size
    lanes = _vector_bytes() // d.itemsize
    in_vectors = vector & (within < size // lanes * lanes)
    times = {}
    for i, st in zip(spread, inner[1:]):
        start = steps - within if st == 0 else steps - within % lanes
        times[i] = np.where(in_vectors, start, steps)
    return visit, times


def _inner_run(d, operands, perm):
    """TensorIterator's innermost loop: its length after coalescing the fastest dimensions,
    each array's stride along it (the target's first), and whether it runs vectorized
    (every array contiguous along it, or all but one operand, which stays put)."""
    arrays = [d] + operands
    shape = [d.shape[p] for p in perm]
    strides = [[a.strides[p] if a.shape[p] > 1 else 0 for p in perm] for a in arrays]
    size, inner = shape[0], [s[0] for s in strides]
    for k in range(1, len(shape)):
        if not (size == 1 or shape[k] == 1
                or all(size * st == s[k] for st, s in zip(inner, strides))):
            break
        if size == 1:
            inner = [s[k] for s in strides]
        size *= shape[k]
    contiguous = [st == a.itemsize for st, a in zip(inner, arrays)]
    vector = all(contiguous) or (contiguous[0] and inner[1:].count(0) == 1
                                 and sum(contiguous[1:]) == len(operands) - 1)
    return max(size, 1), inner, vector


def _last_write(written, read, times):
    """Per step, the step that wrote the address it reads if that came before its read
    time, else -1 (it reads the memory as it was). The target's elements do not share
    memory, so each address is written once."""
    order = np.argsort(written, kind="stable")
    at = np.minimum(np.searchsorted(written[order], read), written.size - 1)
    writer = order[at]
    return np.where((written[writer] == read) & (writer < times), writer, -1)


def _waves(deps, n):
    """Each step's wave: 0 when it reads nothing the op wrote, else one more than the
    latest wave among the steps it reads from. Relaxed all at once while the chains are
    short; long ones (each step reading the one before) are walked in step order."""
    wave = np.zeros(n, np.int64)
    for _ in range(32):
        new = np.zeros(n, np.int64)
        for dep in deps.values():
            has = dep >= 0
            new[has] = np.maximum(new[has], wave[dep[has]] + 1)
        if np.array_equal(new, wave):
            return wave
        wave = new
    for k in np.unique(np.concatenate([np.nonzero(dep >= 0)[0] for dep in deps.values()])):
        wave[k] = 1 + max(wave[dep[k]] if dep[k] >= 0 else -1 for dep in deps.values())
    return wave


def _in_waves(t, result_fn, args, spread, visit, deps):
    """The values each step writes, in step order: wave by wave, result_fn on the values
    gathered for the wave's steps (an operand reads an earlier step's value, or memory)."""
    d = t._data
    values = np.empty(d.size, d.dtype)
    wave = _waves(deps, d.size)
    mine = np.ascontiguousarray(d).reshape(-1)[visit]
    before = {i: np.ascontiguousarray(a).reshape(-1)[visit] for i, a in spread.items()}
    with grad_mode.no_grad():
        for w in range(int(wave.max()) + 1):
            ks = np.nonzero(wave == w)[0]
            call = list(args)
            for i, a in spread.items():
                got = before[i][ks]
                if i in deps:
                    dep = deps[i][ks]
                    got = np.where(dep >= 0, values[np.maximum(dep, 0)], got)
                call[i] = wrap(got, args[i]._dtype)
            values[ks] = result_fn(wrap(mine[ks], t._dtype), *call)._data
    return values


def _index_put_call(result_fn, args):
    """(numpy key, value, accumulate) of an index_put_ (or `x[index] = value`) call, or None
    for another op."""
    fn, kwargs = result_fn, {}
    if isinstance(fn, functools.partial):
        fn, kwargs = fn.func, fn.keywords
    if fn is inplace.index_put:
        return args[0], args[1], False
    if fn is indexing.index_put:
        accumulate = kwargs.get("accumulate", args[2] if len(args) > 2 else False)
        return tuple(F.shape._plain_key(i) for i in args[0]), args[1], bool(accumulate)
    return None


def _ordered_put(t, result_fn, key, value, accumulate):
    """index_put_ as PyTorch's CPU kernel runs it: element by element in its iterator's
    order, a value element in the memory written read as it is at its step (None when the
    value does not read what the op writes)."""
    d = t._data
    if not is_tensor(value) or not np.may_share_memory(value._data, d):
        return None
    try:
        positions = np.arange(d.size).reshape(d.shape)[key]
        src = np.broadcast_to(value._data, positions.shape)
    except (IndexError, ValueError):
        return None  # the ordinary path raises PyTorch's error
    perm = index_put_order(d, key, src)
    visit = np.arange(positions.size).reshape(positions.shape).transpose(perm[::-1])
    visit = visit.reshape(-1)
    dest = positions.reshape(-1)[visit]
    alias = _element_at(d, _addresses(src)[visit])
    if not (alias >= 0).any():
        return None
    own = np.ascontiguousarray(src).reshape(-1)[visit]

    def run(target, *call_args):
        result = result_fn(target, *call_args)
        out = np.array(d, order="C")
        flat = out.reshape(-1)
        for k in range(dest.size):
            v = flat[alias[k]] if alias[k] >= 0 else own[k]
            if accumulate:
                flat[dest[k]] += v
            else:
                flat[dest[k]] = v
        result._data = out
        return result

    return run


def _element_at(d, addresses):
    """Per address, the C-order index of d's element stored there, or -1."""
    mine = _addresses(d)
    order = np.argsort(mine, kind="stable")
    at = np.minimum(np.searchsorted(mine[order], addresses), d.size - 1)
    return np.where(mine[order][at] == addresses, order[at], -1)
