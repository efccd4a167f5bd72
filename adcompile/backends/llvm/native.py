"""A compiled function on the LLVM backend: one native variant per array layout.

The IR is the same for every array layout, but the code is better when the compiler knows an
array is C-contiguous (its innermost stride is the constant 1, so loops vectorize). A
NativeFunction therefore keeps one variant per tuple of layouts ("C" or "A" for each array
argument) and compiles them on first use. Calling it tries the last variant's entry point,
which checks the arguments itself; only when they do not fit does Python pick the variant.
"""

import ctypes
import linecache

import llvmlite.ir as ir
import numpy as np

from adcompile.backends.llvm import capi, jit
from adcompile.backends.llvm.entry import METH_FASTCALL, build_entry
from adcompile.backends.llvm.lower import lower_kernel
from adcompile.ir import types as T
from adcompile.ir.nodes import walk, written_params
from adcompile.ir.printer import print_function


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


class Options:
    __slots__ = ("fastmath", "boundscheck", "release_gil")

    def __init__(self, fastmath=False, boundscheck=True, release_gil=True):
        self.fastmath = bool(fastmath)
        self.boundscheck = bool(boundscheck)
        self.release_gil = bool(release_gil)

    def key(self):
        return (self.fastmath, self.boundscheck, self.release_gil)


class Variant:
    """The machine code for one layout tuple, callable as a Python builtin."""

    def __init__(self, fn, layouts, options, exact):
        self.fn = fn
        self.layouts = layouts
        self.options = options
        self.exact = exact
        self.name = _symbol(fn.name)
        self.written = written_params(fn)
        key = jit.cache_key(print_function(fn), _locations(fn), layouts, options.key(), exact)
        obj = jit.cache_load(key)
        self.from_cache = obj is not None
        self._module = None
        if obj is None:
            obj = jit.emit_object(self.optimized())
            jit.cache_store(key, obj)
        address, self._tracker = jit.link(obj, self.name + "_entry", capi.symbols())
        self._name_bytes = self.name.encode()
        self._def = _MethodDef(self._name_bytes, address, METH_FASTCALL, None)
        # the builtin's `self` is this Variant: whoever holds the entry point keeps the
        # method definition and the JIT'd code it points to alive (the cycle is collectable)
        self.entry = _new_builtin(ctypes.addressof(self._def), self, None)

    def llvm_module(self):
        """The LLVM IR before optimisation."""
        module = ir.Module(name=self.name)
        tm = jit.target_machine()
        import llvmlite.binding as llvm

        module.triple = llvm.get_process_triple()
        module.data_layout = str(tm.target_data)
        kernel = lower_kernel(module, self.fn, self.name, self.layouts, tm.target_data,
                              self.options.fastmath, self.options.boundscheck)
        build_entry(module, kernel, self.name + "_entry", self.written,
                    self.options.release_gil, self.exact)
        return module

    def optimized(self):
        if self._module is None:
            self._module = jit.optimize(str(self.llvm_module()))
        return self._module


def _symbol(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


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
        self.fn = fn
        self.options = options or Options()
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
                    variant = self.variants[layouts] = Variant(self.fn, layouts,
                                                               self.options, self.exact)
        self.last = variant
        return variant

    def __call__(self, *args):
        last = self.last
        if last is not None:
            result = last.entry(*args)
            if result is not capi.MISS:
                return result
        variant = self.variant(args)
        result = variant.entry(*args)
        if result is capi.MISS:  # e.g. a float cotangent for an int result: convert it
            args = tuple(_coerce(v, p.type) for v, p in zip(args, self.fn.params))
            result = variant.entry(*args)
            if result is capi.MISS:
                raise TypeError(_mismatch(self.fn, args))
        return result

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
    written = written_params(fn)
    for value, param in zip(args, fn.params):
        for a in _arrays(value):
            if not a.flags.aligned:
                return f"{fn.name}(): array argument '{param.name}' is not aligned in memory"
            if a.dtype.byteorder == ">":
                return (f"{fn.name}(): array argument '{param.name}' is big-endian; pass "
                        f"a native-byte-order copy (a.astype(a.dtype.newbyteorder('=')))")
            if any(s % a.itemsize for s in a.strides):
                return (f"{fn.name}(): array argument '{param.name}' has strides that are "
                        f"not a multiple of its item size")
        if fn.params.index(param) in written and \
                any(not a.flags.writeable for a in _arrays(value)):
            return (f"{fn.name}(): array argument '{param.name}' is read-only, but the "
                    f"function may assign to it")
    return f"{fn.name}(): the arguments do not fit the compiled code"


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _arrays(v)
