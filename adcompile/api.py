"""The public compiler API: @adcompile.

A CompiledFunction specialises the Python function per argument-type signature on first call
(front end -> pass pipeline -> backend) and caches the result; `ir()` and `source()` show the
stages for a signature.
"""

import functools
import sys
import threading

from adcompile import cache, collector
from adcompile.ad.forward import jvp_function
from adcompile.ad.reverse import vjp_function
from adcompile.errors import internal_errors
from adcompile.backends import MISS as _MISS
from adcompile.frontend import check, lower_function
from adcompile.frontend.fingerprint import fingerprint
from adcompile.frontend.source import Source
from adcompile.ir import interp
from adcompile.ir import types as T
from adcompile.ir import serialize
from adcompile.ir.printer import print_function
from adcompile.ir.verifier import verify as verify_ir
from adcompile.passes import pipeline

BACKENDS = ("llvm", "python", "interp")

# Threads making the first call of one signature at once compile it once: the cache-miss path
# of every specialization runs under this lock (re-entrant: a derivative program specialises
# its primal first). Calls of compiled code never take it.
_COMPILING = threading.RLock()


def _once(specs, key, make):
    """specs[key], made by make() under the compile lock when missing."""
    spec = specs.get(key)
    if spec is None:
        with _COMPILING, collector.paused():
            spec = specs.get(key)
            if spec is None:
                spec = specs[key] = make()
    return spec


_NATIVE = []


class _LazyBridge:
    """adcompile.bridge, imported on first use (it imports this module)."""

    def __getattr__(self, name):
        from adcompile import bridge

        return getattr(bridge, name)


_bridge = _LazyBridge()


def _native_backend():
    """The LLVM backend module, or None (with one warning) where it cannot work: llvmlite
    missing, or a Python/numpy build whose object layout the entry points do not know."""
    if _NATIVE:
        return _NATIVE[0]
    try:
        from adcompile.backends import llvm
        from adcompile.backends.llvm import capi
    except ImportError as e:
        problem = e
    else:
        try:
            capi.symbols()  # probes the interpreter's object layout once
            _NATIVE.append(llvm)
            return llvm
        except capi.ABIError as e:
            problem = e
    import warnings

    warnings.warn(f"adcompile: native code is unavailable ({problem}); compiled functions run "
                  f"as generated Python instead", RuntimeWarning, stacklevel=4)
    _NATIVE.append(None)
    return None


class Specialization:
    """One signature's compiled artefacts."""

    def __init__(self, ir, backend, options=None, exact=None):
        self.ir = ir
        self.backend = backend
        self.options = options
        self.exact = exact  # how many leading parameters are the user's (checked exactly)
        self._source = None
        self.native = None
        self.callable = self._build()

    def _build(self):
        if self.backend == "interp":
            return lambda *args: interp.run(self.ir, args)
        if self.backend == "llvm":
            native = _native_backend()
            if native is not None:
                self.native = native.NativeFunction(self.ir, self.options, self.exact)
                return self.native
        from adcompile.backends import python

        self._source = python.emit_source(self.ir)
        return python.load(self.ir, self._source)

    def _native(self, what):
        if self.native is None:
            raise ValueError(f"{what}() shows the code of the LLVM backend; this function "
                             f"was compiled with backend={self.backend!r}")
        return self.native

    def llvm_ir(self, args):
        return self._native("llvm_ir").llvm_ir(*args)

    def asm(self, args):
        return self._native("asm").asm(*args)

    @property
    def source(self):
        if self._source is None:
            from adcompile.backends import python

            self._source = python.emit_source(self.ir)
        return self._source


class CompiledFunction:
    def __init__(self, fn, backend="llvm", verify=False, fastmath=False, boundscheck=True,
                 parallel=True):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
        self.fn = fn
        self.backend = backend
        self.verify = verify
        self.options = None
        if backend == "llvm":
            from adcompile.backends.llvm import Options

            self.options = Options(fastmath=fastmath, boundscheck=boundscheck,
                                   parallel=parallel)
        elif fastmath or not boundscheck:
            raise ValueError("fastmath and boundscheck are options of backend='llvm'")
        self._cache = {}
        self._entry = None  # the native entry point of the last specialization called
        functools.update_wrapper(self, fn)
        with internal_errors(f"checking {fn.__qualname__}"):
            check.check_function(Source.of(fn))  # refuse what is outside the subset now

    def __reduce__(self):
        """Pickled by reference to the module-level function, with the options."""
        from adcompile.pickling import reduce_compiled

        return reduce_compiled(self)

    def signature(self, args):
        names = self.fn.__code__.co_varnames[: self.fn.__code__.co_argcount]
        if len(args) != len(names):
            raise TypeError(f"{self.fn.__name__}() takes {len(names)} arguments but "
                            f"{len(args)} were given")
        types = []
        for name, value in zip(names, args):
            t = T.of_value(value)
            if t is None:
                raise TypeError(f"{self.fn.__name__}(): parameter '{name}' got a "
                                f"{type(value).__name__}{_detail(value)}; compiled functions "
                                f"take int, float, bool, numpy scalars, numpy arrays of "
                                f"float64/float32/int64/bool, and tuples of these")
            types.append(t)
        return tuple(types)

    def specialize(self, *args):
        key = self.signature(args)
        return _once(self._cache, key, lambda: _specialization(
            self, ("primal", key), lambda: lower_function(self.fn, key)))

    def __call__(self, *args):
        entry = self._entry
        if entry is not None:  # native code checks its own arguments
            result = entry(*args)
            if result is not _MISS:
                return result
        if _bridge.has_tensor(args):  # eager Tensors: one node of the eager graph
            return _bridge.call(self, args)
        spec = self.specialize(*args)
        result = spec.callable(*args)
        if spec.native is not None:
            self._entry = spec.native.last.lasting_entry
        return result

    def llvm_ir(self, *args):
        """The optimised LLVM IR for this argument signature (LLVM backend)."""
        return self.specialize(*args).llvm_ir(args)

    def asm(self, *args):
        """The machine code, as assembly, for this argument signature (LLVM backend)."""
        return self.specialize(*args).asm(args)

    def ir(self, *args):
        """The IR text for this argument signature (after the pass pipeline)."""
        return print_function(self.specialize(*args).ir)

    def source(self, *args):
        """The Python source the Python backend emits for this signature."""
        return self.specialize(*args).source


def _specialization(cf, key, build, exact=None):
    """The Specialization of `key` for `cf`: its IR from _program(), then the backend's
    callable. An exception escaping from the compiler here is a bug of ours."""
    with internal_errors(_during(cf, key)):
        return Specialization(_program(cf, key, build), cf.backend, cf.options, exact)


def _during(cf, key):
    """What is being compiled, for an InternalError: `grad program of f(x: f64[:])`."""
    chain = []
    while isinstance(cf, _Transformed):
        chain.append(getattr(cf, "mode", None) or ("value_and_grad" if cf.with_value else
                                                     "grad"))
        cf = cf.cf
    kind, types = key[0], key[1]
    code = cf.fn.__code__
    names = code.co_varnames[: code.co_argcount]
    signature = ", ".join(f"{n}: {t}" for n, t in zip(names, types))
    what = "" if kind == "primal" else f"the {kind} program of "
    of = "".join(f"{c}(" for c in reversed(chain))
    return f"compiling {what}{of}{cf.fn.__qualname__}{')' * len(chain)}({signature})"


def _program(cf, key, build):
    """The pipeline's IR for `key` (what is built, for which signature) of `cf`'s function:
    from the on-disk IR cache when the function and everything its lowering reads are
    unchanged (a warm start skips the front end and the derivative transforms), otherwise
    build() run through the pass pipeline, and stored."""
    disk_key = _disk_key(cf, key)
    if disk_key is not None:
        ir = _cached_ir(disk_key)
        if ir is not None:
            if cf.verify:
                verify_ir(ir)
            return ir
    ir = pipeline.run(build(), verify=cf.verify)
    if disk_key is not None:
        data = serialize.encode(ir)
        if data is not None:
            cache.store(disk_key, "ir", data)
    return ir


def _cached_ir(disk_key):
    data = cache.load(disk_key, "ir")
    if data is None:
        return None
    try:
        return serialize.decode(data)
    except Exception as e:  # whole but unreadable: written by some other version
        cache.warn(f"adcompile: ignoring an unreadable IR cache entry ({e}); compiling")
        return None


def _disk_key(cf, key):
    """The IR cache key: the compiler's version, the function's fingerprint, the transforms
    `cf` applies to it and `key`; None when the function cannot be fingerprinted."""
    lineage = []
    while isinstance(cf, _Transformed):
        lineage.append((cf.with_value, cf.argnums))
        cf = cf.cf
    if cache.cache_dir() is None:
        return None
    if not hasattr(cf, "_fingerprint"):
        cf._fingerprint = fingerprint(cf.fn)
    if cf._fingerprint is None:
        return None
    import numpy as np

    return cache.key_of(cache.compiler_digest(), np.__version__, sys.version,
                        cf._fingerprint, lineage, key)


def _detail(value):
    dtype = getattr(value, "dtype", None)
    return f" of dtype {dtype}" if dtype is not None else ""


def adcompile(fn=None, *, backend="llvm", verify=False, fastmath=False, boundscheck=True,
              parallel=True):
    """Compile `fn` (used as @adcompile or @adcompile(backend=..., ...)).

    backend: "llvm" (native code, the default), "python" (readable Python source) or
    "interp" (the reference interpreter). fastmath=True lets LLVM reorder floating-point
    operations (reductions vectorize; results may differ in the last bits);
    boundscheck=False drops the index checks (an out-of-range index is then undefined).
    parallel (LLVM backend): True runs large array loops and sums on several threads
    (set_num_threads; results are the same bits as on one thread), N at most N threads,
    False none (no parallel code is compiled)."""
    if fn is None:
        return lambda f: CompiledFunction(f, backend, verify, fastmath, boundscheck, parallel)
    return CompiledFunction(fn, backend, verify, fastmath, boundscheck, parallel)


def set_num_threads(n):
    """The threads compiled array code may use (1: every loop in the calling thread). The
    default is ADCOMPILE_NUM_THREADS, else OMP_NUM_THREADS (which dask's workers set to 1),
    else the cores this process may run on. Takes effect at the next call."""
    from adcompile.backends.llvm import pool

    pool.configure(threads=n)


def get_num_threads():
    from adcompile.backends.llvm import pool

    return pool.settings()["threads"]


def _as_compiled(f):
    return f if isinstance(f, (CompiledFunction, _Transformed)) else CompiledFunction(f)


def jvp(f, primals, tangents):
    """Forward mode: (f(*primals), J·tangents). A tangent of None marks an argument that is
    not differentiated; the derivative program is built once per signature and cached."""
    primals, tangents = tuple(primals), tuple(tangents)
    if _bridge.has_tensor(primals + tangents):
        return _bridge.jvp(f, primals, tangents)
    spec = _jvp_spec(_as_compiled(f), primals, tangents)
    return spec.callable(*primals, *[t for t in tangents if t is not None])


def jvp_source(f, primals, tangents):
    """The Python source of the JVP program for these argument types."""
    return _jvp_spec(_as_compiled(f), tuple(primals), tuple(tangents)).source


def _jvp_spec(cf, primals, tangents):
    if len(primals) != len(tangents):
        raise TypeError(f"jvp() got {len(primals)} primals but {len(tangents)} tangents")
    active = tuple(t is not None for t in tangents)
    _check_aliasing(cf, primals, active)
    key = ("jvp", cf.signature(primals), active)
    return _once(cf._cache, key, lambda: _specialization(
        cf, key, lambda: jvp_function(cf.specialize(*primals).ir, active), len(primals)))


def _written_arrays(spec):
    """Indices of the array parameters a specialization's program stores into (cached)."""
    written = getattr(spec, "_written", None)
    if written is None:
        from adcompile.ir.nodes import written_params

        written = spec._written = written_params(spec.ir)
    return written


def _check_aliasing(cf, args, active):
    """No array argument may share memory with another one the function writes into: the
    derivative program re-reads arguments it assumes unchanged (and a differentiated one must
    keep the values it was given)."""
    import numpy as np

    from adcompile.errors import CompileError

    if not isinstance(cf, CompiledFunction):
        return
    written = _written_arrays(cf.specialize(*args))
    for j in written:
        if j >= len(args) or not isinstance(args[j], np.ndarray):
            continue
        for i, value in enumerate(args):
            if i != j and isinstance(value, np.ndarray) and np.shares_memory(value, args[j]):
                what = "is differentiated but" if active[i] else ""
                raise CompileError(f"argument {i} {what} shares memory with argument {j}, "
                                   f"which the function writes into; pass a copy so the "
                                   f"derivative sees the values it was given".replace("  ", " "))


def _vjp_spec(cf, primals, active):
    _check_aliasing(cf, primals, active)
    key = ("vjp", cf.signature(primals), active)
    return _once(cf._cache, key, lambda: _specialization(
        cf, key, lambda: vjp_function(cf.specialize(*primals).ir, active), len(primals)))


def vjp(f, *primals):
    """Reverse mode: (f(*primals), pullback), where pullback(cotangent) returns one cotangent
    per argument (None for arguments that cannot have one: ints, bools). The pullback pickles
    (the function by reference, the primals by value)."""
    if _bridge.has_tensor(primals):
        return _bridge.vjp(f, primals)
    cf = _as_compiled(f)
    active = tuple(_differentiable_value(p) for p in primals)
    spec = _vjp_spec(cf, primals, active)
    return cf(*primals), _Pullback(cf, primals, active, spec)


class _Pullback:
    """The pullback vjp() returns: applies the compiled vjp program to a cotangent."""

    def __init__(self, cf, primals, active, spec=None):
        self.cf = cf
        self.primals = primals
        self.active = active
        self._spec = spec

    def __reduce__(self):
        return _Pullback, (self.cf, self.primals, self.active)

    def __call__(self, cotangent):
        if self._spec is None:
            self._spec = _vjp_spec(self.cf, self.primals, self.active)
        _, grads = self._spec.callable(*self.primals, cotangent)
        it = iter(grads)
        return tuple(next(it) if on else None for on in self.active)


def _differentiable_value(v):
    import numpy as np

    if isinstance(v, np.ndarray):
        return v.dtype.kind == "f"
    return isinstance(v, float) or isinstance(v, np.floating)


class _Transformed:
    """grad / value_and_grad of a function: callable, with .ir() and .source(), and itself
    differentiable (jvp of a grad gives Hessian-vector products)."""

    def __init__(self, f, argnums, with_value):
        self.cf = _as_compiled(f)
        self.argnums = argnums
        self.with_value = with_value
        self.fn = self.cf.fn
        self.backend = self.cf.backend
        self.options = self.cf.options
        self.verify = self.cf.verify
        # programs derived from this transform (its own, and jvp of it for hvp) are kept
        # with the function's, so a new grad(f) object reuses them, but apart from the
        # programs derived from f itself: jvp(grad(f)) is not jvp(f)
        self._cache = self.cf._cache.setdefault(("transform", with_value, argnums), {})
        self._entry = None  # the native entry point of the last call (see __call__)

    def __reduce__(self):
        from adcompile.pickling import reduce_transformed

        return reduce_transformed(self)

    def signature(self, args):
        return self.cf.signature(args)

    def _active(self, args):
        nums = self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)
        for i in nums:
            if not _differentiable_value(args[i]):
                raise TypeError(f"grad(): argument {i} ('{self._param(i)}') is a "
                                f"{type(args[i]).__name__}; only float scalars and float "
                                f"arrays can be differentiated")
        return tuple(i in nums for i in range(len(args)))

    def _param(self, i):
        return self.cf.fn.__code__.co_varnames[i]

    def specialize(self, *args):
        """The compiled program: grads only for grad, (value, grads) for value_and_grad."""
        active = self._active(args)
        _check_aliasing(self.cf, args, active)
        mode = "value_and_grad" if self.with_value else "grad"
        key = (mode, self.cf.signature(args), active)
        return _once(self._cache, key, lambda: _specialization(
            self.cf, key, lambda: vjp_function(self.cf.specialize(*args).ir, active, mode)))

    def __call__(self, *args):
        entry = self._entry
        if entry is not None:
            # native code checks the argument types itself; arguments of the same types are
            # differentiable ones, and a primal that writes into no argument cannot alias
            result = entry(*args)
            if result is not _MISS:
                return self._finish(result)
        if _bridge.has_tensor(args):
            return _bridge.call(self, args)
        spec = self.specialize(*args)
        result = spec.callable(*args)
        primal = self.cf.specialize(*args)
        if spec.native is not None and not _written_arrays(primal):
            self._entry = spec.native.last.lasting_entry
        else:
            self._entry = None
        return self._finish(result)

    def _finish(self, result):
        if not self.with_value:
            if isinstance(self.argnums, tuple) and not isinstance(result, tuple):
                result = (result,)
            return result
        value, grads = result
        return value, (grads if isinstance(self.argnums, tuple) else grads[0])

    def ir(self, *args):
        return print_function(self.specialize(*args).ir)

    def source(self, *args):
        return self.specialize(*args).source

    def llvm_ir(self, *args):
        return self.specialize(*args).llvm_ir(args)

    def asm(self, *args):
        return self.specialize(*args).asm(args)


def grad(f, argnums=0):
    """The gradient of a scalar-valued f with respect to argument(s) `argnums`."""
    return _Transformed(f, argnums, with_value=False)


def value_and_grad(f, argnums=0):
    return _Transformed(f, argnums, with_value=True)


def hvp(f, primals, tangents):
    """Hessian-vector product of scalar f (forward over reverse): H(primals) · tangents."""
    primals, tangents = tuple(primals), tuple(tangents)
    nums = tuple(i for i, t in enumerate(tangents) if t is not None)
    _, product = jvp(grad(f, argnums=nums), primals, tangents)
    return product  # one value for one differentiated argument, else a tuple


def _basis(value):
    import numpy as np

    if isinstance(value, np.ndarray):
        for k in range(value.size):
            e = np.zeros(value.size)
            e[k] = 1.0
            yield e.reshape(value.shape)
    else:
        yield 1.0


def _stack(columns, value_shape, arg):
    import numpy as np

    cols = [np.asarray(c, dtype=float) for c in columns]
    out_shape = cols[0].shape
    arg_shape = np.shape(arg)
    stacked = np.stack(cols, axis=-1) if cols else np.zeros(out_shape + (0,))
    result = stacked.reshape(out_shape + arg_shape)
    return result if result.shape else float(result)


class _Columns:
    """jacobian(f) / hessian(f): one derivative column per element of argument `argnums`,
    stacked to result shape + argument shape. Picklable when f is."""

    def __init__(self, f, argnums, column):
        self.f = _as_compiled(f)
        self.argnums = argnums
        self.column = column

    def __call__(self, *args):
        tangents = [None] * len(args)
        columns = []
        for e in _basis(args[self.argnums]):
            tangents[self.argnums] = e
            columns.append(self.column(self.f, args, tuple(tangents)))
        return _stack(columns, None, args[self.argnums])


def _jvp_column(f, primals, tangents):
    return jvp(f, primals, tangents)[1]


def jacobian(f, argnums=0):
    """The Jacobian of f with respect to argument `argnums`, one forward-mode column per
    element of that argument; shape = result shape + argument shape."""
    return _Columns(f, argnums, _jvp_column)


def hessian(f, argnums=0):
    """The Hessian of scalar f with respect to argument `argnums` (forward over reverse)."""
    return _Columns(f, argnums, hvp)
