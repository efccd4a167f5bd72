"""Intel MKL, loaded on first use, for the kernels PyTorch's CPU build takes from it.

PyTorch 2.13's Linux wheel links MKL 2024.2 statically and takes some float results from it:
its vector math (VML: sin, cos, exp, log, sqrt, ... each called on a contiguous run as
`vm?Sin(n, in, out, VML_HA | VML_FTZDAZ_OFF | VML_ERRMODE_IGNORE)`) and some BLAS products.
Their algorithms are closed, so numpy cannot follow their last bit; calling the same library
can. With the pip wheel `mkl==2024.2.0` installed (the `mkl` extra), this module finds its
`libmkl_rt` (in `sys.prefix/lib`, where pip puts it, then wherever the system's loader finds
it), sets it sequential and calls it: VML's functions as numpy ufuncs (runtime/vml_ufunc.py;
through ctypes where those cannot be built), BLAS through ctypes. Sequential is PyTorch's
single-threaded result: its VML results do not depend on threads, but its products do (a
64x784 by 784x256 product differs between 1 and 2 threads in PyTorch itself), and the
project follows PyTorch's single-threaded order throughout.

Nothing is loaded at import: the first call of a VML kernel, `gemm` or `gemv` loads the
library (~5 ms of CPU); the first VML call also imports llvmlite and compiles the ufuncs'
loops (~50 ms of CPU, once per process).
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
        for bound in _VML:
            bound.clear()
        _BLAS.clear()


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

_VML = []  # each kernel's {dtype or scalar type: its route (below) or None}, emptied by reset()
_ndarray = np.ndarray
_ONE = ctypes.c_int(1)
_MODE = ctypes.c_int64(VML_MODE)
_as_pointer = ctypes.c_void_p
_UFUNCS = {}  # VML name -> its numpy ufunc (runtime/vml_ufunc.py) or None, for the process
USE_UFUNCS = [True]  # False: the ctypes route (the reference the ufuncs are tested against)


class _Scratch(threading.local):
    """Each thread's one-element buffers, {dtype: (array, its address as c_void_p)}: a 0-dim
    tensor's value goes through one of them (the call releases the GIL, so no sharing)."""

    def __init__(self):
        self.boxes = {}


_scratch = _Scratch()


def _box(dtype):
    box = np.empty(1, dtype)
    entry = _scratch.boxes[dtype] = (box, _as_pointer(address(box)))
    return entry


class _CtypesRoute:
    """vms<name> / vmd<name> through ctypes, called as the route's ufunc is called by
    vml_unary: `route(scalar)`, or `route(x, out=out)` with out dense and x in out's layout.
    Callers pass ctypes values they built (c_int, c_void_p, c_int64), which ctypes takes as
    they are: a 0-dim value's whole call is ~0.9 us (was ~2.5 converting Python ints); the
    ufunc's is ~0.2 us."""

    def __init__(self, lib, name, dtype):
        fn = ctypes.cast(getattr(lib, _PREFIX[dtype] + name), ctypes.c_void_p).value
        self.fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64)(fn)

    def __call__(self, d, out=None):
        if out is None:  # a numpy scalar (a 0-dim tensor's value)
            box, at = _scratch.boxes.get(d.dtype) or _box(d.dtype)
            box[0] = d
            self.fn(_ONE, at, at, _MODE)
            return box[0]
        src, dst, n = address(d), address(out), out.size
        for start in range(0, n, _INT_MAX):  # in runs of at most MKL_INT's largest, as PyTorch
            step = start * out.itemsize
            self.fn(ctypes.c_int(min(_INT_MAX, n - start)), _as_pointer(src + step),
                    _as_pointer(dst + step), _MODE)
        return out


def _ufunc(lib, name):
    if name not in _UFUNCS:
        from runtime import vml_ufunc
        _UFUNCS[name] = vml_ufunc.ufunc(lib, name)
    return _UFUNCS[name]


def vml_route(name, dtype):
    """How to call vms<name> / vmd<name> for dtype: its numpy ufunc, or the ctypes route
    where the ufunc cannot be built or USE_UFUNCS is off; None without MKL or for another
    dtype."""
    lib = library()
    if lib is None or dtype not in _PREFIX:
        return None
    ufunc = _ufunc(lib, name) if USE_UFUNCS[0] else None
    return ufunc if ufunc is not None else _CtypesRoute(lib, name, dtype)


def vml_unary(name, fallback):
    """A kernel d -> name(d) for numpy data: MKL's VML function `vms<name>` / `vmd<name>` (as
    PyTorch calls it) for float32 and float64 arrays and scalars when MKL is used, `fallback`
    for everything else. The result is laid out as numpy's own (`empty_like`)."""
    bound = {}
    scalars = {}  # numpy scalar type -> route: a 0-dim tensor's value, the hot path
    _VML.extend((bound, scalars))

    def kernel(d):
        route = scalars.get(d.__class__)
        if route is not None:
            return route(d)
        dtype = getattr(d, "dtype", None)
        route = bound.get(dtype, False)
        if route is False:
            route = bound[dtype] = vml_route(name, dtype) if dtype is not None else None
        if route is None:
            return fallback(d)
        if d.__class__ is not _ndarray:  # a numpy scalar
            scalars[d.__class__] = route
            return route(d)
        return _vml_array(route, d)

    kernel.__name__ = f"mkl_{name.lower()}"
    kernel.fallback = fallback
    return kernel


def _vml_array(route, d):
    out = np.empty_like(d)
    if out.size == 0:
        return out
    if out.strides != d.strides:  # PyTorch copies a strided input into a buffer first
        np.copyto(out, d)
        d = out
    return route(d, out=out)


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


# -- BLAS: matrix products called as PyTorch's addmm and addmv call them ------------------------

_COL_MAJOR, _NO_TRANS, _TRANS = 102, 111, 112
_BLAS = {}  # (kind, dtype) -> cblas function or None, emptied by reset()


def _operand(x, rows, cols, transpose_c):
    """(array, transposed, leading dimension) for one factor of addmm, as PyTorch's
    addmm_impl_cpu_ lays it out: used as is when column-major (or row-major, transposed) in
    the frame of C, else copied row-major. Strides in elements decide, with PyTorch's strides
    for dimensions of size 1 (which the tensor layer gives its arrays)."""
    size = x.itemsize
    s0, s1 = x.strides
    inner, outer = (s1 // size, s0 // size) if transpose_c else (s0 // size, s1 // size)
    if inner == 1 and outer >= max(1, rows):
        return x, False, outer
    if outer == 1 and inner >= max(1, cols):
        return x, True, inner
    x = np.ascontiguousarray(x)
    return x, not transpose_c, x.strides[0] // size


_REAL = {np.dtype(np.float32): (ctypes.c_float, "s"), np.dtype(np.float64): (ctypes.c_double, "d")}


def _cblas(kind, dtype):
    """cblas_?gemm / cblas_?gemv for dtype, with its argument types set; None without MKL.
    PyTorch calls the Fortran ?gemm_/?gemv_, which run the same kernels."""
    scalar, letter = _REAL[dtype]
    lib = library()
    fn = None if lib is None else getattr(lib, f"cblas_{letter}{kind}")
    if fn is not None:
        fn.restype = None
        i, p = ctypes.c_int, ctypes.c_void_p
        fn.argtypes = ((i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i) if kind == "gemm"
                       else (i, i, i, i, scalar, p, i, p, i, scalar, p, i))
    return fn


def _blas_ready(kind, dtype, *others):
    """The cblas function of `kind` for dtype when every other operand has that dtype too."""
    key = (kind, dtype)
    fn = _BLAS.get(key, False)
    if fn is False:
        fn = _BLAS[key] = _cblas(kind, dtype) if dtype in _REAL else None
    if fn is None or any(getattr(x, "dtype", None) != dtype for x in others):
        return None
    return fn


def gemm(a, b, start=None, alpha=1.0, beta=1.0):
    """alpha * (a @ b) of two matrices plus beta * `start` (broadcast to the product's shape:
    addmm's input; a plain product without it) as PyTorch's addmm calls MKL's ?gemm for a
    fresh row-major result: the transposes and leading dimensions chosen from the factors'
    strides as its addmm_impl_cpu_ chooses them (a product's bits depend on which kernel MKL
    takes). None without MKL, for other dtypes, an empty product, or factors that do not
    fit (the caller raises)."""
    fn = _blas_ready("gemm", a.dtype, b, *() if start is None else (start,))
    (m, k), (k_b, n) = a.shape, b.shape
    if fn is None or m * n * k == 0 or k_b != k:  # mismatches: the caller's error
        return None
    out = np.empty((m, n), a.dtype) if start is None else \
        np.array(np.broadcast_to(start, (m, n)), order="C")
    transpose_c = n != 1  # a row-major result is column-major only as a single column
    rows, cols = (n, m) if transpose_c else (m, n)
    first, second = (b, a) if transpose_c else (a, b)
    first, trans_a, lda = _operand(first, rows, k, transpose_c)
    second, trans_b, ldb = _operand(second, k, cols, transpose_c)
    ldc = n if transpose_c else 1
    lda, ldb, ldc = _normalized(trans_a, trans_b, rows, cols, k, lda, ldb, ldc)
    fn(_COL_MAJOR, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS, rows, cols,
       k, alpha, address(first), lda, address(second), ldb, 0.0 if start is None else beta,
       address(out), ldc)
    return out


def gemm_call(dtype):
    """A function (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) making
    MKL's column-major ?gemm call with exactly those arguments (a, b, c addresses), as a
    PyTorch kernel that calls cpublas::gemm itself passes them (flash attention); None
    without MKL or for another dtype. MKL picks its kernel by the CPU it runs on (an AMD
    EPYC with AVX-512 sums small products in another order than an Intel Xeon), so calling
    it is the one way to have PyTorch's bits on every host."""
    fn = _blas_ready("gemm", np.dtype(dtype))
    if fn is None:
        return None

    def call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        fn(_COL_MAJOR, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS,
           m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    return call


def dot(a, b):
    """The dot product of two float32 or float64 vectors of one length as PyTorch's dot
    calls BLAS's ?dot (MKL's, with the vectors' strides); a 0-dim array, or None without MKL,
    for other dtypes, or vectors that are empty or have negative strides. numpy's BLAS
    (OpenBLAS) sums in other orders: a quarter (3 terms) to most (1000 terms) of random
    float32 dots differ from PyTorch's in the last bit on an AMD EPYC, MKL's none."""
    fn = _dot_function(a.dtype) if a.dtype == b.dtype else None
    n = a.shape[0]
    if fn is None or n == 0 or n > _INT_MAX or min(a.strides + b.strides) < 0:
        return None
    incx, incy = (1, 1) if n == 1 else (a.strides[0] // a.itemsize, b.strides[0] // b.itemsize)
    return np.array(fn(n, address(a), incx, address(b), incy), a.dtype)


def _dot_function(dtype):
    key = ("dot", dtype)
    fn = _BLAS.get(key, False)
    if fn is False:
        lib = library() if dtype in _REAL else None
        scalar, letter = _REAL[dtype] if lib is not None else (None, None)
        fn = None if lib is None else getattr(lib, f"cblas_{letter}dot")
        if fn is not None:
            fn.restype = scalar
            fn.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                           ctypes.c_int)
        _BLAS[key] = fn
    return fn


def _normalized(trans_a, trans_b, m, n, k, lda, ldb, ldc):
    """Leading dimensions of a single row or column set as PyTorch's cpublas sets them."""
    if n == 1:
        ldc = m
    if trans_a and m == 1 or not trans_a and k == 1:
        lda = k if trans_a else m
    if trans_b and k == 1 or not trans_b and n == 1:
        ldb = n if trans_b else k
    return lda, ldb, ldc


def gemv(mat, vec, start=None, alpha=1.0, beta=1.0):
    """alpha * (mat @ vec) plus beta * `start` (addmv's input) as PyTorch's addmv calls MKL's
    ?gemv; None without MKL, for other dtypes, an empty product, factors that do not fit, or
    a vector PyTorch does not hand to BLAS (stride <= 0)."""
    fn = _blas_ready("gemv", mat.dtype, vec, *() if start is None else (start,))
    incx = vec.strides[0] // vec.itemsize
    m, n = mat.shape
    if fn is None or incx <= 0 or mat.size == 0 or vec.shape[0] != n:
        return None
    out = np.empty(m, mat.dtype) if start is None else \
        np.array(np.broadcast_to(start, (m,)), order="C")
    s0, s1 = (s // mat.itemsize for s in mat.strides)
    if s0 == 1 and (n == 1 or s1 >= max(1, m)):
        trans, rows, cols, lda = _NO_TRANS, m, n, s1
    else:
        if not (s1 == 1 and (m == 1 or s0 >= max(1, n))):
            mat = np.ascontiguousarray(mat)
        trans, rows, cols, lda = _TRANS, n, m, mat.strides[0] // mat.itemsize
    if cols == 1:
        lda = rows
    fn(_COL_MAJOR, trans, rows, cols, alpha, address(mat), lda, address(vec), incx,
       0.0 if start is None else beta, address(out), 1)
    return out
