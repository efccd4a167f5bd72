"""A compiled function on the LLVM backend: one native variant per array layout.

The IR is the same for every array layout, but the code is better when the compiler knows an
array is C-contiguous (its innermost stride is the constant 1, so loops vectorize). A
NativeFunction therefore keeps one variant per tuple of layouts ("C" or "A" for each array
argument) and compiles them on first use. Calling it tries the last variant's entry point,
which checks the arguments itself; only when they do not fit does Python pick the variant.
"""

import atexit
import ctypes
import linecache
import os
import struct
import threading
import time

import llvmlite.ir as ir
import numpy as np

from adcompile.backends.llvm import capi, fusion, jit, merge, pool, reassociate, split, \
    stream, tiles, ufuncs, values
from adcompile.backends.llvm.entry import METH_FASTCALL, build_entry
from adcompile.backends.llvm import lower
from adcompile.backends.llvm.lower import lower_kernel
from adcompile import collector
from adcompile.errors import internal_errors
from adcompile.ir import types as T
from adcompile.ir import nodes
from adcompile.ir.nodes import walk
from adcompile.ir.printer import print_function


_LINALG = ("det", "inv", "cofactor", "solve")


def written_params(fn):
    """Indices of the parameters whose arrays `fn` may write into: ir.nodes.written_params
    (whole-array writes, `x[1:] = v`, `x[i, :] += v`..., through views of any kind, items of
    the function's own tapes traced to what was pushed). An array merged by a branch or a
    loop, or taken from a tuple, cannot be traced to one parameter: then every parameter
    counts; arrays the function makes are its own."""
    return nodes.written_params(fn)


def _method_def(name_bytes, address):
    """A PyMethodDef in a bytes object, and its address.

    Not a ctypes Structure: the builtin's `self` keeps its method definition alive, but when a
    reference cycle through the builtin is collected, the collector calls tp_clear on every
    object of the garbage, and a ctypes object's tp_clear frees its buffer (a 32-byte
    structure is not stored inline); meth_dealloc then read `ml_flags` from freed memory (a
    segfault at interpreter exit). A bytes object is not tracked by the collector and a
    tuple has no tp_clear, so both outlive the builtin that points into them."""
    name_address = ctypes.cast(ctypes.c_char_p(name_bytes), ctypes.c_void_p).value
    data = struct.pack("PPi4xP", name_address, address, METH_FASTCALL, 0)
    return data, ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


class Options:
    """`parallel`: True (large array loops on the pool's threads, adcompile.set_num_threads),
    False (every loop in the calling thread, no parallel code at all) or N (at most N
    threads for this function)."""

    __slots__ = ("fastmath", "boundscheck", "release_gil", "parallel")

    def __init__(self, fastmath=False, boundscheck=True, release_gil=True, parallel=True):
        self.fastmath = bool(fastmath)
        self.boundscheck = bool(boundscheck)
        self.release_gil = bool(release_gil)
        self.parallel = parallel_setting(parallel)

    def key(self):
        return (self.fastmath, self.boundscheck, self.release_gil, self.parallel)

    def thread_cap(self):
        """What the kernel passes the pool: None (no parallel code), 0 (the pool's count),
        N (at most N)."""
        if self.parallel is False:
            return None
        return 0 if self.parallel is True else self.parallel


def parallel_setting(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= 1:
        return value
    raise ValueError(f"parallel must be True, False or a number of threads >= 1, not "
                     f"{value!r}")


class Variant:
    """The machine code for one layout tuple, callable as a Python builtin."""

    def __init__(self, fn, layouts, options, exact):
        self.fn = fn
        self.layouts = layouts
        self.options = options
        self.exact = exact
        self.name = fn.name
        self.written = written_params(fn)  # (ours: whole-array writes count too)
        # det/inv/solve call LAPACK when scipy has it, else our own LU (linalg.py)
        imports = dict(capi.symbols(), **pool.block_symbols(), **pool.runtime_symbols())
        if any(op.prim in _LINALG for op in walk(fn.body)):
            imports.update(capi.lapack_symbols())
        if any(op.prim == "matmul" for op in walk(fn.body)):
            imports.update(capi.blas_symbols())
        looped = any(ufuncs.calls(op) for op in walk(fn.body))
        if looped:  # numpy's loops of transcendental functions of arrays
            imports.update(ufuncs.symbols())
        if options.parallel is not False and _has_arrays(fn):
            imports.update(pool.symbols())
        self.lapack = any(name.startswith("adc_lapack_") for name in imports)
        self.blas = any(name.startswith("adc_blas_") for name in imports)
        key = jit.cache_key(print_function(fn), _locations(fn), layouts, options.key(), exact,
                            self.lapack, self.blas, lower.OUTLINE, lower.FUSE, fusion.JOIN,
                            tiles.TILES, tiles.TILE, tiles.MIN_TILED, values.SHARED,
                            ufuncs.key(walk(fn.body)) if looped else ())
        self.imports = imports
        self._module = None
        self._trackers = []
        # the quick tier: the code that runs once per call compiled quickly (jit.Once), the
        # rest code-generated quickly (jit.QUICK_CODEGEN); all of it is compiled again
        # after TIER_UP calls or TIER_UP_SECONDS in them, in a thread of its own (tier_up).
        # `redo`: per object, what its final code is made from (jit.Code.redo), or None.
        self.redo = None
        self.calls_left = 0
        self.seconds_left = 0.0
        self.tier_thread = None
        self._full_key = jit.cache_key(key, "full")
        objects = jit.cache_load(self._full_key)  # what an earlier tier-up left
        if objects is None:
            stored = jit.cache_load(key)
            if stored is not None:
                objects, self.redo = _unpacked(stored)
        self.from_cache = objects is not None
        if objects is None:
            with collector.paused():
                objects = self.compile()
            self.redo = [code.redo for code in objects]
            jit.cache_store(key, _packed(objects, self.redo))
        self.pending = bool(self.redo and any(self.redo)) and TIER_UP > 0 and \
            jit.can_tier_up()
        self.objects = objects if self.pending else None  # (kept for the tier-up only)
        if self.pending:
            self.calls_left = TIER_UP
            self.seconds_left = TIER_UP_SECONDS if TIER_UP_SECONDS > 0 else float("inf")
        else:
            self.redo = None  # (nothing will use it)
        self.entry = self._install(objects)

    @property
    def lasting_entry(self):
        """The entry point callers may keep and call directly (api.py's fast paths): None
        while the quick tier's code waits to be replaced (its calls must reach `called`)."""
        return None if self.pending else self.entry

    def _install(self, objects):
        """Link `objects` and return their entry point as a Python builtin."""
        address, tracker = jit.link(objects, entry_symbol(self.name), self.imports)
        self._trackers.append(tracker)  # (a replaced entry may still run in another thread)
        name_bytes = self.name.encode()
        method_def, def_address = _method_def(name_bytes, address)
        # the builtin's `self` is (definition, name, this Variant): whoever holds the entry
        # point keeps the method definition and the JIT'd code it points to alive. The tuple
        # (no tp_clear) and the bytes (untracked) survive the collection of the cycle
        # Variant -> entry -> self tuple -> Variant until the builtin itself is freed.
        return _new_builtin(def_address, (method_def, name_bytes, self), None)

    def called(self, seconds):
        """Count a call of the quick tier's code, which took `seconds`: the last call it
        waits for, or the one that brings the time spent in it to TIER_UP_SECONDS, starts
        the tier-up."""
        self.calls_left -= 1
        self.seconds_left -= seconds
        if self.calls_left <= 0 or self.seconds_left <= 0:
            with _tier_lock_start:  # (threads calling at once start one tier-up)
                self.calls_left = 0  # (a racing decrement may have gone below)
                if self.tier_thread is None:
                    self.tier_thread = _tier_up(self)

    def tier_up(self):
        """Each object compiled quickly made again with the full pipeline (jit.compile_full)
        and linked with the others into a new library, whose entry point replaces this
        one; the full set of objects goes to the cache for later processes. Runs in a thread
        of its own; a failure leaves the quick code in place."""
        try:
            objects = [code if redo is None else jit.compile_full(redo)
                       for code, redo in zip(self.objects, self.redo)]
            self.entry = self._install(objects)
        finally:  # (after a failure the quick code stays, for good)
            self.pending, self.objects, self.redo = False, None, None
        jit.cache_store(self._full_key, objects)

    def compile(self):
        """The object code (jit.Code, whose `redo` says which were compiled quickly): where
        LLVM may run on several threads, the outlined ops go to it in batches while the
        kernel is still being lowered (stream.py), then the rest of the module in parts;
        else the whole module's parts after the lowering."""
        workers = jit.workers()
        quick = jit.QUICK_CODEGEN and TIER_UP > 0 and jit.can_tier_up()
        if not workers:
            return jit.compile_objects(self.llvm_text(), quick=quick)
        with jit.Jobs(workers, quick) as jobs:
            text = self.llvm_text(jobs.submit)
            return jobs.finish(jit.tiered(lambda t: split.parts(t, jit.part_count(t)), text))

    def llvm_module(self, submit=None):
        """The LLVM IR before optimisation (`submit`: where finished outlined ops go,
        stream.Batches; they are then only declared in it)."""
        module = ir.Module(name=kernel_symbol(self.name))
        if submit is not None:
            module.adc_batches = stream.Batches(module, submit)
        tm = jit.target_machine()
        import llvmlite.binding as llvm

        module.triple = llvm.get_process_triple()
        module.data_layout = str(tm.target_data)
        kernel = lower_kernel(module, self.fn, kernel_symbol(self.name), self.layouts,
                              tm.target_data, self.options.fastmath, self.options.boundscheck,
                              self.lapack, self.blas, self.options.thread_cap())
        build_entry(module, kernel, entry_symbol(self.name), self.written,
                    self.options.release_gil, self.exact)
        return module

    def llvm_text(self, submit=None):
        """The LLVM IR text LLVM compiles: llvm_module's, its identical functions folded
        (with `submit`, less the outlined ops shipped to it and what only they used)."""
        module = self.llvm_module(submit)
        text = str(module)
        if submit is not None:
            text = module.adc_batches.rest(text)
        release(module)
        return merge.identical(text)

    def optimized(self):
        """The module optimised whole (as one part: what `llvm_ir` and `asm` show; the
        machine code comes from parts of it compiled at once, jit.compile_objects)."""
        if self._module is None:
            self._module = jit.optimize(self.llvm_text())
        return self._module


TIER_UP = int(os.environ.get("ADCOMPILE_TIER_UP", "20") or 0)  # calls; 0: never
# ... or once the calls of the quick code took this long (a few long calls tier up too;
# 0: calls only)
TIER_UP_SECONDS = float(os.environ.get("ADCOMPILE_TIER_UP_SECONDS", "0.05") or 0)
_REDO = b"adcompile redo "  # (no object file starts so)


def _packed(objects, redo):
    """The cache entry of a compile: its objects, and when some were compiled quickly what
    their final code is made from (one blob each: empty when final, b"T" and a Once text, b"B"
    and bitcode) and a last blob that says how many objects there are. One entry, so that
    quick objects never come without it."""
    if not any(redo):
        return list(objects)
    blobs = [b"" if r is None else b"B" + r if isinstance(r, bytes) else
             b"T" + str(r).encode() for r in redo]
    return list(objects) + blobs + [_REDO + str(len(objects)).encode()]


def _unpacked(stored):
    """(objects, redo list or None) from a cache entry _packed made."""
    last = stored[-1]
    if not last.startswith(_REDO):
        return stored, None
    count = int(last[len(_REDO):])
    if len(stored) != 2 * count + 1:
        return None, None  # (another layout: compiled again)
    redo = [None if not blob else jit.Once(blob[1:].decode()) if blob[:1] == b"T"
            else bytes(blob[1:]) for blob in stored[count:2 * count]]
    return stored[:count], redo


_tiering = []  # the tier-up threads not yet joined
_tier_lock = threading.Lock()
_tier_lock_start = threading.Lock()


def _tier_up(variant):
    """Start variant.tier_up in a thread (they compile one at a time)."""
    def run():
        with _tier_lock:
            try:
                variant.tier_up()
            except Exception as e:  # the quick code stays; say why once
                import warnings
                warnings.warn(f"adcompile: could not compile {variant.name} again with O3 "
                              f"({type(e).__name__}: {e}); it keeps its first code",
                              RuntimeWarning, stacklevel=1)

    thread = threading.Thread(target=run, name="adcompile-tier-up", daemon=True)
    _tiering[:] = [t for t in _tiering if t.is_alive()] + [thread]
    thread.start()
    return thread


def settle():
    """Wait for the tier-ups started so far (benchmarks, tests; at exit, so that no thread is
    inside LLVM while the interpreter goes down; before a fork, so that the child inherits
    no lock a tier-up holds: llvmlite's, _tier_lock)."""
    while _tiering:
        _tiering.pop().join()


def _after_fork_in_child():
    global _tier_lock, _tier_lock_start
    _tier_lock, _tier_lock_start = threading.Lock(), threading.Lock()
    _tiering.clear()


atexit.register(settle)
os.register_at_fork(before=settle, after_in_child=_after_fork_in_child)


def release(module):
    """Empty an llvmlite.ir module whose text has been printed, and the lowerings that wrote
    it (lower._Lowering registers itself in `module.adc_lowerings`).

    Its objects form reference cycles (instruction -> block -> function -> module -> function
    -> block -> instruction; a loop's phi and the values it merges; a function and its
    arguments), as do the lowerings (the recursive closures of loop nests hold them, and
    they hold every value they made), so only the cyclic collector would free them. The
    compile runs with the collector paused (collector.paused), so the first collection after
    it, in the first call, walked them all: for GradBench gmm's gradient about 58,000
    objects, 18-22 ms alone and 60-100 ms in run.py's process (PyTorch's and JAX's objects
    around them). Opened here, they go by reference counting as soon as the lowering lets go
    of them (about 12,000 remain for the collector)."""
    for lowering in module.__dict__.pop("adc_lowerings", ()):
        vars(lowering).clear()
    for value in module.globals.values():
        if isinstance(value, ir.Function):
            stream.empty_body(value)
            value.args = ()
            value.return_value = None
    module.globals.clear()
    module.metadata = []
    module.namedmetadata = {}
    module._metadatacache = {}


# Symbols we define carry a dot, which no Python identifier, C function (libm, libc, the
# CPython API) or `adc_` interpreter object has, and do not start with "llvm." (reserved for
# intrinsics): whatever the user's function is called, it cannot collide with any of them.
def kernel_symbol(name):
    return f"adc.fn.{name}"


def entry_symbol(name):
    return f"adc.entry.{name}"


def _locations(fn):
    """Error messages quote the user's lines: they are part of the cache key."""
    locs = sorted({op.loc for op in walk(fn.body) if op.loc})
    return [(loc, _line(loc)) for loc in locs]


def _line(loc):
    where = loc[len("grad of: "):] if loc.startswith("grad of: ") else loc
    filename, _, line = where.rpartition(":")
    return linecache.getline(filename, int(line)) if line.isdigit() else ""


class NativeFunction:
    """`exact`: how many leading parameters take exactly the kinds of number they were
    specialised for (a Python float is not a np.float64: results and promotion differ); the
    rest (tangents, cotangents of derivative programs) take any number of the right dtype.
    None: all of them."""

    def __init__(self, fn, options=None, exact=None):
        self.options = options or Options()
        # fastmath's reorderings, on a copy (the IR itself is cached and differentiated)
        self.fn = reassociate.rewritten(fn) if self.options.fastmath else fn
        self.exact = len(fn.params) if exact is None else exact
        self.variants = {}
        self.last = None

    def layouts_of(self, args):
        layouts = []
        for value, param in zip(args, self.fn.params):
            _layouts(value, param.type, layouts)
        return tuple(layouts)

    def variant(self, args):
        layouts = self.layouts_of(args)
        variant = self.variants.get(layouts)
        if variant is None:
            with jit.LOCK:  # threads making the first call compile it once
                variant = self.variants.get(layouts)
                if variant is None:
                    with internal_errors(f"compiling {_signature(self.fn)} to native code"):
                        variant = Variant(self.fn, layouts, self.options, self.exact)
                    self.variants[layouts] = variant
        self.last = variant
        return variant

    def __call__(self, *args):
        last = self.last
        if last is not None:
            start = time.perf_counter() if last.calls_left else 0.0  # (the quick tier's)
            result = last.entry(*args)
            if result is not capi.MISS:
                if last.calls_left:
                    last.called(time.perf_counter() - start)
                return result
        variant = self.variant(args)
        start = time.perf_counter()
        result = variant.entry(*args)
        if variant.calls_left and result is not capi.MISS:
            variant.called(time.perf_counter() - start)
        if result is capi.MISS:  # e.g. a float cotangent for an int result: convert it
            args = tuple(_coerce(v, p.type) for v, p in zip(args, self.fn.params))
            result = variant.entry(*args)
            if result is capi.MISS:
                result = self._call_on_copies(args)
        return result

    def _call_on_copies(self, args):
        """Run on native copies of the arrays the machine code cannot read in place
        (big-endian, unaligned, strides that are not a multiple of the item size), and write
        the copies back into the arrays the function may assign to, also when it raises. A
        read-only array passed where the function may write is numpy's ValueError."""
        written = written_params(self.fn)
        arrays = [(i, param, a) for i, (value, param) in enumerate(zip(args, self.fn.params))
                  for a in _arrays(value)]
        for i, param, a in arrays:
            if i in written and not a.flags.writeable:
                raise ValueError(f"{self.fn.name}(): array argument '{param.name}' is "
                                 f"read-only, but the function may assign to it")
        copies = {}
        native_args = tuple(_native(v, copies, i) for i, v in enumerate(args))
        if not copies:
            raise TypeError(_mismatch(self.fn, args))
        _refuse_shared_copies(self.fn, arrays, copies, written)
        try:
            result = self.variant(native_args).entry(*native_args)
        finally:
            for original, copy, index in copies.values():
                if index in written:
                    original[...] = copy
        if result is capi.MISS:
            raise TypeError(_mismatch(self.fn, args))
        return _originals(result, copies)

    def llvm_ir(self, *args):
        """The LLVM IR (optimised) of the variant these arguments select."""
        return str(self.variant(args).optimized()) if args else \
            str((self.last or self._any()).optimized())

    def asm(self, *args):
        return jit.assembly((self.variant(args) if args else
                             (self.last or self._any())).optimized())

    def _any(self):
        layouts = tuple("C" for _ in range(_count_arrays([p.type for p in self.fn.params])))
        return self.variants.get(layouts) or Variant(self.fn, layouts, self.options,
                                                     self.exact)


def _has_arrays(fn):
    """Whether fn handles arrays (only then may its kernel call the thread pool)."""
    return any(isinstance(v.type, T.Array) for v in fn.params) or any(
        isinstance(r.type, T.Array) for op in walk(fn.body) for r in op.results)


def _signature(fn):
    return f"{fn.name}({', '.join(f'{p.name}: {p.type}' for p in fn.params)})"


def _count_arrays(types):
    n = 0
    for t in types:
        if isinstance(t, T.Array):
            n += 1
        elif isinstance(t, T.Tuple):
            n += _count_arrays(t.items)
    return n


def _layouts(value, t, out):
    if isinstance(t, T.Array):
        out.append("C" if isinstance(value, np.ndarray) and value.flags.c_contiguous else "A")
    elif isinstance(t, T.Tuple) and isinstance(value, tuple):
        for v, item in zip(value, t.items):
            _layouts(v, item, out)


def _coerce(value, t):
    """A number converted to scalar type t; tuples item by item; anything else unchanged."""
    from adcompile.ir.interp import convert

    if isinstance(t, T.Scalar) and isinstance(value, (int, float, np.number, np.bool_)):
        return convert(value, t)
    if isinstance(t, T.Tuple) and isinstance(value, tuple) and len(value) == len(t.items):
        return tuple(_coerce(v, item) for v, item in zip(value, t.items))
    return value


def _mismatch(fn, args):
    """Why arguments of the right types still cannot be passed to native code."""
    return f"{fn.name}(): the arguments do not fit the compiled code"


def _unfit(a):
    return (not a.flags.aligned or not a.dtype.isnative
            or any(s % a.itemsize for s in a.strides))


def _native(value, copies, index=None):
    """`value` with each array that native code cannot read in place replaced by an aligned,
    native-byte-order copy; copies maps id(copy) -> (original, copy, parameter index)."""
    if isinstance(value, np.ndarray) and _unfit(value):
        copy = np.array(value, dtype=value.dtype.newbyteorder("="), order="C")
        copies[id(copy)] = (value, copy, index)
        return copy
    if isinstance(value, tuple):
        return tuple(_native(v, copies, index) for v in value)
    return value


def _refuse_shared_copies(fn, arrays, copies, written):
    """A copy cannot see writes made through another argument sharing its memory (or show its
    own): refuse such calls when the function writes into an array."""
    if not written:
        return
    copied = {id(original) for original, _, _ in copies.values()}
    for i, param, a in arrays:
        for j, other, b in arrays:
            if (i, id(a)) < (j, id(b)) and (id(a) in copied or id(b) in copied) and \
                    np.shares_memory(a, b):
                raise TypeError(f"{fn.name}(): array arguments '{param.name}' and "
                                f"'{other.name}' share memory and one of them is big-endian "
                                f"or unaligned, which compiled code reads through a copy; "
                                f"pass native-byte-order, aligned arrays")


def _originals(value, copies):
    """A result with each copy made by _native replaced by its original (`f(a) is a`), and a
    row view of a copy (`m[i]`) by the same view of the original."""
    if isinstance(value, np.ndarray):
        for original, copy, _ in copies.values():
            if value is copy:
                return original
            if np.may_share_memory(value, copy):  # nothing else can: the copy is ours
                return _same_view(value, copy, original)
        return value
    if isinstance(value, tuple):
        return tuple(_originals(v, copies) for v in value)
    return value


def _same_view(view, copy, original):
    """`view` is copy[i, j, ...] (compiled code takes views by leading integer indices):
    the same view of the original array, or `view` itself when it is not of that form."""
    lead = copy.ndim - view.ndim
    offset = view.__array_interface__["data"][0] - copy.__array_interface__["data"][0]
    index = np.unravel_index(offset // copy.itemsize, copy.shape) if copy.size else ()
    same = original[tuple(int(k) for k in index[:lead])]
    if same.shape != view.shape or view.strides != copy.strides[lead:]:
        return view
    return same


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _arrays(v)
