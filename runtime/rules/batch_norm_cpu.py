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

from runtime.fma import fma, fma_channels, fma_rows, scratch
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
        # the means spread over a whole plane: numpy subtracts that 1.6x faster than a
        # broadcast (C, 1)
        centered = planes - np.repeat(mean[:, None], planes.shape[2], axis=1)
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


class _Lanes:
    """An (N, C, L) array's planes laid out channel by channel for the vector sums: row c holds
    vector k (elements k * LANES ... + LANES - 1) of every plane of channel c for k = 0, 1, ...
    ((K, N, LANES), K = L // LANES), then the planes' last `rest` elements (N, rest). Per-channel
    operations then run along long rows, the lane sums are a reduction over the outer axis
    (numpy adds in order), and each channel's FMA is one saxpy. Moving vectors as opaque
    LANES * 4-byte items costs half of moving them float by float."""

    def __init__(self, shape, dtype):
        self.n, self.c, self.length = shape
        self.k, self.rest = divmod(self.length, LANES)
        self.dtype = np.dtype(dtype)
        self.vector = np.dtype((np.void, LANES * self.dtype.itemsize))
        self.split = self.k * self.n * LANES

    def empty(self):
        return np.empty((self.c, self.split + self.n * self.rest), self.dtype)

    def _vectors(self, planes):
        """(C, K, N) opaque vectors of a C-contiguous (N, C, L) array, as a view."""
        size = self.dtype.itemsize
        return np.ndarray((self.c, self.k, self.n), self.vector, buffer=planes,
                          strides=(self.length * size, LANES * size, self.c * self.length * size))

    def main(self, rows):
        return rows[:, :self.split].reshape(self.c, self.k, self.n * LANES)

    def tail(self, rows):
        return rows[:, self.split:].reshape(self.c, self.n, self.rest)

    def gather(self, planes, out):
        if self.k:
            np.copyto(out[:, :self.split].view(self.vector).reshape(self.c, self.k, self.n),
                      self._vectors(planes))
        np.copyto(self.tail(out), planes[:, :, self.k * LANES:].transpose(1, 0, 2))
        return out

    def scatter(self, rows):
        """The (N, C, L) C-contiguous array laid out in rows."""
        planes = np.empty((self.n, self.c, self.length), self.dtype)
        if self.k:
            np.copyto(self._vectors(planes),
                      rows[:, :self.split].view(self.vector).reshape(self.c, self.k, self.n))
        np.copyto(planes[:, :, self.k * LANES:], self.tail(rows).transpose(1, 0, 2))
        return planes

    def plane_sums(self, a, b=None):
        """Each plane of a, or of the products a * b, summed as PyTorch's vector reduction sums
        it: (C, N) float32."""
        if not self.k:  # a plane shorter than a vector: in order
            tail = self.tail(a) if b is None else self.tail(a) * self.tail(b)
            return _in_order(tail, 2)
        source = self.main(a) if b is None else np.multiply(
            self.main(a), self.main(b), out=scratch((self.c, self.k, self.n * LANES), F32))
        lanes = np.add.reduce(source, axis=1).reshape(self.c, self.n, LANES)
        if self.rest:
            head = lanes[..., :self.rest]
            lanes[..., :self.rest] = head + self.tail(a) if b is None else \
                fma(self.tail(a), self.tail(b), np.ascontiguousarray(head))
        return fold_lanes(lanes)


def _prepare_planes(x, g, mean):
    """(x - mean, g) in the lanes layout (_Lanes), with the layout."""
    layout = _Lanes(_planes(x).shape, x.dtype)
    centered = layout.gather(_planes(x), layout.empty())
    centered -= mean[:, None]
    return layout, centered, layout.gather(_planes(g), layout.empty())


def _sums_planes(layout, g, centered):
    total = _in_order(layout.plane_sums(g).astype(F64), 1)
    dot = _in_order(layout.plane_sums(centered, g).astype(F64), 1)
    return total, dot


def _input_grad_planes(layout, g, centered, gm, k, scale):
    diff = np.subtract(g, gm[:, None], out=g)  # g is a copy of its own, no longer needed
    fma_rows(centered, -k, diff)
    diff *= scale[0][:, None]
    diff *= scale[1][:, None]
    return layout.scatter(diff)


def _prepare_rows(x, g, mean):
    rows = x.reshape(x.shape[0], -1)
    return None, rows - mean, g.reshape(rows.shape)


def _sums_rows(layout, g, centered):
    return _in_order(g, 0), _fma_down(centered, g)


def _input_grad_rows(layout, g, centered, gm, k, scale):
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
    layout, centered, g_sum = prepare(x, g, mean)
    total, dot = sums(layout, g_sum, centered)
    dot32 = dot.astype(F32)
    gx = gw = gb = None
    w = np.ones_like(invstd) if weight is None else weight
    if needs[0] and training:
        k = dot32 * invstd * invstd / F32(count)
        gm = (total / (F32(count) if rows else count)).astype(F32)
        gx = input_grad(layout, g_sum, centered, gm, k, (invstd, w)).reshape(x.shape)
    elif needs[0]:
        shape = (1, -1) + (1,) * (x.ndim - 2)
        gx = g * invstd.reshape(shape) * w.reshape(shape)
    if weight is not None and needs[1]:
        gw = (dot * invstd).astype(F32)
    if needs[2]:
        gb = total.astype(F32)
    return gx, gw, gb
