"""The Tensor `ops` namespace: running a rule with it records a differentiable graph.

This is what makes `create_graph=True` (double backward, Hessian-vector products) work: each
function here is a recorded eager operation, so gradients of gradients come from the same
rules. Python numbers pass through where rules use constants.
"""

import numpy as np

from runtime import ops as F
from runtime.ops import special
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.ops._core import is_tensor, wrap
from runtime.rules import numpy_ops

add = F.add
sub = F.sub
mul = F.mul
neg = F.neg
sin = F.sin
cos = F.cos
sinh = special.sinh
cosh = special.cosh
erf = special.erf
exp = F.exp
sigmoid = F.sigmoid
conj = F.conj
view_as_complex = F.view_as_complex
real = F.real
imag = F.imag


def is_complex(x):
    return x.is_complex() if is_tensor(x) else isinstance(x, complex)
log = F.log
sign = F.sign
sgn = F.sgn
abs = F.abs
eq = F.eq
gt = F.gt
ge = F.ge
lt = F.lt
le = F.le
logical_and = F.logical_and
logical_or = F.logical_or
isnan = F.isnan
matmul = F.matmul
masked_fill = F.masked_fill
outer = F.outer
cross = F.linalg_cross
log_scalar = numpy_ops.log_scalar
reshape = F.reshape
unsqueeze = F.unsqueeze
permute = F.permute
select = F.select
narrow = F.narrow
cat = F.cat
stack = F.stack
diagonal = F.diag


def div(a, b):
    return F.div(a, b) if is_tensor(a) else F.mul(F.reciprocal(b), a)


def rdiv(c, x):
    numpy_ops.rdiv(c, np.empty((0,), x.dtype.np))  # PyTorch's dtype check
    return F.mul(F.reciprocal(x), c)


def pow(x, e):
    return F.pow(x, e)


def rsub(x, c):
    return F.rsub(x, c)


def where(cond, a, b):
    return F.where(cond, a, b)


def zeros_like(x):
    return wrap(np.zeros(x._data.shape, x._dtype.np), x._dtype)


def zeros(shape, like):
    return wrap(np.zeros(shape, like._dtype.np), like._dtype)


def cast_like(x, like):
    return F.to_dtype(x, like._dtype)


def cast(x, np_dtype):
    from runtime import dtypes

    if x._dtype.is_complex and np.dtype(np_dtype).kind != "c":
        x = F.real(x)  # a real input's share of a complex gradient (as numpy_ops.cast)
    return F.to_dtype(x, dtypes.from_numpy(np_dtype))


def sum(x):
    return F.sum(x)


def sum_dim(x, dim, keepdim):
    return F.sum(x, dim, keepdim)


def mean(x, dims, keepdim):
    return F.mean(x, dims, keepdim)


def shape(x):
    # rules also ask for the shape of constants the forward pass saved as numpy arrays
    return x._data.shape if is_tensor(x) else np.shape(x)


def ndim(x):
    return x._data.ndim if is_tensor(x) else np.ndim(x)


def expand(x, shape):
    return F.expand(x, shape)


def swapaxes(x, d0, d1):
    return F.transpose(x, d0, d1)


def mT(x):
    return F.transpose(x, -2, -1)


def sum_to(g, shape):
    gshape = g._data.shape
    if gshape == shape:
        return g if shape else F.sum(g)  # as numpy_ops.sum_to: to shape () always a sum
    from runtime.rules.numpy_ops import broadcast_axes

    return F.reshape(F.sum(g, broadcast_axes(gshape, shape), True), shape)


def getitem(x, key):
    return F.getitem(x, _tensor_key(key))


def _tensor_key(key):
    if isinstance(key, tuple):
        return tuple(_tensor_key(k) for k in key)
    if isinstance(key, np.ndarray):
        return wrap(key, None)
    return key


def flip(x, dim):
    """Reverse `x` along `dim`, recorded as an index so it stays differentiable."""
    index = wrap(np.arange(x._data.shape[dim] - 1, -1, -1), None)
    return F.getitem(x, (slice(None),) * dim + (index,))


def any_zero(x):
    return bool(np.any(x._data == 0))


def cumsum(x, dim):
    return F.cumsum(x, dim)


def logcumsumexp(x, dim):
    from runtime.ops.scans import logcumsumexp as kernel

    return kernel(x, dim)


def lowest(x):
    return numpy_ops.lowest(x._data)


def cumprod(x, dim):
    return F.cumprod(x, dim)


def prod_dim(x, dim, keepdim):
    return F.prod(x, dim, keepdim)


def cumprod_zeros_grad(g, x, result, dim):
    """None: on Tensors cumprod's rule records PyTorch's create_graph form."""
    return None


# -- scatters: recorded primitives whose rules are the matching gathers ------------------------

def _scatter(name, prim, x, data, args):
    out = wrap(data, x._dtype)
    if any_requires_grad((x,)):
        record(node_class(name, prim), (x,), out, args)
    return out


def embed(g, shape, key):
    data = np.zeros(shape, g._dtype.np)
    data[key] = g._data
    return _scatter("SelectBackwardBackward0", "embed", g, data, (key,))


def embed_add(g, shape, key):
    data = np.zeros(shape, g._dtype.np)
    np.add.at(data, key, g._data)
    return _scatter("IndexBackwardBackward0", "embed_add", g, data, (key,))


def embed_view(g, base_shape, steps):
    data = numpy_ops.embed_view(g._data, base_shape, steps)
    return _scatter("AsStridedScatterBackward0", "embed_view", g, data, (base_shape, steps))


def view_region(g, base_shape, steps):
    data = numpy_ops.view_region(g._data, base_shape, steps)
    return _scatter("AsStridedBackward0", "view_replay", g, data, (base_shape, steps))


def fill_at(g, key, value):
    return F.index_put(g, key, value)


def scatter_dim(g, dim, indices, shape):
    data = np.zeros(shape, g._dtype.np)
    np.put_along_axis(data, indices, g._data, axis=dim)
    return _scatter("ScatterBackward0", "scatter_dim", g, data, (dim, indices, shape))


def gather_dim(g, dim, indices):
    data = np.take_along_axis(g._data, indices, axis=dim)
    return _scatter("GatherBackward0", "gather_dim", g, data, (dim, indices, g._data.shape))


def diag_embed(g, shape):
    return F.diag(g)


def threshold_backward(g, result):
    """g where result > 0, else 0; recorded with both inputs, as PyTorch records it."""
    data = np.where(result._data <= 0, 0.0, g._data).astype(g._dtype.np)
    out = wrap(data, g._dtype)
    if any_requires_grad((g, result)):
        record(node_class("ThresholdBackwardBackward0", "threshold_backward"), (g, result),
               out, (save_input(result),))
    return out


def prod_others(x, result, dims):
    """Product of the other elements of each reduced slice, from recorded ops so it can be
    differentiated again. Without zeros that is result / x; with zeros, as PyTorch's
    prod_safe_zeros_backward: the exclusive products from the left times those from the
    right (cumprod of a 1 and the slice but its last, and the same of the slice flipped),
    which stays exact, rounds as PyTorch's and is laid out as x (a transposed product of
    the slice with each element replaced by 1 was: fuzz seed 3906262129292)."""
    if not np.any(x._data == 0):
        return F.div(result, x)
    nd = x._data.ndim
    axes = tuple(range(nd)) if dims is None else tuple(dims)
    if len(axes) != 1 and nd:
        flat = F.reshape(x, (-1,))
        return F.reshape(prod_others(flat, F.prod(flat, 0, True), (0,)), x._data.shape)
    if nd == 0:
        return F.div(result, x) if x._data != 0 else wrap(np.ones((), x._dtype.np), x._dtype)
    from runtime.ops.indexing import flip

    d = axes[0] % nd
    n = x._data.shape[d]
    if n == 1:  # the empty product
        return wrap(np.ones(x._data.shape, x._dtype.np), x._dtype)
    ones = wrap(np.ones(x._data.shape[:d] + (1,) + x._data.shape[d + 1:], x._dtype.np),
                x._dtype)
    left = F.cumprod(F.cat([ones, F.narrow(x, d, 0, n - 1)], d), d)
    right = F.cumprod(F.cat([ones, flip(F.narrow(x, d, 1, n - 1), d)], d), d)
    return F.mul(left, flip(right, d))


from runtime.tensor_ops_breadth import *  # noqa: E402,F401,F403  (issue 16 families)
def im2col(x, geom):
    from runtime.rules.conv import im2col_array

    return _scatter("Im2ColBackward0", "im2col", x, im2col_array(x._data, geom),
                    (x._data.shape, geom))


def col2im(cols, x_shape, geom):
    from runtime.rules.conv import col2im_array

    return _scatter("Col2ImBackward0", "col2im", cols, col2im_array(cols._data, x_shape, geom),
                    (geom,))


def norm_stats(x, axes, eps, saved):
    """(mean, invstd) of x over `axes`, recomputed as recorded operations so that double
    backward through a normalisation differentiates its statistics (see rules/norm.py)."""
    mean = F.mean(x, axes, True)
    centered = F.sub(x, mean)
    return mean, F.rsqrt(F.add(F.mean(F.mul(centered, centered), axes, True), eps))


def softmax_grad(g, result, dim):
    """None: on Tensors softmax's rule records its own formula (double backward)."""
    return None


def log_softmax_grad(g, result, dim):
    """None: on Tensors log_softmax's rule records its own formula (double backward)."""
    return None


def batch_norm_grads(g, x, w, stats, training, needs):
    """None: on Tensors batch norm's rule records its own formula (double backward)."""
    return None


def flash_attention_grads(g, q, k, v, out, lse, scale):
    """The fused attention kernel's gradients (rules/attention.py) as values whose own
    derivative is a NotImplemented node, raising only when a backward reaches it: PyTorch has
    no derivative of this kernel's backward either."""
    from runtime.ops.elementwise import NotImplementedNode

    inputs = (g, q, k, v)
    data = [getattr(t, "_data", t) for t in inputs]
    grads = numpy_ops.flash_attention_grads(*data, out, lse, scale)
    results = tuple(wrap(x, q._dtype) for x in grads)
    tensors = tuple(t for t in inputs if is_tensor(t))
    if any_requires_grad(tensors):
        for r in results:
            record(NotImplementedNode, tensors, r)
    return results


def gelu_slope(x, approximate):
    """None: on Tensors GELU's rule records its own formula (double backward)."""
    return None


def layer_norm_grads(g, x, w, stats, axes, needs):
    """None: on Tensors layer norm's rule records its own formula (double backward)."""
    return None


def conv_patches(x, geom, saved):
    """A convolution's input patches, recomputed as a recorded im2col (double backward)."""
    return im2col(x, geom)


def conv_input_grad(g, w, geom, x_shape):
    """None: on Tensors the convolution rule takes the recorded col2im route."""
    return None


def conv_param_grads(g2, patches, with_bias):
    """A convolution's (weight, bias) gradients as recorded operations (double backward)."""
    gw2 = None if patches is None else sum_dim(matmul(g2, mT(patches)), 0, False)
    gb = reshape(sum_dim(sum_dim(g2, 3, False), 0, False), (-1,)) if with_bias else None
    return gw2, gb
