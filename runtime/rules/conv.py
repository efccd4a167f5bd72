"""Convolution and pooling: the im2col/col2im kernels on numpy and the derivative rules.

A convolution is a matmul against the input's patches ("im2col"): for input (N, C, *S) and
weight (O, C/G, *K), the patches form (N, G, K*C/G, L) with L output positions, their rows
ordered (kernel row, kernel column, channel) — the order in which PyTorch's CPU kernel
(oneDNN) adds a window's products, one fused multiply-add after the other. sgemm's inner loop
is such a chain over the rows, so with the weight's columns in the same order the forward
pass gives PyTorch's bits (for the channel counts oneDNN does not block). The input's gradient
at stride 1 is likewise the convolution of the cotangent with the flipped kernel, its patches
taken in ascending kernel order and output channel last, as oneDNN sums it; the weight's and
bias's gradients are one chain over (image, output position) each (runtime/rules/fma_chain.py,
on numpy). im2col and col2im
are linear and each other's transpose, so they are primitives with rules too and double
backward works through the Tensor namespace.

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
    """A strided view (N, G, kh, kw, C/G, OH, OW) of the padded input's patches."""
    (kh, kw), (sh, sw), _, (dh, dw), groups = geom[:5]
    n, c = xp.shape[:2]
    s = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (n, groups, kh, kw, c // groups) + out_hw,
        (s[0], s[1] * (c // groups), s[2] * dh, s[3] * dw, s[1], s[2] * sh, s[3] * sw),
        writeable=False)


def _out_hw(shape4, geom):
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geom[:4]
    return (out_size(shape4[2], kh, sh, ph, dh), out_size(shape4[3], kw, sw, pw, dw))


def im2col_array(x, geom, pad_value=0.0):
    """(N, C, *S) -> patches (N, G, kh*kw*C/G, L), rows in (kernel row, column, channel)."""
    ndim, groups = geom[5], geom[4]
    x4 = x.reshape(_as2d(x.shape, ndim))
    (ph, pw) = geom[2]
    xp = _padded(x4, (ph, ph), (pw, pw), pad_value) if ph or pw else x4
    hw = _out_hw(x4.shape, geom)
    cols = _compact(_patches(xp, geom, hw))
    return cols.reshape(x4.shape[0], groups, -1, hw[0] * hw[1])


def _compact(view):
    """A C-contiguous copy of an array view whose rows (last axis) are contiguous, each row
    moved as one opaque item: numpy pays per run of a copy, and a patch row is short."""
    if view.ndim < 2 or view.strides[-1] != view.itemsize or not view.size:
        return np.ascontiguousarray(view)
    row = np.dtype((np.void, view.shape[-1] * view.itemsize))
    out = np.empty(view.shape, view.dtype)
    np.copyto(out.view(row)[..., 0], view.view(row)[..., 0])
    return out


def col2im_array(cols, x_shape, geom):
    """The transpose of im2col_array: scatter-add patches back onto an input of x_shape."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), groups = geom[:5]
    n, c, h, w = _as2d(tuple(x_shape), geom[5])
    oh, ow = _out_hw((n, c, h, w), geom)
    cols = cols.reshape(n, groups, kh, kw, c // groups, oh, ow)
    xp = np.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    planes = xp.reshape(n, groups, c // groups, h + 2 * ph, w + 2 * pw)
    for i in range(kh):
        for j in range(kw):
            planes[..., i * dh:i * dh + sh * (oh - 1) + 1:sh,
                   j * dw:j * dw + sw * (ow - 1) + 1:sw] += cols[:, :, i, j]
    return xp[:, :, ph:ph + h, pw:pw + w].reshape(x_shape)


@rule("im2col")
def im2col(ops, g, needs, x_shape, geom):
    return (ops.col2im(g, x_shape, geom),)


@rule("col2im")
def col2im(ops, g, needs, geom):
    return (ops.im2col(g, geom),)


def channels_last(ops, w):
    """(O, C/G, *K) -> (O, *K, C/G): the weight's columns in the patches' row order."""
    n = len(ops.shape(w))
    return ops.permute(w, (0,) + tuple(range(2, n)) + (1,))


def channels_second(ops, w):
    """The inverse of channels_last."""
    n = len(ops.shape(w))
    return ops.permute(w, (0, n - 1) + tuple(range(1, n - 1)))


_CHUNK = 1 << 16  # patch elements per matmul in conv_input_grad_array: they stay in cache
_COLUMNS = 16


def _padded(x, rows, columns, value=0):
    """x (N, C, H, W) with (before, after) rows and columns of `value` around each plane (np.pad
    costs ~100 us more on a batch)."""
    n, c, h, w = x.shape
    out = np.full((n, c, h + sum(rows), w + sum(columns)), value, x.dtype)
    out[:, :, rows[0]:rows[0] + h, columns[0]:columns[0] + w] = x
    return out


def conv_input_grad_array(g, w, geom, x_shape):
    """dL/dx of a stride-1 convolution as oneDNN sums it: the convolution of the cotangent
    (padded to the kernel's reach) with the flipped kernel, each input element one chain over
    (kernel row, kernel column, output channel) in ascending kernel order — sgemm over
    patches taken in that order, a few images at a time. None for strided convolutions and
    paddings wider than the kernel's reach (the caller then uses col2im)."""
    (kh, kw), stride, (ph, pw), (dh, dw), groups, ndim = geom
    reach = (dh * (kh - 1) - ph, dw * (kw - 1) - pw)
    if stride != (1, 1) or min(reach) < 0:
        return None
    g4 = g.reshape(_as2d(g.shape, ndim))
    n, o = g4.shape[:2]
    og, cg = o // groups, w.shape[1]
    h, wd = _as2d(tuple(x_shape), ndim)[2:]
    wide = wd + dw * (kw - 1)
    # sgemm's kernels for a last few columns do not chain in order: whole blocks of _COLUMNS
    length = -(-h * wide // _COLUMNS) * _COLUMNS
    # spare rows below: the wide rows of the last patch reach past the plane
    spare = -(-(length - h * wide + dw * (kw - 1)) // wide)
    gp = _padded(g4, (reach[0], reach[0] + spare), (reach[1], reach[1]))
    s = gp.strides
    # each patch row is one run of h * wide elements of the padded plane: the sums are taken
    # on rows as wide as the padded cotangent, and the columns past wd are dropped afterwards
    # (numpy copies long runs far faster than rows of wd)
    patches = np.lib.stride_tricks.as_strided(
        gp[:, :, dh * (kh - 1):, dw * (kw - 1):], (n, groups, kh, kw, og, length),
        (s[0], s[1] * og, -dh * s[2], -dw * s[3], s[1], s[3]), writeable=False)
    wt = w.reshape(groups, og, cg, kh, kw).transpose(0, 2, 3, 4, 1).reshape(groups, cg, -1)
    out = np.empty((n, groups, cg, length), np.result_type(g, w))
    step = max(1, _CHUNK // (groups * kh * kw * og * length))
    for start in range(0, n, step):
        cols = np.ascontiguousarray(patches[start:start + step])
        np.matmul(wt, cols.reshape(-1, groups, kh * kw * og, length),
                  out=out[start:start + step])
    out = out[..., :h * wide].reshape(n, groups * cg, h, wide)[..., :wd]
    return np.ascontiguousarray(out).reshape(x_shape)


def _input_grad(ops, g, w, geom, x_shape):
    """dL/dx of a convolution: PyTorch's sums on numpy where conv_input_grad_array applies,
    else (and on Tensors) col2im of w^T g."""
    gx = ops.conv_input_grad(g, w, geom, x_shape)
    if gx is not None:
        return gx
    groups, o = geom[4], ops.shape(w)[0]
    w2 = ops.reshape(channels_last(ops, w), (groups, o // groups, -1))
    g2 = ops.reshape(g, (x_shape[0], groups, o // groups, -1))
    return ops.col2im(ops.matmul(ops.mT(w2), g2), x_shape, geom)


@rule("convolution")
def convolution(ops, g, needs, x, w, geom, has_bias, cols=None):
    """out[n, g, o, l] = sum_k w2[g, o, k] * cols[n, g, k, l] (+ bias[o]). `cols` are the
    patches the forward pass made, if it kept them (ops.conv_patches reuses them on numpy)."""
    n, groups = ops.shape(x)[0], geom[4]
    w_shape = ops.shape(w)
    g2 = ops.reshape(g, (n, groups, w_shape[0] // groups, -1))
    gx = gw = gb = None
    if needs[0]:
        gx = _input_grad(ops, g, w, geom, ops.shape(x))
    if needs[1] or (has_bias and needs[2]):
        patches = ops.conv_patches(x, geom, cols) if needs[1] else None
        gw, gb = ops.conv_param_grads(g2, patches, has_bias and needs[2])
    if gw is not None:
        gw = ops.reshape(gw, (w_shape[0],) + tuple(w_shape[2:]) + (w_shape[1],))
        gw = channels_second(ops, gw)
    return gx, gw, gb


@rule("convolution_transpose")
def convolution_transpose(ops, g, needs, x, w, geom, has_bias):
    """The transpose of a convolution: out = col2im(w2^T @ x2), so the input's cotangent is
    the convolution of g's patches with w2, and the weight's is x2 against those patches."""
    x_shape, w_shape = ops.shape(x), ops.shape(w)
    n, groups = x_shape[0], geom[4]
    x2 = ops.reshape(x, (n, groups, w_shape[0] // groups, -1))
    w2 = ops.reshape(channels_last(ops, w), (groups, w_shape[0] // groups, -1))
    cols = ops.im2col(g, geom) if needs[0] or needs[1] else None
    gx = gw = gb = None
    if needs[0]:
        gx = ops.reshape(ops.matmul(w2, cols), x_shape)
    if needs[1]:
        gw = ops.sum_dim(ops.matmul(x2, ops.mT(cols)), 0, False)
        gw = ops.reshape(gw, (w_shape[0],) + tuple(w_shape[2:]) + (w_shape[1],))
        gw = channels_second(ops, gw)
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
    g4 = ops.reshape(g, (n, 1, c, -1))
    positions = ops.shape(g4)[3]
    share = ops.expand(ops.div(g4, divisor), (n, kk, c, positions))
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
