"""float32 kernels that PyTorch's CPU loop runs, in part or whole, through the C library.

PyTorch's float32 sinh, cosh and atanh run a SIMD body (SLEEF) over pairs of vectors of each
run of the loop, and hand what is left of the run (its length mod runtime.simd_pow.VECTOR_PAIR:
all of a tensor under 32 elements on AVX-512, a 0-dim one, every element of a strided run) to
the C library's float function (`std::sinh(float)`: glibc's sinhf). asinh and acosh have no
vector body: every element is the C library's. glibc's float functions are within an ulp but
not correctly rounded (a quarter of sinhf's results differ from the rounded double), so those
elements are computed by the same functions here (`simd_compiled.libm_map`, or ctypes one
element at a time where nothing is compiled). The vector body stays the caller's kernel: the
double result rounded, which SLEEF's agrees with on ~99.8 % of elements.

Layout of the runs: as runtime.simd_pow's torch_pow (one run over memory for C- or
Fortran-contiguous data, C order otherwise).
"""

import ctypes
import ctypes.util
import functools

import numpy as np

from runtime import simd_compiled
from runtime.simd_pow import coalesced_run, vector_mask, vectorizable

F32 = np.float32


def vector_and_libm(name, vector_fn):
    """A kernel d -> f(d) for numpy data: for float32, vector_fn where PyTorch's loop runs
    vectors and the C library's `name` (sinhf ...) elsewhere; vector_fn for other dtypes."""
    libm = libm_only(name, vector_fn)

    def kernel(d):
        if getattr(d, "dtype", None) != F32 or not d.ndim:
            return libm(d)
        if not d.size:
            return vector_fn(d)
        scalar = _scalar_elements(d)
        if scalar is None:
            return libm(d)
        out = vector_fn(d)
        if scalar.any():
            out[scalar] = libm(d[scalar])
        return out

    return kernel


def libm_only(name, fallback):
    """A kernel d -> f(d) for numpy data: the C library's float function `name` on every
    float32 element (a number or an array), `fallback` for other dtypes."""
    scalar_fn = _c_function(name)

    def kernel(d):
        if getattr(d, "dtype", None) != F32 or scalar_fn is None:
            return fallback(d)
        if d.__class__ is not np.ndarray:  # a float32 number (a 0-dim tensor's value)
            return F32(scalar_fn(d))
        out = simd_compiled.libm_map(name, d)
        if out is None:
            out = np.array([scalar_fn(v) for v in d.reshape(-1)], F32)
        return out.reshape(d.shape)

    return kernel


def _scalar_elements(d):
    """A bool mask of d's shape: the elements PyTorch's loop hands to the C library (None:
    all of them)."""
    n = d.size
    if d.flags.c_contiguous or d.flags.f_contiguous:  # one run, in memory order
        mask = np.empty_like(d, dtype=bool)
        mask.ravel(order="K")[...] = ~vector_mask(n, n)
        return mask
    run, inner = coalesced_run(d.shape, [tuple(st // d.itemsize for st in d.strides)])
    if not vectorizable(inner):
        return None
    return ~vector_mask(n, run).reshape(d.shape)


@functools.cache
def _libm():
    path = ctypes.util.find_library("m")
    return ctypes.CDLL(path) if path else None


def _c_function(name):
    """The C library's float function `name` through ctypes (None where it has none)."""
    fn = getattr(_libm(), name, None)
    if fn is not None:
        fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn
