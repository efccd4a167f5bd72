"""Convolution and pooling: the im2col/col2im kernels on numpy and the derivative rules.

A convolution is a matmul against the input's patches ("im2col"): for input (N, C, *S) and
weight (O, C/G, *K), the patches form (N, G, C/G*prod(K), L) with L output positions.
Its rule is three matmuls and a col2im (the transpose of im2col, a scatter-add of patches
back onto the padded input). im2col and col2im are linear and each other's transpose, so
they are primitives with rules too and double backward works through the Tensor namespace.

`geom` describes the convolution on two spatial axes (1-d convolutions are run as 2-d ones of
height 1): (kernel, stride, padding, dilation, groups, spatial_ndim).
"""

import numpy as np

from runtime.rules import rule


def _as2d(shape, ndim):
    """The 4-d shape that a 1-d (N, C, L) input is run as."""
    return shape if ndim == 2 else (shape[0], shape[1], 1, shape[2])


def out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _patches(xp, geom, out_hw):
    """A strided view (N, C, kh, kw, OH, OW) of the padded input's patches."""
    (kh, kw), (sh, sw), _, (dh, dw) = geom[:4]
    n, c = xp.shape[:2]
    s = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (n, c, kh, kw) + out_hw,
        (s[0], s[1], s[2] * dh, s[3] * dw, s[2] * sh, s[3] * sw), writeable=False)


def _out_hw(shape4, geom):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    return (out_size(shape4[2], kh, sh, ph, dh), out_size(shape4[3], kw, sw, pw, dw))


def im2col_array(x, geom, pad_value=0.0):
    """(N, C, *S) -> patches (N, G, C/G*kh*kw, L)."""
    ndim, groups = geom[5], geom[4]
    x4 = x.reshape(_as2d(x.shape, ndim))
    (ph, pw) = geom[2]
    xp = np.pad(x4, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=pad_value)
    hw = _out_hw(x4.shape, geom)
    cols = _patches(xp, geom, hw)
    n, c = x4.shape[:2]
    return np.ascontiguousarray(cols).reshape(n, groups, -1, hw[0] * hw[1])


def col2im_array(cols, x_shape, geom):
    """The transpose of im2col_array: scatter-add patches back onto an input of x_shape."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    n, c, h, w = _as2d(tuple(x_shape), geom[5])
    oh, ow = _out_hw((n, c, h, w), geom)
    cols = cols.reshape(n, c, kh, kw, oh, ow)
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh,
               j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
    return xp[:, :, ph:ph + h, pw:pw + w].reshape(x_shape)


@rule("im2col")
def im2col(ops, g, needs, x_shape, geom):
    return (ops.col2im(g, x_shape, geom),)


@rule("col2im")
def col2im(ops, g, needs, geom):
    return (ops.im2col(g, geom),)


@rule("convolution")
def convolution(ops, g, needs, x, w, geom, has_bias, cols=None):
    """out[n, g, o, l] = sum_k w2[g, o, k] * cols[n, g, k, l] (+ bias[o]). `cols` are the
    patches the forward pass made, if it kept them (ops.conv_patches reuses them on numpy)."""
    n, groups = ops.shape(x)[0], geom[4]
    w_shape = ops.shape(w)
    w2 = ops.reshape(w, (groups, w_shape[0] // groups, -1))
    g2 = ops.reshape(g, (n, groups, w_shape[0] // groups, -1))
    gx = gw = gb = None
    if needs[0]:
        gx = ops.col2im(ops.matmul(ops.mT(w2), g2), ops.shape(x), geom)
    if needs[1]:
        patches = ops.conv_patches(x, geom, cols)
        gw = ops.reshape(ops.sum_dim(ops.matmul(g2, ops.mT(patches)), 0, False), w_shape)
    if has_bias and needs[2]:
        gb = ops.sum_dim(ops.sum_dim(g2, 3, False), 0, False)
        gb = ops.reshape(gb, (w_shape[0],))
    return gx, gw, gb


@rule("convolution_transpose")
def convolution_transpose(ops, g, needs, x, w, geom, has_bias):
    """The transpose of a convolution: out = col2im(w2^T @ x2), so the input's cotangent is
    the convolution of g's patches with w2, and the weight's is x2 against those patches."""
    x_shape, w_shape = ops.shape(x), ops.shape(w)
    n, groups = x_shape[0], geom[4]
    x2 = ops.reshape(x, (n, groups, w_shape[0] // groups, -1))
    w2 = ops.reshape(w, (groups, w_shape[0] // groups, -1))
    cols = ops.im2col(g, geom) if needs[0] or needs[1] else None
    gx = gw = gb = None
    if needs[0]:
        gx = ops.reshape(ops.matmul(w2, cols), x_shape)
    if needs[1]:
        gw = ops.reshape(ops.sum_dim(ops.matmul(x2, ops.mT(cols)), 0, False), w_shape)
    if has_bias and needs[2]:
        g3 = ops.reshape(g, (n, ops.shape(g)[1], -1))
        gb = ops.sum_dim(ops.sum_dim(g3, 2, False), 0, False)
    return gx, gw, gb


@rule("max_pool")
def max_pool(ops, g, needs, x_shape, flat_index, spill):
    """Each output's cotangent goes to the input element that was the window's maximum; with
    `spill`, windows without an input element point one past the end, which is cut off."""
    size = int(np.prod(x_shape))
    g_flat = ops.embed_add(ops.reshape(g, (-1,)), (size + spill,), flat_index)
    if spill:
        g_flat = ops.getitem(g_flat, (slice(0, size),))
    return (ops.reshape(g_flat, x_shape),)


@rule("avg_pool")
def avg_pool(ops, g, needs, x_shape, padded_shape, geom, divisor, crop):
    """Each output's cotangent, divided by its window's divisor (a number, or one per output
    position), is spread over the window on the padded input (col2im without padding), which
    is then cropped back to the input."""
    n, c = padded_shape[:2]
    kk = geom[0][0] * geom[0][1]
    g4 = ops.reshape(g, (n, c, 1, -1))
    positions = ops.shape(g4)[3]
    share = ops.expand(ops.div(g4, divisor), (n, c, kk, positions))
    return (ops.reshape(ops.getitem(ops.col2im(share, padded_shape, geom), crop), x_shape),)


@rule("constant_pad")
def constant_pad(ops, g, needs, key, x_shape, crop):
    """Padding's transpose: the cotangent sliced back to the unpadded region, and embedded
    into the input's shape where negative pads had cropped it (x_shape not None)."""
    g = ops.getitem(g, key)
    return (g if x_shape is None else ops.embed(g, x_shape, crop),)


@rule("pad_gather")
def pad_gather(ops, g, needs, steps):
    """Reflect / replicate padding gathered along each padded dimension in turn (`steps`:
    (dim, index, shape before)); the transpose scatter-adds back, last gather first."""
    for dim, index, shape in reversed(steps):
        g = ops.embed_add(g, shape, (slice(None),) * dim + (index,))
    return (g,)
