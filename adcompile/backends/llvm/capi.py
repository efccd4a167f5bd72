"""The CPython and numpy ABI facts the generated entry points rely on, probed at import.

Generated code reads `PyFloatObject`, tuples, numpy arrays and dtypes through byte offsets and
calls a few numpy C-API functions through numpy's `_ARRAY_API` table. Every offset is checked
here against the live interpreter (for an array built with unusual strides, a non-native
dtype, a float subclass...), so a CPython or numpy ABI change is detected when the LLVM
backend is first used, as a clear error, instead of a crash inside compiled code.

Objects whose address changes from process to process (type objects, the `_ARRAY_API`
functions, `True`/`False`) reach compiled code as external symbols bound at link time, never
as constants in the IR, so cached object code stays valid in the next process.
"""

import ctypes

import numpy as np

from adcompile.backends import MISS
from adcompile.backends.llvm import blaslib

# PyObject / PyFloatObject / PyTupleObject
OB_TYPE = 8
FLOAT_VALUE = 16
TUPLE_SIZE = 16
TUPLE_ITEMS = 24
SCALAR_VALUE = 16  # numpy scalars (np.float64, np.int64...) keep their value here
# PyArrayObject_fields and PyArray_Descr
ARRAY_DATA, ARRAY_NDIM, ARRAY_DIMS, ARRAY_STRIDES, ARRAY_DESCR, ARRAY_FLAGS = 16, 24, 32, 40, \
    56, 64
DESCR_BYTEORDER, DESCR_TYPE_NUM = 26, 28
C_CONTIGUOUS, OWNDATA, ALIGNED, WRITEABLE = 0x1, 0x4, 0x100, 0x400
TYPE_NUM = {"bool": np.dtype(np.bool_).num, "i64": np.dtype(np.int64).num,
            "f32": np.dtype(np.float32).num, "f64": np.dtype(np.float64).num}
ITEMSIZE = {"bool": 1, "i64": 8, "f32": 4, "f64": 8}
# indices into numpy's C-API table (stable across numpy 1.x and 2.x)
_API = {"PyArray_DescrFromType": 45, "PyArray_Scalar": 60, "PyArray_NewFromDescr": 94,
        "PyArray_Zeros": 183, "PyArray_Empty": 184, "PyArray_SetBaseObject": 282}
# exceptions compiled code raises that are not builtins (bound as adc_exc_<name>)
EXCEPTIONS = {"LinAlgError": np.linalg.LinAlgError}


class _BufferTag:
    """Its address marks the trailer of a buffer compiled code allocated (memory.py)."""


_BUFFER_TAG = _BufferTag()
# the slabs calls have finished with, kept for the next call (memory.py): a list the entry points
# take whole and give back with an atomic exchange
_SLAB_CACHE = ctypes.c_void_p(0)
# the free large buffers calls have finished with (memory.py), kept the same way
_LARGE_CACHE = ctypes.c_void_p(0)
_LARGE_BYTES = ctypes.c_int64(0)  # about how many bytes it holds


class ABIError(RuntimeError):
    """The interpreter's object layout is not the one the LLVM backend was written for."""


def _read(address, ctype):
    return ctype.from_address(address).value


def _array_api():
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath

    capsule = _multiarray_umath._ARRAY_API
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


def _probe():
    """Check every offset above against live objects; raise ABIError on any mismatch."""
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: read {got!r}, expected {want!r}")

    x = 2.5
    expect("float value", _read(id(x) + FLOAT_VALUE, ctypes.c_double), 2.5)
    expect("ob_type", _read(id(x) + OB_TYPE, ctypes.c_void_p), id(float))
    t = (1, "a", None)
    expect("tuple size", _read(id(t) + TUPLE_SIZE, ctypes.c_ssize_t), 3)
    expect("tuple item", _read(id(t) + TUPLE_ITEMS + 8, ctypes.c_void_p), id("a"))
    for value, ctype in ((np.float64(1.25), ctypes.c_double), (np.float32(1.25), ctypes.c_float),
                         (np.int64(-7), ctypes.c_int64)):
        expect(f"{type(value).__name__} value", _read(id(value) + SCALAR_VALUE, ctype),
               value.item())
    base = np.arange(24, dtype=">f8").reshape(4, 6)
    for a in (np.arange(12.0).reshape(3, 4)[:, ::-2], base[1:, ::3]):
        at = id(a)
        expect("array data", _read(at + ARRAY_DATA, ctypes.c_void_p), a.ctypes.data)
        expect("array ndim", _read(at + ARRAY_NDIM, ctypes.c_int), a.ndim)
        dims = _read(at + ARRAY_DIMS, ctypes.c_void_p)
        strides = _read(at + ARRAY_STRIDES, ctypes.c_void_p)
        expect("array shape", tuple((ctypes.c_int64 * a.ndim).from_address(dims)), a.shape)
        expect("array strides", tuple((ctypes.c_int64 * a.ndim).from_address(strides)),
               a.strides)
        expect("array flags", _read(at + ARRAY_FLAGS, ctypes.c_int), a.flags.num)
        descr = _read(at + ARRAY_DESCR, ctypes.c_void_p)
        expect("array descr", descr, id(a.dtype))
        expect("dtype type_num", _read(descr + DESCR_TYPE_NUM, ctypes.c_int), a.dtype.num)
        expect("dtype byteorder", _read(descr + DESCR_BYTEORDER, ctypes.c_char),
               a.dtype.byteorder.encode())
    api = _array_api()
    table = (ctypes.c_void_p * 300).from_address(api)
    expect("_ARRAY_API[2] (PyArray_Type)", table[2], id(np.ndarray))
    zeros = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                              ctypes.c_void_p, ctypes.c_int)(table[_API["PyArray_Zeros"]])
    descr_from_type = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_int)(
        table[_API["PyArray_DescrFromType"]])
    made = zeros(2, (ctypes.c_int64 * 2)(2, 3), descr_from_type(TYPE_NUM["f32"]), 0)
    expect("PyArray_Zeros", (type(made), made.shape, made.dtype, float(made.sum())),
           (np.ndarray, (2, 3), np.dtype(np.float32), 0.0))
    _probe_views(table, expect)
    if problems:
        raise ABIError("the LLVM backend cannot use this Python/numpy build (" +
                       "; ".join(problems) + "); use backend='python'")
    return table


def _probe_views(table, expect):
    """PyArray_NewFromDescr over memory of ours, and PyArray_SetBaseObject, as the entry
    point calls them to return views."""
    base = np.arange(12.0)
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                            ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(
        table[_API["PyArray_NewFromDescr"]])
    set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.py_object)(
        table[_API["PyArray_SetBaseObject"]])
    descr = np.dtype(np.float64)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(descr))  # stolen
    view = new(id(np.ndarray), id(descr), 2, (ctypes.c_int64 * 2)(2, 2),
               (ctypes.c_int64 * 2)(16, 48), base.ctypes.data + 8, WRITEABLE, None)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(base))  # stolen
    set_base(view, base)
    expect("PyArray_NewFromDescr", view.tolist(), [[1.0, 7.0], [3.0, 9.0]])
    expect("PyArray_SetBaseObject", view.base is base, True)
    expect("array flags (own data)", bool(base.flags.num & OWNDATA), base.flags.owndata)


_symbols = None


def symbols():
    """{symbol name: address} for everything generated code links against."""
    global _symbols
    if _symbols is None:
        table = _probe()
        found = {
            "adc_float_type": id(float), "adc_int_type": id(int), "adc_tuple_type": id(tuple),
            "adc_true": id(True), "adc_false": id(False), "adc_ndarray_type": id(np.ndarray),
            "adc_f64_type": id(np.float64), "adc_f32_type": id(np.float32),
            "adc_i64_type": id(np.int64), "adc_npbool_type": id(np.bool_),
            "adc_np_true": id(np.True_), "adc_np_false": id(np.False_),
            "adc_miss": id(MISS), "adc_none": id(None), "adc_buffer_tag": id(_BUFFER_TAG),
            "adc_slab_cache": ctypes.addressof(_SLAB_CACHE),
            "adc_large_cache": ctypes.addressof(_LARGE_CACHE),
            "adc_large_bytes": ctypes.addressof(_LARGE_BYTES),
        }
        for name, exception in EXCEPTIONS.items():
            found[f"adc_exc_{name}"] = id(exception)
        for dtype, code in TYPE_NUM.items():
            found[f"adc_descr_{dtype}"] = id(np.dtype(T_NUMPY[dtype]))
        for name, index in _API.items():
            found[f"adc_{name}"] = table[index]
        _symbols = found
    return _symbols


T_NUMPY = {"bool": np.bool_, "i64": np.int64, "f32": np.float32, "f64": np.float64}


def lapack_symbols():
    """{adc_lapack_<name>: address} of the LAPACK routines linalg.py calls, from scipy's
    cython_lapack (in blaslib's private copy); empty without scipy (then compiled code factors matrices itself)."""
    global _lapack
    if _lapack is None:
        _lapack = blaslib.private(_capsules(
            "cython_lapack", ("dgetrf", "sgetrf", "dgetrs", "sgetrs"), "adc_lapack_"))
    return _lapack


_lapack = None


def blas_symbols():
    """{adc_blas_<name>: address} of the BLAS routines matrix products call (gemm, gemv),
    from scipy's cython_blas (in blaslib's private copy); empty without scipy (then products run our own loops)."""
    global _blas
    if _blas is None:
        _blas = blaslib.private(_capsules(
            "cython_blas", ("dgemm", "sgemm", "dgemv", "sgemv"), "adc_blas_"))
    return _blas


_blas = None


def _capsules(module, names, prefix):
    try:
        import importlib
        found_module = importlib.import_module(f"scipy.linalg.{module}")
    except ImportError:
        return {}
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    found = {}
    for name in names:
        capsule = found_module.__pyx_capi__[name]
        found[f"{prefix}{name}"] = get_pointer(capsule, get_name(capsule))
    return found
