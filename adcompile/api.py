"""The public compiler API: @adcompile.

A CompiledFunction specialises the Python function per argument-type signature on first call
(front end -> pass pipeline -> backend) and caches the result; `ir()` and `source()` show the
stages for a signature.
"""

import functools

from adcompile.frontend import check, lower_function
from adcompile.frontend.source import Source
from adcompile.ir import interp
from adcompile.ir import types as T
from adcompile.ir.printer import print_function
from adcompile.passes import pipeline

BACKENDS = ("python", "interp")


class Specialization:
    """One signature's compiled artefacts."""

    def __init__(self, ir, backend):
        self.ir = ir
        self.backend = backend
        self._source = None
        self.callable = self._build()

    def _build(self):
        if self.backend == "interp":
            return lambda *args: interp.run(self.ir, args)
        from adcompile.backends import python

        self._source = python.emit_source(self.ir)
        return python.load(self.ir, self._source)

    @property
    def source(self):
        if self._source is None:
            from adcompile.backends import python

            self._source = python.emit_source(self.ir)
        return self._source


class CompiledFunction:
    def __init__(self, fn, backend="python", verify=False):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
        self.fn = fn
        self.backend = backend
        self.verify = verify
        self._cache = {}
        functools.update_wrapper(self, fn)
        check.check_function(Source(fn))  # refuse what is outside the subset right away

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
        spec = self._cache.get(key)
        if spec is None:
            ir = lower_function(self.fn, key)
            ir = pipeline.run(ir, verify=self.verify)
            spec = self._cache[key] = Specialization(ir, self.backend)
        return spec

    def __call__(self, *args):
        return self.specialize(*args).callable(*args)

    def ir(self, *args):
        """The IR text for this argument signature (after the pass pipeline)."""
        return print_function(self.specialize(*args).ir)

    def source(self, *args):
        """The Python source the Python backend emits for this signature."""
        return self.specialize(*args).source


def _detail(value):
    dtype = getattr(value, "dtype", None)
    return f" of dtype {dtype}" if dtype is not None else ""


def adcompile(fn=None, *, backend="python", verify=False):
    """Compile `fn` (used as @adcompile or @adcompile(backend=...))."""
    if fn is None:
        return lambda f: CompiledFunction(f, backend, verify)
    return CompiledFunction(fn, backend, verify)


def _as_compiled(f):
    return f if isinstance(f, CompiledFunction) else CompiledFunction(f)


def jvp(f, primals, tangents):
    """Forward mode: (f(*primals), J·tangents). A tangent of None marks an argument that is
    not differentiated; the derivative program is built once per signature and cached."""
    primals, tangents = tuple(primals), tuple(tangents)
    spec = _jvp_spec(_as_compiled(f), primals, tangents)
    return spec.callable(*primals, *[t for t in tangents if t is not None])


def jvp_source(f, primals, tangents):
    """The Python source of the JVP program for these argument types."""
    return _jvp_spec(_as_compiled(f), tuple(primals), tuple(tangents)).source


def _jvp_spec(cf, primals, tangents):
    from adcompile.ad.forward import jvp_function

    if len(primals) != len(tangents):
        raise TypeError(f"jvp() got {len(primals)} primals but {len(tangents)} tangents")
    active = tuple(t is not None for t in tangents)
    key = ("jvp", cf.signature(primals), active)
    spec = cf._cache.get(key)
    if spec is None:
        ir = jvp_function(cf.specialize(*primals).ir, active)
        ir = pipeline.run(ir, verify=cf.verify)
        spec = cf._cache[key] = Specialization(ir, cf.backend)
    return spec
