"""The numpy `ops` namespace: running a rule with it is the eager (non-recording) backward.

Every function takes and returns numpy arrays (or numpy scalars for 0-dim results); Python
numbers are accepted wherever a rule passes a constant.
"""

import functools
import math
import sys

import numpy as np

from runtime.cascade_sum import mean_like_torch, sum_like_torch
from runtime import cpu_capability, mkl
from runtime.libm_float import vector_and_libm
from runtime.fma import fma as _fma, one_minus_square64 as _one_minus_square64
from runtime.mkl import torch_kernel
from runtime.simd_pow import torch_pow



def via_double(np_fn):
    """np_fn for float32 data computed in float64 and rounded, the fallback where MKL is not
    used (runtime/mkl.py): PyTorch's float32 exp, log, tanh, tan, ... (MKL's vector math in
    its high-accuracy mode, within an ulp) agree with the rounded float64 result far more often
    than numpy's float32 kernels do (99 % of elements against 60-75 %; sin and cos stay on
    numpy's float32 kernels: 87 % against 95 % is not worth their doubled cost). A float32 number
    (a 0-dim tensor's value) goes through the math module, 4x faster than numpy's casts."""
    scalar_fn = _MATH.get(np_fn)

    def kernel(d):
        if d.__class__ is np.float32 and scalar_fn is not None:
            try:
                return np.float32(scalar_fn(float(d)))
            except (ValueError, OverflowError):  # math refuses what numpy answers with inf/nan
                pass
        if getattr(d, "dtype", None) == np.float32:
            return np_fn(d.astype(np.float64)).astype(np.float32)
        return np_fn(d)

    return kernel


_MATH = {np.sin: math.sin, np.cos: math.cos, np.tan: math.tan, np.exp: math.exp,
         np.log: math.log, np.tanh: math.tanh, np.log1p: math.log1p, np.expm1: math.expm1,
         np.sinh: math.sinh, np.cosh: math.cosh, np.arcsin: math.asin, np.arccos: math.acos,
         np.arctan: math.atan}


# PyTorch's kernels of these are MKL's vector math: its backward formulas (sin's cos, exp's
# own result ...) call them too
sin = torch_kernel("sin", np.sin)
cos = torch_kernel("cos", np.cos)
# PyTorch's float32 sinh and cosh are SLEEF's on its vector body, the C library's elsewhere
sinh = vector_and_libm("sinhf", via_double(np.sinh))
cosh = vector_and_libm("coshf", via_double(np.cosh))
abs = np.abs
eq = np.equal
gt = np.greater
ge = np.greater_equal
lt = np.less
le = np.less_equal
logical_and = np.logical_and
logical_or = np.logical_or
isnan = np.isnan
log = torch_kernel("log", np.log)


def masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value, x.dtype), x)


def matmul(a, b, start=None):
    """np.matmul (plus `start`, broadcast to the product's shape and added first, where given:
    addmm's input). A float32 matrix product of the sizes where MKL's sgemm (PyTorch's) adds
    each output as fused multiply-add chains in k order (neither factor a row or a pair of
    columns: measured) is summed as MKL sums it: the shared dimension cut into blocks
    (`k_blocks`), each block one chain from zero, the blocks' totals added to `start` one
    after the other. OpenBLAS chains a block of up to MKL_K_BLOCK in the same order when the
    left factor is column-major (with a row-major one its kernels for output widths that are
    not a multiple of 16 regroup the sum: 40 % of random shapes differ). A small batched
    product is added as PyTorch's bmm adds it (`_small_bmm`). With MKL, 2-d products are
    MKL's own, as PyTorch calls it (`_mkl_product`), and all of the above is the fallback."""
    product = _mkl_product(a, b, start)
    if product is not None:
        return product
    if _is_small_bmm(a, b):
        product = _small_bmm(a, b)
    elif _is_outer_mm(a, b):
        # MKL's gemm of one column by one row is each product alone (a product of -0 stays
        # -0); OpenBLAS adds it to +0
        product = np.multiply(a, b)
    elif not _is_float32_mm(a, b):
        product = np.matmul(a, b)
    elif a.shape[1] <= MKL_K_BLOCK or b.shape[1] <= MKL_BLOCKED_COLUMNS:
        return blocked_matmul(np.asfortranarray(a), b, start)
    else:  # MKL blocks these otherwise (not followed); C-ordered as PyTorch lays them out
        product = _wide_matmul(a, b)
        return np.ascontiguousarray(product) if start is None else \
            np.add(start, product, order="C")
    return product if start is None else start + product


def _mkl_product(a, b, start):
    """A float matrix-matrix or matrix-vector product by MKL's gemm or gemv, called as
    PyTorch's addmm and addmv call them (runtime/mkl.py: all of the products and Linear layers
    tried equal PyTorch's bits, where the emulation below gives 92 % of float32 and 27-52 % of
    float64 ones, a row, a column or a matrix-vector product 11-50 %); None without MKL."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray or a.ndim != 2:
        return None
    if b.ndim == 2:
        return mkl.gemm(a, b, start)
    return mkl.gemv(a, b, start) if b.ndim == 1 else None


def _is_float32_mm(a, b):
    """A float32 matrix product of the sizes where MKL's sgemm chains each output in k order
    (neither factor a row or a pair of columns: measured)."""
    return (a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim == 2 == b.ndim
            and a.dtype == np.float32 and b.dtype == np.float32 and a.shape[0] > 1
            and b.shape[1] > 2)


def _wide_matmul(a, b):
    """a @ b for a product whose summation order is not followed: as the transposed view of
    b.T @ a.T where OpenBLAS runs that faster (a Linear's C-ordered input by its F-ordered
    transposed weight with fewer rows than columns: 10-30 %, the same bits as np.matmul)."""
    if a.flags.c_contiguous and b.flags.f_contiguous and a.shape[0] < b.shape[1]:
        return np.matmul(b.T, a.T).T
    return np.matmul(a, b)


@functools.cache
def k_blocks(k):
    """(start, stop) of each block MKL's sgemm cuts a shared dimension of k into (measured
    against PyTorch 2.13 for k up to 2000): MKL_K_BLOCK at a time while more than twice that
    is left, then what is left in two halves, the larger first."""
    bounds, pos = [0], 0
    while k - pos > 2 * MKL_K_BLOCK:
        pos += MKL_K_BLOCK
        bounds.append(pos)
    if k - pos > MKL_K_BLOCK:
        bounds.append(pos + (k - pos + 1) // 2)
    bounds.append(k)
    return tuple(zip(bounds, bounds[1:]))


def blocked_matmul(a, b, start=None):
    """a @ b (+ start) with each output's k_blocks chained in turn and added in order."""
    if a.shape[1] <= MKL_K_BLOCK and start is None:  # one block: the chain
        return np.matmul(a, b)
    total = None
    if start is not None:  # a fresh C-ordered copy of start (np.broadcast_to costs ~5 us)
        total = np.empty((a.shape[0], b.shape[1]), np.float32)
        np.copyto(total, start, casting="unsafe")
    for lo, hi in k_blocks(a.shape[1]):
        part = np.matmul(a[:, lo:hi], b[lo:hi])
        total = part if total is None else np.add(total, part, out=total)
    return total


MKL_K_BLOCK = 384
MKL_BLOCKED_COLUMNS = 128  # the widest output the k-blocking was measured to hold for
# PyTorch's bmm (and baddbmm, and their gradients) of float32/float64 batches below this many
# multiply-adds per batch entry runs its own loop instead of BLAS
SMALL_BMM = 400
_OPMATH = (np.dtype(np.float32), np.dtype(np.float64))


def _is_outer_mm(a, b):
    return (a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim == 2 == b.ndim
            and a.shape[1] == 1 == b.shape[0] and a.shape[0] > 1 and b.shape[1] > 1
            and a.dtype == b.dtype and a.dtype in _OPMATH)


def _is_small_bmm(a, b):
    return (a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim == 3 == b.ndim
            and a.dtype == b.dtype and a.dtype in _OPMATH and a.shape[0] == b.shape[0]
            and a.shape[1] * a.shape[2] * b.shape[2] < SMALL_BMM and a.shape[2] == b.shape[1])


def _small_bmm(a, b):
    """PyTorch's small-bmm loop: each output starts at +0 and adds the k products in order,
    each product rounded on its own (no fused multiply-add)."""
    out = np.zeros(a.shape[:2] + b.shape[2:], a.dtype)
    for k in range(a.shape[2]):
        out += a[:, :, k, None] * b[:, None, k, :]
    return out


outer = np.outer


def cross(a, b, dim):
    """The cross product along `dim`, each component a[i] b[j] - a[j] b[i] (PyTorch's order)."""
    a, b = np.broadcast_arrays(a, b)
    a, b = np.moveaxis(a, dim, -1), np.moveaxis(b, dim, -1)
    out = np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                    a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                    a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)
    return np.moveaxis(out, -1, dim)


def sgn(d):
    """PyTorch's sgn: sign for real arrays, z / |z| (0 at 0) for complex ones."""
    if d.dtype.kind != "c":
        return sign(d)
    magnitude = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(magnitude == 0, d.dtype.type(0), d / magnitude).astype(d.dtype)


def sign(d):
    """PyTorch's sign: 0 at nan (numpy's is nan), and a bool stays itself."""
    if d.dtype == np.bool_:
        return np.array(d)
    r = np.sign(d)
    if r.dtype.kind == "f":
        nan = np.isnan(r)
        if nan.any():
            r = np.where(nan, 0, r)
    return r


def log_scalar(c):
    """log of a Python number, following IEEE like the tensor log: -inf at 0, nan below."""
    if c > 0:
        return math.log(c)
    return float("-inf") if c == 0 else float("nan")


# Temporary elision, as numpy does for `a * b + c` written with operators: a large array
# that nothing but this call refers to (refcount 2: our parameter and getrefcount's) is a
# temporary produced inside a rule, so the result may overwrite it instead of allocating.
_refcount = sys.getrefcount
_ndarray = np.ndarray
_SCALARS = (float, int)
_ELIDE_MIN = 1 << 14


def _reusable(a, other):
    return (a.__class__ is _ndarray and a.size >= _ELIDE_MIN and a.base is None
            and a.flags.writeable and (other.__class__ in _SCALARS
                                       or (other.dtype == a.dtype
                                           and (other.shape == a.shape or other.ndim == 0))))


# Python operators rather than ufunc calls: on numpy scalars (what 0-dim values are during
# backward) they are an order of magnitude faster, and on arrays they cost the same.

def add(a, b):
    if a.__class__ is _ndarray and _refcount(a) == 2 and _reusable(a, b):
        return np.add(a, b, out=a)
    if b.__class__ is _ndarray and _refcount(b) == 2 and _reusable(b, a):
        return np.add(a, b, out=b)
    return a + b


_BOOL = np.dtype(bool)


def _refuse_bool(a, b=None):
    """PyTorch's derivative formulas subtract and negate with its tensor operators, which
    refuse a bool tensor (a bool exponent of pow, a bool weight of lerp, a bool atan2
    operand): the backward raises there, and so does ours."""
    if getattr(a, "dtype", None) is _BOOL or getattr(b, "dtype", None) is _BOOL:
        raise RuntimeError("a derivative formula of this op subtracts or negates a bool "
                           "tensor, which is not supported: convert the bool operand to a "
                           "number dtype before the op")


def sub(a, b):
    _refuse_bool(a, b)
    if a.__class__ is _ndarray and _refcount(a) == 2 and _reusable(a, b):
        return np.subtract(a, b, out=a)
    if b.__class__ is _ndarray and _refcount(b) == 2 and _reusable(b, a):
        return np.subtract(a, b, out=b)
    return a - b


def mul(a, b):
    if a.__class__ is _ndarray and _refcount(a) == 2 and _reusable(a, b):
        return np.multiply(a, b, out=a)
    if b.__class__ is _ndarray and _refcount(b) == 2 and _reusable(b, a):
        return np.multiply(a, b, out=b)
    return a * b


def div(a, b):
    if a.__class__ is _ndarray and _refcount(a) == 2 and _reusable(a, b):
        return np.true_divide(a, b, out=a)
    if b.__class__ is _ndarray and _refcount(b) == 2 and _reusable(b, a):
        return np.true_divide(a, b, out=b)
    return a / b


def rdiv(c, x):
    """A number divided by a tensor as PyTorch's formulas compute it: in the tensor's dtype,
    which refuses the float quotient when that dtype is bool or integer."""
    if getattr(x, "dtype", _BOOL).kind in "biu":
        raise RuntimeError(f"a derivative formula of this op divides a number by a tensor of "
                           f"dtype {getattr(x, 'dtype', type(x).__name__)} in that dtype, "
                           f"where the float quotient cannot be stored")
    return c / x


def neg(x):
    _refuse_bool(x)
    if x.__class__ is _ndarray and _refcount(x) == 2 and _reusable(x, 0.0):
        return np.negative(x, out=x)
    return -x


def one_minus_square(t):
    """1 - t * t as PyTorch's tanh_backward computes it: its AVX2 and AVX-512 builds fuse
    the product into the difference (one rounding, runtime/cpu_capability.py), its default
    build rounds twice."""
    if t.__class__ is _ndarray and cpu_capability.has_fma():
        if t.dtype == np.float32:
            return _fma(-t, t, np.float32(1))
        if t.dtype == np.float64:
            return _one_minus_square64(t)
    return rsub(mul(t, t), 1)


def rsub(x, c):
    _refuse_bool(x)
    if x.__class__ is _ndarray and _refcount(x) == 2 and _reusable(x, c):
        return np.subtract(c, x, out=x)
    return c - x


_BITS = {2: np.int16, 4: np.int32, 8: np.int64}


def where(cond, a, b):
    # Rules mostly ask for "a where cond, else +0.0". numpy's where branches per element,
    # which a random mask makes slow; masking the bits of `a` is exact (nan and -0.0 kept
    # where cond holds, +0.0 elsewhere) and several times faster.
    if b.__class__ is float and b == 0.0 and math.copysign(1.0, b) > 0:
        if _maskable(cond, a):
            return _keep_or_zero(cond, a)
    elif a.__class__ is float and a == 0.0 and math.copysign(1.0, a) > 0:
        if _maskable(cond, b):
            return _keep_or_zero(np.logical_not(cond), b)
    return np.where(cond, a, b)


def _maskable(cond, x):
    return (x.__class__ is _ndarray and x.dtype.kind == "f" and cond.__class__ is _ndarray
            and cond.dtype == np.bool_ and cond.shape == x.shape and x.size >= 64)


def _keep_or_zero(cond, x):
    bits = _BITS[x.itemsize]
    keep = -cond.astype(bits)  # all ones where cond holds, zeros elsewhere
    return np.bitwise_and(x.view(bits), keep, out=keep).view(x.dtype)


def zeros_like(x):
    return np.zeros(np.shape(x), x.dtype)


def zeros(shape, like):
    return np.zeros(shape, like.dtype)


def cast_like(x, like):
    return np.asarray(x, like.dtype)


def cast(x, np_dtype):
    if x.dtype == np_dtype:
        return x
    if x.dtype.kind == "c" and np.dtype(np_dtype).kind != "c":
        x = x.real  # a real input's share of a complex gradient
    return x.astype(np_dtype)


def conj(x):
    dtype = getattr(x, "dtype", None)
    if dtype is None:  # a Python number
        return x.conjugate() if x.__class__ is complex else x
    return np.conj(x) if dtype.kind == "c" else x


real = np.real
imag = np.imag


def is_complex(x):
    return np.asarray(x).dtype.kind == "c"


def view_as_complex(g):
    """(..., 2) real pairs -> complex, the inverse of view_as_real."""
    g = np.asarray(g)
    return g[..., 0] + 1j * g[..., 1] if g.dtype == np.float64 else \
        (g[..., 0] + np.complex64(1j) * g[..., 1]).astype(np.complex64)


def sum(x):
    return sum_like_torch(x)


def mean(x, dims, keepdim):
    return mean_like_torch(x, axis=dims, keepdims=keepdim)


# x ** e for the exponents PyTorch's CPU kernel computes without pow(): products and
# reciprocals of x rounded step by step, so float results agree to the bit.
_POWER_BY_PRODUCTS = {
    0: lambda x: np.ones_like(x),
    1: lambda x: np.array(x, copy=True),
    0.5: np.sqrt,
    2: lambda x: x * x,
    3: lambda x: x * x * x,
    -2: lambda x: 1 / (x * x),
    -1: lambda x: 1 / x,
    -0.5: lambda x: 1 / np.sqrt(x),
}


def pow(x, e):
    """np.power(x, e), with PyTorch's special cases for Python-number exponents of floats and
    float32 powers computed as its kernel computes them (runtime/simd_pow.py)."""
    dtype = getattr(x, "dtype", None)
    if e.__class__ in _SCALARS:
        special = _POWER_BY_PRODUCTS.get(e)
        if special is not None and dtype is not None and dtype.kind == "f" and dtype.itemsize >= 4:
            return special(x).astype(dtype, copy=False)
        if dtype == np.float32 and e.__class__ is not complex:
            return torch_pow(x, e)
    elif dtype == np.float32 and getattr(e, "dtype", None) == np.float32:
        return torch_pow(x, e)
    return np.power(x, e)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ndarray methods where the argument is an array: numpy's function forms add a Python
# wrapper call each (a tenth of a small backward pass)

def shape(x):
    return x.shape if x.__class__ is _ndarray else np.shape(x)


def ndim(x):
    return x.ndim if x.__class__ is _ndarray else np.ndim(x)


def reshape(x, shape):
    return x.reshape(shape) if x.__class__ is _ndarray else np.reshape(x, shape)


def expand(x, shape):
    return np.broadcast_to(x, shape)


def unsqueeze(x, dim):
    return np.expand_dims(x, dim)


def swapaxes(x, d0, d1):
    return np.swapaxes(x, d0, d1)


def permute(x, perm):
    return np.transpose(x, perm)


def mT(x):
    if x.__class__ is _ndarray:
        return x.T if x.ndim == 2 else x.swapaxes(-1, -2)
    return np.swapaxes(x, -1, -2)


def broadcast_axes(gshape, shape):
    """The axes of `gshape` that broadcasting added or stretched, starting from `shape`."""
    lead = len(gshape) - len(shape)
    return tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)


shape_of = shape


def sum_to(g, shape):
    """Sum `g` over the axes that broadcasting added or stretched to reach `shape`; to shape
    () always a sum, so a new array (PyTorch's sum_to: the gradient of x.expand(()) is no
    view of its incoming gradient)."""
    gshape = shape_of(g)
    if gshape == shape:
        return g if shape else np.array(g)
    if len(gshape) == 2 and shape == gshape[1:]:  # a bias's gradient: column sums
        return sum_like_torch(g, axis=0)
    return np.reshape(sum_like_torch(g, axis=broadcast_axes(gshape, shape), keepdims=True), shape)


def getitem(x, key):
    return x[key]


def embed(g, shape, key):
    out = np.zeros(shape, g.dtype)
    out[key] = g
    return out


def embed_add(g, shape, key):
    out = np.zeros(shape, g.dtype)
    np.add.at(out, key, g)
    return out


def fill_at(g, key, value):
    out = np.array(g)
    out[key] = value
    return out


def narrow(x, dim, start, length):
    index = [slice(None)] * np.ndim(x)
    index[dim] = slice(start, start + length)
    return x[tuple(index)]


def select(x, dim, i):
    """x at index i along dim: a view, as PyTorch's select (a gradient it passes on may
    stay a view of an expanded cotangent)."""
    return x[(slice(None),) * (dim % x.ndim) + (i,)]


def cat(parts, dim):
    return np.concatenate(parts, axis=dim)


def stack(parts, dim):
    return np.stack(parts, axis=dim)


def scatter_dim(g, dim, indices, shape):
    out = np.zeros(shape, g.dtype)
    if len(shape) == 2 and dim == 1 and indices.ndim == 2:  # a loss's rows: put_along_axis's
        out[np.arange(indices.shape[0])[:, None], indices] = g  # own indexing, written out
    else:
        np.put_along_axis(out, indices, g, axis=dim)
    return out


def gather_dim(g, dim, indices):
    return np.take_along_axis(g, indices, axis=dim)


def diag_embed(g, shape):
    out = np.zeros(shape, g.dtype)
    np.fill_diagonal(out, g)
    return out


def diagonal(g):
    return np.diagonal(g).copy()


def prod_others(x, result, dims):
    """For each element, the product of the other elements of its reduced slice."""
    if np.all(x != 0):
        return result / x
    axes = tuple(range(np.ndim(x))) if dims is None else dims
    moved = np.moveaxis(x, axes, tuple(range(-len(axes), 0)))
    flat = moved.reshape(moved.shape[: moved.ndim - len(axes)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    # contiguous, as PyTorch's cat and cumprod make it (the moved view laid the gradient
    # out transposed: fuzz seed 3906262129292)
    return np.ascontiguousarray(np.moveaxis(others, tuple(range(-len(axes), 0)), axes))


_VIEW_STEPS = {
    "getitem": lambda a, key: a[key],
    "reshape": lambda a, shape: a.reshape(shape),
    "permute": lambda a, perm: a.transpose(perm),
    "expand": lambda a, shape: _expand_view(a, shape),
    "diagonal": lambda a, _: np.diagonal(a),
    "unbind": lambda a, dim_i: a[(slice(None),) * dim_i[0] + (dim_i[1],)],
    "view_as_real": lambda a, _: as_real_view(a),
}


def _expand_view(a, shape):
    """np.broadcast_to, writable where `a` is (a region of a gradient to write into)."""
    b = np.broadcast_to(a, shape)
    if not a.flags.writeable:
        return b
    return np.lib.stride_tricks.as_strided(a, b.shape, b.strides)


def shares_memory_within(a):
    """Whether elements of `a` share memory (an expanded region: zero strides)."""
    return 0 in a.strides and a.size > 1 and any(
        st == 0 and n > 1 for st, n in zip(a.strides, a.shape))


def as_real_view(z):
    """The (..., 2) float view of complex array `z`'s memory: real and imaginary parts."""
    part = z.real
    return np.lib.stride_tricks.as_strided(part, z.shape + (2,),
                                           part.strides + (part.itemsize,))


def replay_view(array, steps):
    """Apply a view's recorded steps (kind, arg) to an array shaped like its base."""
    for kind, arg in steps:
        array = _VIEW_STEPS[kind](array, arg)
    return array


def view_region(g, base_shape, steps):
    """The part of `g` (shaped like a view's base) that the view sees, copied."""
    return np.array(replay_view(g, steps))


def embed_view(g, base_shape, steps):
    out = np.zeros(base_shape, g.dtype)
    region = replay_view(out, steps)
    if region.flags.writeable and not shares_memory_within(region):
        region += g
    else:  # an expand among the steps: the elements sharing memory sum their gradients
        where = replay_view(np.arange(out.size).reshape(base_shape), steps)
        np.add.at(out.reshape(-1), where.reshape(-1), np.broadcast_to(g, where.shape).reshape(-1))
    return out


exp = torch_kernel("exp", np.exp)


def sum_dim(x, dim, keepdim):
    return sum_like_torch(x, axis=dim, keepdims=keepdim)


def any_zero(x):
    return bool(np.any(np.equal(x, 0)))


def flip(x, dim):
    return np.flip(x, dim).copy()  # PyTorch's flip is a new tensor: no negative strides


# PyTorch's CPU scans (cumsum, cumprod) run in the accumulate type: float32 and complex64
# in double precision, float16 in float32, each output rounded once
SCAN_ACCUMULATE = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128,
                   np.dtype(np.float16): np.float32}


def scan(fn, x, axis, dtype=None):
    """fn (np.cumsum or np.cumprod) of x along axis into `dtype` (x's by default), summed or
    multiplied as PyTorch's CPU kernel does (SCAN_ACCUMULATE)."""
    dtype = np.dtype(dtype or x.dtype)
    wide = SCAN_ACCUMULATE.get(dtype)
    if wide is None:
        return fn(x, axis=axis, dtype=dtype)
    return fn(x, axis=axis, dtype=wide).astype(dtype)


def cumsum(x, dim):
    return scan(np.cumsum, x, dim)


def logcumsumexp(x, dim):
    with np.errstate(all="ignore"):
        return np.logaddexp.accumulate(x, axis=dim)


def lowest(x):
    """The most negative finite value of x's dtype (PyTorch's stand-in for log 0)."""
    return x.dtype.type(np.finfo(x.dtype).min)


def cumprod(x, dim):
    return scan(np.cumprod, x, dim)


def prod_dim(x, dim, keepdim):
    return np.prod(x, axis=dim, keepdims=keepdim)


def cumprod_zeros_grad(g, x, result, dim):
    """PyTorch's gradient of cumprod along `dim` for input holding zeros, without
    create_graph: before each line's first zero z1, the reversed cumsum of result * g divided
    by x; at z1, prod(x[:z1]) times sum_j g_j * prod(x[z1+1:j+1]) over z1 <= j < z2 (the
    second zero); after z1, zero. Masked as PyTorch masks, so its infs and nans are PyTorch's."""
    zeros = np.cumsum(x == 0, axis=dim)
    before, first_run = zeros == 0, zeros == 1
    with np.errstate(all="ignore"):
        w = np.where(before, result * g, 0)
        out = np.where(before, flip(cumsum(flip(w, dim), dim), dim) / x, 0).astype(g.dtype)
        z1 = np.argmax(first_run, axis=dim, keepdims=True)  # 0 where a line has no zero
        first = np.zeros_like(first_run)
        np.put_along_axis(first, z1, True, axis=dim)
        first &= first_run
        products = np.cumprod(np.where(first_run & ~first, x, 1), axis=dim)
        total = sum_dim(products * np.where(first_run, g, 0), dim, True)
        lead = np.take_along_axis(result, np.maximum(z1 - 1, 0), axis=dim)
        total = total * np.where(z1 == 0, 1, lead)
    return np.where(first, total, out).astype(g.dtype, copy=False)


def threshold_backward(g, result):
    return where(np.less_equal(result, 0), 0.0, g)  # nan results pass g, as in PyTorch


from runtime.rules.numpy_breadth import *  # noqa: E402,F401,F403  (issue 16 families)
from runtime.rules.conv import col2im_array as col2im, im2col_array as im2col  # noqa: E402,F401
from runtime.rules.conv import conv_input_grad_array as conv_input_grad  # noqa: E402,F401


def conv_patches(x, geom, saved):
    """A convolution's input patches: those its forward pass kept (see rules/conv.py)."""
    return im2col(x, geom) if saved is None else saved


def conv_param_grads(g2, patches, with_bias):
    """(weight, bias) gradients of a convolution summed as PyTorch's CPU kernel sums them
    (rules/fma_chain.py), or as matmul and sums where that cannot be had."""
    from runtime.rules.fma_chain import conv_param_grads as chained

    exact = chained(g2, patches, with_bias)
    if exact is not None:
        return exact
    gw2 = None if patches is None else np.matmul(g2, np.swapaxes(patches, -1, -2)).sum(0)
    return gw2, g2.sum(3).sum(0).reshape(-1) if with_bias else None


def norm_stats(x, axes, eps, saved):
    """The (mean, invstd) a normalisation's forward pass saved (see rules/norm.py)."""
    return saved


def batch_norm_grads(g, x, w, stats, training, needs):
    """Batch norm's gradients as PyTorch's CPU kernel sums them (rules/batch_norm_cpu.py) for
    contiguous float32 input; None elsewhere (the rule's own formula then)."""
    from runtime.rules import batch_norm_cpu

    if x.dtype != np.float32 or not x.flags.c_contiguous:
        return None
    mean, invstd = (s.reshape(-1) for s in stats)
    return batch_norm_cpu.backward(np.ascontiguousarray(g), x, w, mean, invstd, training, needs)


def layer_norm_grads(g, x, w, stats, axes, needs):
    """Layer norm's gradients as PyTorch's CPU kernel computes them (rules/layer_norm_cpu.py)
    for contiguous float32 input whose statistics that kernel gave; None elsewhere."""
    from runtime.rules import layer_norm_cpu

    part = x.shape[axes[0]:]
    count = math.prod(part)
    mean, rstd = stats
    if not layer_norm_cpu.applies(x, count) or mean.dtype != np.float32 or \
            (w is not None and w.dtype != np.float32):
        return None
    rows = x.reshape(-1, count)
    grads = layer_norm_cpu.backward(np.ascontiguousarray(g, np.float32).reshape(rows.shape),
                                    rows, mean.reshape(-1), rstd.reshape(-1),
                                    None if w is None else w.reshape(-1), needs)
    return tuple(None if v is None else v.reshape(s)
                 for v, s in zip(grads, (x.shape, part, part)))


def flash_attention_grads(g, q, k, v, out, lse, scale):
    """(q_bar, k_bar, v_bar) of PyTorch's fused CPU attention (rules/flash_attention_cpu.py)."""
    from runtime.rules import flash_attention_cpu

    return flash_attention_cpu.backward(np.ascontiguousarray(g), q, k, v, out, lse, scale)


def gelu_slope(x, approximate):
    """GELU's derivative as PyTorch's oneDNN route computes it (dnnl_eltwise.py) for
    contiguous float32 and the erf form; None elsewhere (the rule's formula then)."""
    from runtime import dnnl_eltwise

    if approximate != "none" or not dnnl_eltwise.gelu_applies(x):
        return None
    return dnnl_eltwise.gelu_slope(x)


def softmax_grad(g, result, dim):
    """softmax's gradient as PyTorch's CPU kernel computes it (runtime/simd_softmax.py) for
    float32 along a contiguous last axis; None elsewhere (the rule's formula then)."""
    from runtime import simd_softmax

    if g.dtype != np.float32 or not simd_softmax.applies(result, dim):
        return None
    return simd_softmax.softmax_grad(g, result)


def log_softmax_grad(g, result, dim):
    """log_softmax's gradient as PyTorch's CPU kernel computes it (runtime/simd_softmax.py)
    for float32 along a contiguous last axis; None elsewhere (the rule's formula then)."""
    from runtime import simd_softmax

    if g.dtype != np.float32 or not simd_softmax.applies(result, dim):
        return None
    return simd_softmax.log_softmax_grad(g, result)
