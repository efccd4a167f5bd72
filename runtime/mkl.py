"""Intel MKL, loaded on first use, for the kernels PyTorch's CPU build takes from it.

PyTorch 2.13's Linux wheel links MKL 2024.2 statically and takes some float results from it:
its vector math (VML: sin, cos, exp, log, sqrt, ... each called on a contiguous run as
`vm?Sin(n, in, out, VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)`) and some BLAS products.
Their algorithms are closed, so numpy cannot follow their last bit; calling the same library
can. With the pip wheel `mkl==2024.2.0` installed (the `mkl` extra), this module finds its
`libmkl_rt` (in `sys.prefix/lib`, where pip puts it, then wherever the system's loader finds
it), sets it sequential (PyTorch's results do not depend on MKL's threads, and a second thread
pool beside numpy's would only spin) and hands out ctypes entry points.

Nothing is loaded at import: the first `vml_unary` or `blas` call loads the library (~20 ms).
When MKL is absent, fails to load, is switched off (`ADCOMPILE_MKL=0`), or is another version
than PyTorch's, every caller keeps its numpy kernel, silently and with unchanged results.

Another version is not used (unless `ADCOMPILE_MKL=any`): VML's high-accuracy functions are
within an ulp, not correctly rounded, and which ulp they land on is a property of one
release's code; a different release gives results that are neither PyTorch's nor the
documented numpy ones, with nothing to test them against. `status()` says what was found.
"""

import ctypes
import os
import sys
import threading

import numpy as np

TORCH_MKL = "2024.2"  # the MKL release PyTorch 2.13's CPU wheel links (torch.__config__.show())
LIBRARY = "libmkl_rt.so.2"
VML_MODE = 0x2 | 0x140000 | 0x100  # VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL
_INT_MAX = 2**31 - 1  # MKL_INT of the LP64 interface
_PREFIX = {np.dtype(np.float32): "vms", np.dtype(np.float64): "vmd"}

_lock = threading.Lock()
_state = {}  # "lib", "version", "why" once loaded (or refused)


def _candidates():
    """Where libmkl_rt may be: the environment's lib (pip's wheel), then the loader's path."""
    return (os.path.join(sys.prefix, "lib", LIBRARY), LIBRARY)


def _open():
    """(CDLL, None) or (None, why not)."""
    if os.environ.get("ADCOMPILE_MKL", "1") == "0":
        return None, "switched off by ADCOMPILE_MKL=0"
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path), None
        except OSError:
            continue
    return None, f"{LIBRARY} not found (pip install mkl=={TORCH_MKL}.0)"


def _version_string(lib):
    buf = ctypes.create_string_buffer(256)
    lib.MKL_Get_Version_String(buf, len(buf))
    return buf.value.decode("ascii", "replace")


def _load():
    lib, why = _open()
    version = None
    if lib is not None:
        lib.MKL_Set_Threading_Layer(_SEQUENTIAL)
        version = _version_string(lib)
        wanted = f"Version {TORCH_MKL}-"
        if wanted not in version and os.environ.get("ADCOMPILE_MKL") != "any":
            lib, why = None, f"{version} is not PyTorch's MKL {TORCH_MKL} (ADCOMPILE_MKL=any " \
                             f"uses it anyway)"
    _state.update(lib=lib, version=version, why=why)


def library():
    """The loaded libmkl_rt (a ctypes.CDLL), or None."""
    if "lib" not in _state:
        with _lock:
            if "lib" not in _state:
                _load()
    return _state["lib"]


def available():
    return library() is not None


def status():
    """What was found: the version string, or why MKL is not used."""
    library()
    return _state["version"] if _state["lib"] is not None else f"not used: {_state['why']}"


def reset():
    """Forget what was loaded (tests switch MKL off and on through ADCOMPILE_MKL)."""
    with _lock:
        _state.clear()
        _VML.clear()


# -- array addresses ---------------------------------------------------------------------------

def _data_offset():
    """Offset of the data pointer in a numpy array object (PyArrayObject's first field after
    the object header), checked against `ndarray.ctypes.data` once; None where it differs.
    Reading it costs 0.2 us against 1.9 us for `.ctypes.data`."""
    probe = np.empty(1)
    offset = object.__basicsize__
    found = ctypes.c_void_p.from_address(id(probe) + offset).value
    return offset if found == probe.ctypes.data else None


_OFFSET = _data_offset()
_pointer_at = ctypes.c_void_p.from_address


def address(a):
    """The address of an ndarray's first element."""
    if _OFFSET is None:
        return a.ctypes.data
    return _pointer_at(id(a) + _OFFSET).value


# -- vector math -------------------------------------------------------------------------------

_VML = {}  # (name, dtype) -> ctypes function or None


def _vml_function(name, dtype):
    key = (name, dtype)
    if key not in _VML:
        lib = library()
        fn = None if lib is None or dtype not in _PREFIX else getattr(lib, _PREFIX[dtype] + name)
        if fn is not None:
            fn.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
            fn.restype = None
        _VML[key] = fn
    return _VML[key]


def _run(fn, n, src, dst, itemsize):
    """fn over n elements in runs of at most MKL_INT's largest value, as PyTorch calls it."""
    for start in range(0, n, _INT_MAX):
        count = min(_INT_MAX, n - start)
        fn(count, src + start * itemsize, dst + start * itemsize, VML_MODE)


def vml_unary(name, fallback):
    """A kernel d -> name(d) for numpy data: MKL's VML function `vms<name>` / `vmd<name>` (as
    PyTorch calls it) for float32 and float64 arrays and scalars when MKL is used, `fallback`
    for everything else. The result is laid out as numpy's own (`empty_like`)."""

    def kernel(d):
        dtype = getattr(d, "dtype", None)
        fn = _vml_function(name, dtype) if dtype in _PREFIX else None
        if fn is None:
            return fallback(d)
        if d.__class__ is not np.ndarray:  # a numpy scalar (a 0-dim tensor's value)
            box = np.array((d,))
            fn(1, address(box), address(box), VML_MODE)
            return box[0]
        return _vml_array(fn, d)

    kernel.__name__ = f"mkl_{name.lower()}"
    kernel.fallback = fallback
    return kernel


def _vml_array(fn, d):
    out = np.empty_like(d)
    if out.size == 0:
        return out
    if out.strides == d.strides:  # d is dense, in out's layout
        src = address(d)
    else:  # PyTorch copies a strided input into a buffer first: the values are the same
        np.copyto(out, d)
        src = address(out)
    _run(fn, out.size, src, address(out), out.itemsize)
    return out


# PyTorch 2.13's ops whose CPU kernel is MKL's VML function, float32 and float64, contiguous
# or not (a strided input is copied to a buffer first), any length: op -> VML's name.
# benchmarks/mkl_vml_survey.py measured each at 100 % of elements bit-equal; the others it
# tries (log1p, expm1, sinh, cosh, asinh ... ~80-99 %) are PyTorch's own vectorised code, and
# trunc, ceil, floor, abs, round are exact either way.
TORCH_VML = {"sin": "Sin", "cos": "Cos", "tan": "Tan", "sqrt": "Sqrt", "exp": "Exp", "log": "Ln",
             "log10": "Log10", "log2": "Log2", "tanh": "Tanh", "asin": "Asin", "acos": "Acos",
             "atan": "Atan", "erf": "Erf", "erfc": "Erfc", "erfinv": "ErfInv"}


def torch_kernel(op, fallback):
    """The kernel of PyTorch's `op` for numpy data: MKL's where PyTorch's is MKL's and MKL is
    used, `fallback` (today's numpy kernel) otherwise."""
    return vml_unary(TORCH_VML[op], fallback)
