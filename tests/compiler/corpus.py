"""User-style functions for the compiler: each is run by CPython, the reference interpreter and
every backend, and the results must agree. CASES lists (function, argument tuples)."""

import math

import numpy as np

PI = 3.141592653589793
SCALE = 2


# -- straight-line math ------------------------------------------------------------------------

def poly(x):
    return 3 * x**3 - 2 * x**2 + x - 7


def rational(x, y):
    return (x * y + 1) / (x - y + 0.5)


def int_arith(a, b):
    return a * b + a // b - a % b + (a - b) ** 2


def mixed(a, x):
    return a + x * 2 - a / 4


def float_mod(x, y):
    return x % y + x // y


def negatives(a, b):
    return -a // b, -a % b


def math_funcs(x):
    return math.sin(x) + math.cos(x) * math.exp(-x) + math.log(1 + x * x) + math.sqrt(x * x + 1)


def more_math(x):
    return math.tanh(x) + math.atan2(x, 2.0) + math.hypot(x, 3.0) + math.log1p(abs(x)) + \
        math.expm1(x / 4) + math.erf(x)


def numpy_scalar_funcs(x):
    return np.sin(x) * np.exp(x / 3) + np.sqrt(np.abs(x)) + np.tanh(x)


def rounding(x):
    return math.floor(x) + math.ceil(x) * 2 + int(x) + float(int(x * 10)) / 10


def uses_globals(x):
    return PI * x * SCALE


def builtins_minmax(a, b, c):
    return max(a, b, c) - min(a, b) + abs(c - a)


def power_forms(x, n):
    return x**n + x**0.5 + 2**n + n**2


def chained_compare(x):
    if 0 < x < 10:
        return 1
    return 0


def bool_ops(a, b):
    if a > 0 and b > 0 or a < -5:
        return a + b
    if not (a > b):
        return a - b
    return a * b


def conditional_expr(x):
    y = x if x > 0 else -x
    return y * 2 if y < 5 else y / 2


def tuple_swap(a, b):
    a, b = b, a
    return a - b


def tuple_return(x):
    return x + 1, x * 2, x > 0


def augmented(x):
    y = x
    y += 1
    y *= 3
    y -= 2
    y /= 4
    y **= 2
    return y


def truthiness(n):
    if n:
        return 1.5
    return -1.5


# -- branches ----------------------------------------------------------------------------------

def sign(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    else:
        return 0


def piecewise(x):
    if x < -1:
        y = -x * x
    elif x < 1:
        y = x
    else:
        y = math.sqrt(x)
    return y + 1


def nested_if(a, b):
    r = 0.0
    if a > 0:
        if b > 0:
            r = a * b
        else:
            r = a - b
    else:
        if b > a:
            r = b
    return r


def early_return(x):
    if x < 0:
        return 0.0
    y = x * 2
    if y > 10:
        return 10.0
    return y


def type_widening(n):
    s = 0
    if n > 3:
        s = 1.5
    return s * 2


def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


# -- loops -------------------------------------------------------------------------------------

def sum_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


def sum_floats(n):
    s = 0.0
    for i in range(1, n + 1):
        s += 1.0 / i
    return s


def range_step(n):
    s = 0
    for i in range(n, 0, -2):
        s = s * 3 + i
    return s


def range_negative_empty(n):
    s = 7
    for i in range(0, n, -1):
        s += i
    return s


def nested_loops(n):
    s = 0
    for i in range(n):
        for j in range(i):
            s += i * j
    return s


def while_loop(n):
    k = 0
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        k += 1
    return k


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def break_loop(n):
    s = 0
    for i in range(n):
        if i * i > 50:
            break
        s += i
    return s


def continue_loop(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        s += i
    return s


def while_break(x):
    steps = 0
    while True:
        x = x * 0.5 + 1
        steps += 1
        if abs(x - 2) < 1e-9:
            break
    return steps, x


def return_in_loop(n):
    for i in range(2, n):
        if n % i == 0:
            return i
    return n


def nested_break(n):
    count = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            count += 1
    return count


def loop_var_type_change(n):
    acc = 1
    for i in range(n):
        acc = acc * 1.5
    return acc


def newton_sqrt(a):
    x = a
    for _ in range(20):
        x = 0.5 * (x + a / x)
    return x


def series_exp(x):
    term = 1.0
    total = 1.0
    k = 1
    while abs(term) > 1e-15:
        term *= x / k
        total += term
        k += 1
    return total


def horner(x):
    v = x
    for _ in range(4):
        v = v * x + 0.5
    return v


def while_uses_outer(x, y):
    v = y
    k = 0
    while k < 3:
        v = v * x + y
        k += 1
    return v


def assert_positive(x):
    assert x > 0, "x must be positive"
    return math.sqrt(x)


# -- arrays ------------------------------------------------------------------------------------

def array_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def array_iter(x):
    s = 0.0
    for v in x:
        s += v * v
    return s


def dot(x, y):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


def matrix_sum(a):
    n, m = a.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += a[i, j] * (i + 1)
    return s


def matrix_chain_index(a):
    return a[1][2] + a[0, 0] - a[-1, -1]


def negative_index(x):
    return x[-1] - x[-2]


def cumsum_inplace(x):
    out = np.zeros(x.shape[0])
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return out


def matvec(a, x):
    n, m = a.shape
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(m):
            s += a[i, j] * x[j]
        y[i] = s
    return y


def matmul(a, b):
    n, k = a.shape
    m = b.shape[1]
    c = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for t in range(k):
                s += a[i, t] * b[t, j]
            c[i, j] = s
    return c


def recurrence(x):
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.size):
        y[i] = 0.9 * y[i - 1] + 0.1 * x[i]
    return y


def scale_inplace(x, a):
    for i in range(x.shape[0]):
        x[i] *= a
    return x


def row_views(a):
    s = 0.0
    for row in a:
        for v in row:
            s += v
    return s


def argmax(x):
    best = 0
    for i in range(1, len(x)):
        if x[i] > x[best]:
            best = i
    return best


def float32_accumulate(x):
    s = np.float32(0.0)
    for v in x:
        s += v * 2
    return s


def float32_mixed(x):
    return x[0] * 2.5 + x[1] / 3


def int_array(x):
    s = 0
    for v in x:
        s += v * v
    return s


def bool_array(mask, x):
    s = 0.0
    for i in range(len(x)):
        if mask[i]:
            s += x[i]
    return s


def alloc_shapes(n):
    a = np.ones((n, 2))
    b = np.full(n, 2.5)
    c = np.zeros(n, dtype=np.int64)
    s = 0.0
    for i in range(n):
        c[i] = i
        s += a[i, 1] + b[i] + c[i]
    return s, a.size, a.ndim


def stencil(x):
    y = np.zeros_like(x)
    for i in range(1, len(x) - 1):
        y[i] = x[i - 1] - 2 * x[i] + x[i + 1]
    return y


def histogram(x, bins):
    counts = np.zeros(bins, dtype=np.int64)
    for v in x:
        k = int(v * bins)
        if k >= bins:
            k = bins - 1
        counts[k] += 1
    return counts


def bubble_sort(x):
    n = len(x)
    for i in range(n):
        for j in range(n - 1 - i):
            if x[j] > x[j + 1]:
                x[j], x[j + 1] = x[j + 1], x[j]
    return x


# -- calls -------------------------------------------------------------------------------------

def square(v):
    return v * v


def hyp(a, b):
    return math.sqrt(square(a) + square(b))


def calls_with_control(x):
    total = 0.0
    for i in range(len(x)):
        total += hyp(x[i], 1.0)
    return total


def helper_returns_early(v):
    if v < 0:
        return -v
    return v


def calls_early_return(a, b):
    return helper_returns_early(a) + helper_returns_early(b)


def mutates(x, i, v):
    x[i] = v
    return x


def calls_mutating(x):
    mutates(x, 0, 5.0)
    return x[0] + x[1]


def norm2(x):
    return math.sqrt(dot(x, x))


def strided(x):
    return array_sum(x) + x[1]


def bool_accumulate(mask):
    """numpy booleans: + is logical or, * logical and; Python's True + True is 2."""
    s = mask[0]
    p = mask[0]
    for i in range(1, len(mask)):
        s += mask[i]
        p = p * mask[i]
    return s, p, True + True



# -- scratch arrays in nested loops (reverse mode checkpoints these loops per iteration) ------

def overwritten_increment(x, w):
    """a[i] = t + w[i] after a store between the load and it: an increment's adjoint may not
    skip zeroing a_bar[i] here."""
    a = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        a[i] = x[i] * 2.0
    for i in range(x.shape[0]):
        t = a[i]
        a[i] = 5.0 * w[i]
        a[i] = t + w[i]
        a[i] += x[i] * w[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += a[i] * a[i]
    return s

def mixture_like(mu, l, x):
    """GMM's inner loops: centre into one scratch array, a triangular factor with a counter
    into another, squares summed, a log-sum-exp over components ("store" strategy)."""
    n, d = x.shape
    k_count = mu.shape[0]
    xc = np.empty(d)
    qx = np.empty(d)
    beta = np.empty(k_count)
    total = 0.0
    for i in range(n):
        for k in range(k_count):
            for j in range(d):
                xc[j] = x[i, j] - mu[k, j]
            for j in range(d):
                qx[j] = math.exp(mu[k, j]) * xc[j]
            idx = 0
            for c in range(d):
                for r in range(c + 1, d):
                    qx[r] += l[k, idx] * xc[c]
                    idx += 1
            squares = 0.0
            for j in range(d):
                squares += qx[j] * qx[j]
            beta[k] = -0.5 * squares
        top = beta[0]
        for k in range(1, k_count):
            top = max(top, beta[k])
        s = 0.0
        for k in range(k_count):
            s += math.exp(beta[k] - top)
        total += top + math.log(s)
    return total


def scratch_recompute(w, x):
    """One loop level under the checkpointed one ("recompute": the iteration runs again)."""
    n, d = x.shape
    z = np.empty(d)
    total = 0.0
    for i in range(n):
        for j in range(d):
            z[j] = math.sin(x[i, j] * w[j])
        for j in range(d):
            total += z[j] * z[j] * w[j]
    return total


def scratch_while(w, x):
    """A while loop over the rows, with a scratch array and a counter."""
    n, d = x.shape
    z = np.empty(d)
    total = 0.0
    i = 0
    while i < n:
        for j in range(d):
            z[j] = x[i, j] * w[j]
        for j in range(d):
            for m in range(j):
                total += z[j] * z[m]
        i += 1
    return total


def scratch_break(w, x, limit):
    """A loop with break (a while loop after lowering) over rows with a scratch array."""
    n, d = x.shape
    z = np.empty(d)
    total = 0.0
    for i in range(n):
        for j in range(d):
            z[j] = math.tanh(x[i, j] - w[j])
        for j in range(d):
            for m in range(d):
                total += z[j] * z[m] * w[m]
        if total > limit:
            break
    return total


def recurrence_break(x, a):
    """A recurrence that may stop early, its `break` before the update: the adjoint needs each
    trip's break flag (recomputed from the trip number, not taped)."""
    s = 0.0
    for i in range(x.shape[0]):
        if s > 1.0:
            break
        s = math.sin(s * a + x[i]) + 0.5 * s
    return s


def integer_doubled_nested(a, b, c):
    """An integer doubled in a nested loop and read by a float: its update `c += c` is no
    constant step, so reverse mode tapes c rather than recomputing it from the trip count
    (found by the random-program test: the zero-trip form once failed to build)."""
    for i in range(3):
        for j in range(2):
            c += c
            a = 0.5 * a + min(a + c, 5.5)
    return a + b + c


def integer_doubled_zero_trip(a, b, c):
    """The random-program test's case: the same doubling in loops that never run."""
    for i in range(0):
        for i in range(0):
            c += c
            a = (((0.5 + 0.5) + (0.5 + 0.5)) + min((a + c), 0.5))
    return a + b + c


def integer_plus_index(a, b, c):
    """An integer grown by the loop's own index: not a constant step either."""
    for i in range(4):
        c += i
        a = a * 0.5 + a * c
    return a + b


def integer_plus_inner_index(a, b, c):
    """An integer grown by a triangular inner loop's index."""
    for i in range(3):
        for j in range(i):
            c += j
            a = a * 0.5 + a * c
    return a * b


def integer_doubled_outer(a, b, c, n):
    """An integer doubled in the outer loop and read by an inner loop."""
    for i in range(n):
        c = c + c
        for j in range(2):
            a = a * 0.25 + c * a
    for i in range(n):
        for i in range(n):
            c += c
            a = 4.0 + min(a + c, 0.5)
    return a + b + c

def _value_and_count(p, q):
    if p > q[0]:
        return -1.5, -7
    return p * 2.0, 10 * math.ceil(p)


def tuple_with_an_int_from_two_returns(m, x):
    """A callee returning (float, int) from two places: forward mode's tangent of the pair is
    (float, float) on both paths (the fuzzer found an int-typed tangent on one)."""
    u, k = _value_and_count(x, m)
    return float(u ** 3) + k


def tuple_from_several_returns(x, n):
    """A pair returned from a loop and from two other places (reverse mode refused a merged
    tuple: passes/split_tuples.py)."""
    w = 0
    while True:
        w += 1
        if w > n:
            break
        if w * x > 3.0:
            return math.sin(x), w
    if x > 1.0:
        return x * x, 1
    return x, 2


def tuple_carried_by_a_loop(x, n):
    """A tuple variable reassigned in a loop is carried by it (it kept its value from before
    the loop, silently)."""
    pair = (x, 0.5)
    for i in range(n):
        pair = (pair[1] * x + i, pair[0] - x * x)
    return pair


def tuple_reassigned_in_a_branch(x):
    pair = (x, 1.0)
    if x > 0:
        pair = (2 * x, 3.0)
    return pair[0] * pair[1]


def shape_tuple_in_a_loop(a, n):
    s = a.shape
    for i in range(n):
        s = (s[0] + i,)
    return s


R = np.random.default_rng(0)
V = R.standard_normal(7)
W = R.standard_normal(7)
M = R.standard_normal((3, 4))
M2 = R.standard_normal((4, 2))
U = R.uniform(0, 1, 20)

CASES = [
    (poly, [(2.0,), (-1.5,), (3,)]),
    (rational, [(1.0, 2.0), (3, 1), (0.5, -2.0)]),
    (int_arith, [(7, 3), (-7, 3), (12, -5)]),
    (mixed, [(3, 1.5), (2, 0.25)]),
    (float_mod, [(7.5, 2.0), (-7.5, 2.0), (5.25, -1.5)]),
    (negatives, [(7, 2), (8, 3)]),
    (math_funcs, [(0.5,), (2.0,), (1,)]),
    (more_math, [(0.7,), (-1.3,)]),
    (numpy_scalar_funcs, [(0.5,), (-2.0,), (np.float32(1.5),), (np.float64(0.25),)]),
    (rounding, [(2.73,), (-2.71,), (5.05,)]),
    (uses_globals, [(2.0,), (3,)]),
    (builtins_minmax, [(1, 5, 3), (2.5, -1.0, 7.0), (4, 2.0, 1)]),
    (power_forms, [(2.0, 3), (1.5, 0)]),
    (chained_compare, [(5,), (0,), (11.5,)]),
    (bool_ops, [(1, 2), (-6, 1), (3, -1), (-1, -2)]),
    (conditional_expr, [(3.0,), (-8.0,), (1,)]),
    (tuple_swap, [(1, 2.5)]),
    (tuple_return, [(3.0,), (-1,)]),
    (tuple_with_an_int_from_two_returns, [(np.array([0.5, 1.0]), 0.3),
                                          (np.array([0.5, 1.0]), 0.9)]),
    (tuple_from_several_returns, [(0.5, 4), (1.3, 4), (2.0, 4), (1.2, 1)]),
    (tuple_carried_by_a_loop, [(0.7, 3), (-1.25, 0)]),
    (tuple_reassigned_in_a_branch, [(0.5,), (-0.5,)]),
    (shape_tuple_in_a_loop, [(np.array([0.5, 2.0]), 3), (np.array([1.5]), 0)]),
    (augmented, [(2.0,), (5,)]),
    (truthiness, [(0,), (3,), (0.0,)]),
    (sign, [(2.5,), (-1,), (0,)]),
    (piecewise, [(-3.0,), (0.5,), (4.0,)]),
    (nested_if, [(1.0, 2.0), (1.0, -2.0), (-1.0, 2.0), (-1.0, -2.0)]),
    (early_return, [(-1.0,), (2.0,), (7.0,)]),
    (type_widening, [(1,), (5,)]),
    (clamp, [(0.5, 0.0, 1.0), (-1.0, 0.0, 1.0), (2.0, 0.0, 1.0)]),
    (sum_range, [(0,), (10,), (100,)]),
    (sum_floats, [(10,), (1,)]),
    (range_step, [(10,), (7,), (0,)]),
    (range_negative_empty, [(5,), (-3,)]),
    (nested_loops, [(6,), (0,)]),
    (while_loop, [(27,), (1,)]),
    (gcd, [(48, 18), (17, 5), (0, 4)]),
    (break_loop, [(5,), (20,)]),
    (continue_loop, [(10,), (3,)]),
    (while_break, [(10.0,)]),
    (return_in_loop, [(91,), (97,), (2,)]),
    (nested_break, [(5,)]),
    (loop_var_type_change, [(3,), (0,)]),
    (newton_sqrt, [(2.0,), (10.0,)]),
    (series_exp, [(1.0,), (-2.0,)]),
    (assert_positive, [(4.0,)]),
    (horner, [(0.7,), (1.3,)]),
    (while_uses_outer, [(0.7, 1.2)]),
    (array_sum, [(V,), (V[::2],), (np.zeros(0),)]),
    (array_iter, [(V,)]),
    (dot, [(V, W)]),
    (matrix_sum, [(M,), (M.T,)]),
    (matrix_chain_index, [(M,)]),
    (negative_index, [(V,)]),
    (cumsum_inplace, [(V,)]),
    (matvec, [(M, V[:4])]),
    (matmul, [(M, M2)]),
    (recurrence, [(V,)]),
    (scale_inplace, [(V.copy(), 2.0)]),
    (row_views, [(M,)]),
    (argmax, [(V,), (W,)]),
    (float32_accumulate, [(V.astype(np.float32),)]),
    (float32_mixed, [(V.astype(np.float32),)]),
    (int_array, [(np.arange(6),)]),
    (bool_array, [(V > 0, W)]),
    (alloc_shapes, [(4,)]),
    (stencil, [(V,)]),
    (histogram, [(U, 4)]),
    (bubble_sort, [(V.copy(),)]),
    (hyp, [(3.0, 4.0)]),
    (calls_with_control, [(V,)]),
    (calls_early_return, [(-2.0, 3.0)]),
    (calls_mutating, [(V.copy(),)]),
    (norm2, [(V,)]),
    (strided, [(M[:, 1],), (V[::-2],)]),
    (bool_accumulate, [(V > 0,), (np.zeros(3, dtype=bool),), (np.ones(2, dtype=bool),)]),
    (overwritten_increment, [(V, W)]),
    (mixture_like, [(M[:, :3] * 0.3, M[:, 1:] * 0.5, M.T[:, :3])]),
    (scratch_recompute, [(V[:4], M)]),
    (scratch_while, [(V[:4], M), (V[:4], M[:0])]),
    (scratch_break, [(V[:4], M, 1.0), (V[:4], M, 100.0)]),
    (recurrence_break, [(V, 0.7), (np.abs(V) + 0.5, 0.7)]),
    (integer_doubled_nested, [(0.3, 0.7, 1), (0.3, 0.7, -2)]),
    (integer_doubled_zero_trip, [(0.0, 0.0, 0)]),
    (integer_plus_index, [(0.3, 0.7, 1)]),
    (integer_plus_inner_index, [(0.3, 0.7, 1)]),
    (integer_doubled_outer, [(0.3, 0.7, 1, 3), (0.0, 0.0, 0, 0)]),
]
