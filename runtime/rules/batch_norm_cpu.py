"""PyTorch's CPU batch norm for contiguous float32 input on one thread, reproduced on numpy
to the bit: statistics, running statistics, output and the three gradients.

The orders below were found by testing hypotheses against torch 2.13 (x86-64, AVX2/AVX512
kernels) until every element matched on a table of shapes (tests/test_batch_norm_bits.py).
PyTorch has two layouts. "Planes" (more than one value per channel in each image) reduce each
(image, channel) plane; "rows" (one value per image, as for BatchNorm1d on (N, C)) are treated
as channels-last and reduce down the images.

Forward statistics, over the M = N * L values of a channel:
  planes: mean = f32(sum / M) with the sum in float64; var_sum = f32(float64 sum of the float32
          squares of the float32 differences x - mean);
  rows:   float32 sums down the images in order, the squares added by FMA.
  var = f32(var_sum / M), invstd = f32(1 / sqrt(float64(var) + eps)).
Running statistics, in float32 without FMA: mean' = m * mean + (1 - m) * mean_run; the
variance adds m * f32(var_sum / (M - 1)) to f32((1 - m) * var_run) in float64.
Output: x * alpha + beta by FMA, alpha = invstd * w, beta = b - mean * alpha by FMA.

Backward, planes: each plane's sums run in LANES vector lanes (lane j adds elements j, j + 8,
...; the products (x - mean) * g of the last, partial vector are added by FMA, the others are
rounded first), the lanes are folded as a tree (j + 4, + 2, + 1), a plane shorter than a vector
is summed in order, and the planes' totals are added over the images in float64. Rows: float32
sums down the images, the products added by FMA. Then k = dot * invstd * invstd / M in float32,
x_bar = ((g - sum / M) - (x - mean) * k) * invstd * w with the subtraction of (x - mean) * k
fused (in the rows layout only for the channels that fill whole vectors).
"""

import numpy as np

from runtime.fma import channel_major, fma, fma_channels, fma_rows, scratch
from runtime.simd_softmax import fold_lanes

F32, F64 = np.float32, np.float64
LANES = 8


def _planes(x):
    """(N, C, L) view of an (N, C, *S) array."""
    return x.reshape(x.shape[0], x.shape[1], -1)


def is_rows(x):
    return x.size == x.shape[0] * x.shape[1]


def _fma_down(a, b):
    """sum over axis 0 of a * b, one float32 FMA per row, in order."""
    acc = np.zeros(a.shape[1:], F32)
    for i in range(a.shape[0]):
        acc = fma(a[i], b[i], acc)
    return acc


def _in_order(v, axis):
    return np.add.accumulate(v, axis=axis).take(-1, axis=axis)


def forward_stats(x, eps):
    """(mean, invstd, var_sum) per channel, float32 arrays of shape (C,)."""
    count = x.size // x.shape[1]
    if is_rows(x):
        rows = x.reshape(x.shape[0], -1)
        mean = (_in_order(rows, 0).astype(F64) / count).astype(F32)
        centered = rows - mean
        var_sum = _fma_down(centered, centered)
    else:
        planes = _planes(x)
        mean = (planes.sum(axis=(0, 2), dtype=F64) / count).astype(F32)
        centered = planes - mean[:, None]
        np.square(centered, out=centered)
        var_sum = centered.sum(axis=(0, 2), dtype=F64).astype(F32)
    var = var_sum / F32(count)
    invstd = (1.0 / np.sqrt(var.astype(F64) + eps)).astype(F32)
    return mean, invstd, var_sum


def update_running(running_mean, running_var, mean, var_sum, count, momentum):
    """The running statistics' new values (float32 arrays of shape (C,))."""
    m = F32(momentum)
    keep = F32(1) - m
    new_mean = m * mean + keep * running_mean
    unbiased = (var_sum / F32(count - 1)).astype(F64)
    new_var = (F64(m) * unbiased + (keep * running_var).astype(F64)).astype(F32)
    return new_mean, new_var


def affine(x, mean, invstd, weight, bias):
    """x * alpha + beta as PyTorch's kernel forms it (all per-channel arrays (C,) or None)."""
    alpha = invstd if weight is None else invstd * weight
    beta = -(mean * alpha) if bias is None else fma(-mean, alpha, bias)
    return fma_channels(x, alpha, beta)


def _vectors_first(a, full):
    """The first `full` = K * LANES elements of each plane of a C-contiguous (A, B, L) float32
    array, copied to a per-thread (K, A, B, LANES) buffer: [k, p, q, j] is element
    k * LANES + j of plane (p, q). The copy moves whole vectors as items of one opaque
    LANES * 4-byte type (twice as fast as float by float)."""
    vector = np.dtype((np.void, LANES * a.itemsize))
    terms = scratch((full // LANES,) + a.shape[:2] + (LANES,), a.dtype)
    source = np.ndarray((full // LANES,) + a.shape[:2], vector, buffer=a,
                        strides=(LANES * a.itemsize,) + a.strides[:2])
    np.copyto(terms.view(vector)[..., 0], source)
    return terms


def _plane_sums(a, b=None):
    """Each plane of a (A, B, L), or of the products a * b, summed as PyTorch's vector
    reduction sums it: (A, B) float32. a and b are C-contiguous."""
    length = a.shape[-1]
    if length < LANES:
        return _in_order(a if b is None else a * b, 2)
    full = length - length % LANES
    # per-thread buffers (runtime/fma.py): fresh large arrays cost their page faults each step
    source = a if b is None else np.multiply(a, b, out=scratch(a.shape, F32))
    terms = _vectors_first(source, full)
    # contiguous vectors, reduced along the outer axis: numpy adds them in order
    lanes = np.add.reduce(terms, axis=0)
    rest = length - full
    if rest:
        head = lanes[..., :rest]
        lanes[..., :rest] = head + a[..., full:] if b is None else \
            fma(a[..., full:], b[..., full:], np.ascontiguousarray(head))
    return fold_lanes(lanes)


def _prepare_planes(x, g, mean):
    """(x - mean, g) channel-major, (C, N, L): per-channel operations then run along long
    rows (numpy pays per run of an (N, C, L) broadcast), and each channel's FMA is one saxpy."""
    shape = (x.shape[1], x.shape[0], x.size // (x.shape[0] * x.shape[1]))
    centered = np.subtract(_planes(x).transpose(1, 0, 2), mean[:, None, None],
                           out=np.empty(shape, x.dtype))
    return centered, channel_major(g, np.empty(shape, g.dtype))


def _sums_planes(g, centered):
    total = _in_order(_plane_sums(g).astype(F64), 1)
    dot = _in_order(_plane_sums(centered, g).astype(F64), 1)
    return total, dot


def _input_grad_planes(g, centered, gm, k, scale):
    diff = np.subtract(g, gm[:, None, None], out=g)  # g is a copy of its own, no longer needed
    fma_rows(centered, -k, diff)
    diff *= scale[0][:, None, None]
    diff *= scale[1][:, None, None]
    return diff.transpose(1, 0, 2)


def _prepare_rows(x, g, mean):
    rows = x.reshape(x.shape[0], -1)
    return rows - mean, g.reshape(rows.shape)


def _sums_rows(g, centered):
    return _in_order(g, 0), _fma_down(centered, g)


def _input_grad_rows(g, centered, gm, k, scale):
    fused = g.shape[1] - g.shape[1] % LANES
    diff = g - gm
    diff[:, :fused] = fma(centered[:, :fused], np.broadcast_to(-k[:fused], (g.shape[0], fused)),
                          diff[:, :fused])
    diff[:, fused:] -= centered[:, fused:] * k[fused:]
    diff *= scale[0]
    diff *= scale[1]
    return diff


_LAYOUT = {  # rows?: ((centered, g) to sum, sums, input gradient)
    False: (_prepare_planes, _sums_planes, _input_grad_planes),
    True: (_prepare_rows, _sums_rows, _input_grad_rows),
}


def backward(g, x, weight, mean, invstd, training, needs):
    """(x_bar, weight_bar, bias_bar) of batch norm (None where not needed; weight may be None),
    mean and invstd the (C,) statistics the forward pass used."""
    count = x.size // x.shape[1]
    rows = is_rows(x)
    prepare, sums, input_grad = _LAYOUT[rows]
    centered, g_sum = prepare(x, g, mean)
    total, dot = sums(g_sum, centered)
    dot32 = dot.astype(F32)
    gx = gw = gb = None
    w = np.ones_like(invstd) if weight is None else weight
    if needs[0] and training:
        k = dot32 * invstd * invstd / F32(count)
        gm = (total / (F32(count) if rows else count)).astype(F32)
        gx = np.ascontiguousarray(input_grad(g_sum, centered, gm, k, (invstd, w)))
        gx = gx.reshape(x.shape)
    elif needs[0]:
        shape = (1, -1) + (1,) * (x.ndim - 2)
        gx = g * invstd.reshape(shape) * w.reshape(shape)
    if weight is not None and needs[1]:
        gw = (dot * invstd).astype(F32)
    if needs[2]:
        gb = total.astype(F32)
    return gx, gw, gb
