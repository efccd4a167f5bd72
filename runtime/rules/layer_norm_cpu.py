"""PyTorch's CPU layer norm for contiguous float32 rows on one thread, reproduced on numpy to
the bit: the row statistics, the output and the three gradients (x86-64, torch 2.13; PyTorch
runs this kernel with 8-lane vectors even where AVX-512 is present).

Statistics (ATen's RowwiseMoments): a row's first N - N % 8 values are 8 lanes; lane j takes
elements j, j + 8, ... Runs of up to 16 vectors are folded by Welford's update (the mean by
FMA with the reciprocal 1 / (k + 1), the squares' sum by FMA), and the runs' (count, mean,
m2) triples are merged in a binary cascade (run i + 1 finishing merges the stack levels its
trailing zero bits name; what is left is merged into level 0 at the end) by
    delta = mean_b - mean_a,  d = (count_b / n) * delta,  mean = mean_a + d,
    m2 = fma(delta * count_a, d, m2_a + m2_b).
The last N % 8 values get a plain Welford update (division by the count, no FMA); then the 8
lanes are merged into it in order by the scalar form
    mean = fma(c, delta, mean),  m2 = m2 + fma(delta * delta * c, count, m2_lane).
var = m2 / N, rstd = 1 / sqrt(var + eps), all float32.
Output: fma((x - mean) * rstd, weight, bias) (weight 1 and bias 0 where absent).

Backward, per row, with a = rstd and the sums of dy * x * w and dy * w taken in 8 lanes (the
first vector's products rounded, the next vectors' rounded products added, the last partial
vector's products added by FMA, the lanes folded as a tree; a row shorter than a vector summed
in order):
    b = fma(db, mean, -ds) * a * a * a / N,  c = fma(-b, mean, -(db * a / N)),
    x_bar = fma(b, x, a * dy * w) + c.
weight_bar accumulates fma(dy, fma(a, x, -a * mean), acc) down the rows, bias_bar the plain
sum of dy down the rows. Without a weight the sums run over dy * x (the partial vector's
products fused into the sum) and dy.
"""

import numpy as np

from runtime.fma import _midpoints, deferred_ties, fma
from runtime.simd_softmax import fold_lanes

F32, F64 = np.float32, np.float64
LANES = 8
RUN = 16  # vectors per Welford run
_RECIPROCALS = [F32(1) / F32(k + 1) for k in range(RUN)]


def applies(x, n):
    """Whether this kernel is PyTorch's for a layer norm of x over its last n values."""
    return x.dtype == F32 and x.flags.c_contiguous and x.size > 0 and n > 0


# -- statistics -------------------------------------------------------------------------------

def _run_moments(rows, start, count):
    """Welford over `count` vectors from column `start`: (count, mean, m2), (M, LANES) each."""
    m1 = np.zeros((rows.shape[0], LANES), F32)
    m2 = np.zeros_like(m1)
    for k in range(count):
        x = rows[:, start + k * LANES:start + (k + 1) * LANES]
        delta = x - m1
        m1 = fma(_RECIPROCALS[k], delta, m1)
        m2 = fma(delta, x - m1, m2)
    return count, m1, m2


def _merge_vectors(add, into):
    """ATen's AddMomentsVec: the triple `add` merged into `into`."""
    count_b, m1_b, m2_b = add
    count_a, m1_a, m2_a = into
    n = count_a + count_b
    if not count_a:
        return add
    if not count_b:  # an emptied level of the cascade: its vectors hold zeros
        m1_b = m2_b = np.zeros_like(m1_a)
    c = F32(count_b) / F32(n)
    delta = m1_b - m1_a
    step = c * delta
    return n, m1_a + step, fma(delta * F32(count_a), step, m2_a + m2_b)


def _vector_moments(rows, vectors):
    """The lanes' (count, mean, m2) after the cascade of runs over `vectors` vectors."""
    runs = -(-vectors // RUN)
    depth = max(1, (runs - 1).bit_length())
    empty = (0, None, None)
    stack = [empty] * depth
    for i in range(runs):
        stack[0] = _merge_vectors(_run_moments(rows, i * RUN * LANES,
                                               min(RUN, vectors - i * RUN)), stack[0])
        mask, level = i + 1, 1
        while level < depth and not mask & 1:
            stack[level] = _merge_vectors(stack[level - 1], stack[level])
            stack[level - 1] = empty
            mask >>= 1
            level += 1
    for level in range(1, depth):
        stack[0] = _merge_vectors(stack[level], stack[0])
    return stack[0]


def _tail_moments(rows, start):
    """Plain Welford over the columns from `start`: (count, mean, m2), (M,) each."""
    m1 = np.zeros(rows.shape[0], F32)
    m2 = np.zeros_like(m1)
    for k in range(start, rows.shape[1]):
        x = rows[:, k]
        delta = x - m1
        m1 = m1 + delta / F32(k - start + 1)
        m2 = m2 + delta * (x - m1)
    return rows.shape[1] - start, m1, m2


def _moments(rows, eps):
    n = rows.shape[1]
    vectors = n // LANES
    count, m1, m2 = _tail_moments(rows, vectors * LANES)
    if vectors:
        _, lane_m1, lane_m2 = _vector_moments(rows, vectors)
        for j in range(LANES):
            total = count + vectors
            c = F32(vectors) / F32(total)
            delta = lane_m1[:, j] - m1
            m2 = m2 + fma(delta * delta * c, F32(count), lane_m2[:, j])
            m1 = fma(c, delta, m1)
            count = total
    var = m2 / F32(n)
    return m1, F32(1) / np.sqrt(var + F32(eps))


def moments(rows, eps):
    """(mean, rstd) of each row of a C-contiguous float32 (M, N) array, (M,) each: compiled
    (runtime/simd_layer_norm.py) where llvmlite is at hand, else on numpy."""
    from runtime import simd_compiled

    compiled = simd_compiled.layer_norm_moments(rows, eps)
    return compiled if compiled is not None else numpy_moments(rows, eps)


def numpy_moments(rows, eps):
    """`moments` on numpy: the reference."""
    return deferred_ties(_moments, rows, eps)


def forward(rows, mean, rstd, weight, bias):
    """The normalised rows, scaled and shifted (weight, bias: (N,) or None)."""
    t = (rows - mean[:, None]) * rstd[:, None]
    if weight is None and bias is None:
        return t
    return fma(t, F32(1) if weight is None else weight, F32(0) if bias is None else bias)


# -- backward ---------------------------------------------------------------------------------

def _row_sums(a, b=None):
    """Each row's sum of a * b (a alone where b is None), as the vector reduction sums it."""
    n = a.shape[1]
    if b is None:
        b = np.ones(n, F32)
    products = a * b
    if n < LANES:
        return np.add.accumulate(products, axis=1)[:, -1]
    full = n - n % LANES
    acc = products[:, :LANES].copy()
    for start in range(LANES, full, LANES):
        acc += products[:, start:start + LANES]
    if n > full:
        tail = np.broadcast_to(b, a.shape)[:, full:]
        acc[:, :n - full] = fma(a[:, full:], tail, acc[:, :n - full])
    return fold_lanes(acc)


def _input_grad(g, rows, mean, rstd, weight):
    n = rows.shape[1]
    scale = F32(1) / F32(n)
    if weight is None:
        ds, db = _row_sums(g, rows), _row_sums(g)
        first = g * rstd[:, None]
    else:
        ds, db = _row_sums(g * rows, weight), _row_sums(g, weight)
        first = g * rstd[:, None] * weight
    b = fma(db, mean, -ds) * rstd * rstd * rstd * scale
    c = fma(-b, mean, -(db * rstd * scale))
    return fma(b[:, None], rows, first) + c[:, None]


def _fma_down(a, b):
    """Sum over the rows of a * b, one float32 FMA per row, in order from zero (the compiled
    chain of runtime/simd_compiled.py, column by column, or on numpy)."""
    from runtime import simd_compiled

    chained = simd_compiled.fma_chain(a.T[:, None, :], b.T[:, :, None])
    if chained is not None:
        return chained.reshape(-1) + F32(0)  # fma(x, y, +0) of a product -0 is +0
    return _numpy_fma_down(a, b)


def _numpy_fma_down(a, b):
    """_fma_down on numpy: the float64 sums rounded step by step, the whole chain redone by
    `fma` where one landed on a float32 midpoint."""
    sums = np.multiply(a, b, dtype=F64)
    acc = np.zeros(a.shape[1], F32)
    for i in range(a.shape[0]):
        np.add(sums[i], acc, out=sums[i])
        np.copyto(acc, sums[i], casting="same_kind")
    if np.count_nonzero(_midpoints(sums)):
        acc = np.zeros(a.shape[1], F32)
        for i in range(a.shape[0]):
            acc = fma(a[i], b[i], acc)
    return acc


def backward(g, rows, mean, rstd, weight, needs):
    """(x_bar, weight_bar, bias_bar) of a layer norm over the rows (None where not needed);
    g C-contiguous float32 like rows, mean and rstd (M,) as `moments` gave them."""
    gx = gw = gb = None
    if needs[0]:
        gx = deferred_ties(_input_grad, g, rows, mean, rstd, weight)
    if weight is not None and needs[1]:
        xhat = fma(rstd[:, None], rows, (-rstd * mean)[:, None])
        gw = _fma_down(g, xhat)
    if needs[2]:
        gb = np.add.accumulate(g, axis=0)[-1]
    return gx, gw, gb
