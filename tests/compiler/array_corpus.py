"""Whole-array numpy code (issue 11), written the way people write it: losses, softmax, small
networks, optimisation test functions, linear algebra, reductions, broadcasting, views and
indexing. Every function is plain numpy; the compiled version must give numpy's answer.

CASES rows are (name, function, args, differentiate):
- args is a function returning a fresh argument tuple on each call (deterministic data), so a
  case may pass views (`[::2]`, `.T`) and a function that writes into its arguments gets
  untouched ones each time;
- differentiate is the tuple of argument positions to differentiate, or None when the function
  is not differentiable (integer or boolean results, construction from sizes, writes into its
  arguments).
Data are drawn away from kinks (abs at 0, ties in max, clip bounds) so that finite differences
are a fair reference. Matrices given to det/inv/solve are diagonally dominant.
"""

import numpy as np

HUBER_DELTA = 1.0
EPS = 1e-5


# -- losses ------------------------------------------------------------------------------------

def mse(pred, target):
    return np.mean((pred - target) ** 2)


def sum_of_squares(r):
    return np.sum(r * r)


def huber(pred, target):
    r = pred - target
    a = np.abs(r)
    return np.sum(np.where(a <= HUBER_DELTA, 0.5 * r**2, HUBER_DELTA * (a - 0.5 * HUBER_DELTA)))


def log_cosh_loss(pred, target):
    return np.sum(np.log(np.cosh(pred - target)))


def weighted_mse(pred, target, weights):
    return np.sum(weights * (pred - target) ** 2) / np.sum(weights)


def cross_entropy(logits, onehot):
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / logits.shape[0]


def nll_int_labels(logits, labels):
    m = logits.max(axis=1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -np.mean(logp[np.arange(logits.shape[0]), labels])


def binary_cross_entropy(z, y):
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def ridge(w, X, y, lam):
    r = X @ w - y
    return np.sum(r**2) + lam * np.dot(w, w)


def squared_hinge(w, X, y):
    return np.sum(np.maximum(0.0, 1.0 - y * (X @ w)) ** 2)


def gaussian_nll(mu, log_sigma, x):
    z = (x - mu) / np.exp(log_sigma)
    return np.sum(0.5 * z**2 + log_sigma) + 0.5 * x.size * np.log(2.0 * np.pi)


# -- softmax and logsumexp ----------------------------------------------------------------------

def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def softmax_rows(X):
    e = np.exp(X - np.max(X, axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def log_softmax_rows(X):
    m = X.max(axis=-1, keepdims=True)
    return X - m - np.log(np.sum(np.exp(X - m), axis=-1, keepdims=True))


def logsumexp_columns(X):
    m = X.max(axis=0)
    return m + np.log(np.exp(X - m).sum(axis=0))


def softmax_entropy(x):
    e = np.exp(x - x.max())
    p = e / e.sum()
    return -np.sum(p * np.log(p))


def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = w / w.sum(axis=1, keepdims=True)
    return w @ V


def attention_loss(Q, K, V):
    return np.sum(attention(Q, K, V) ** 2)


# -- small networks -----------------------------------------------------------------------------

def mlp_forward(x, W1, b1, W2, b2):
    h = np.tanh(x @ W1 + b1)
    return h @ W2 + b2


def mlp_loss(W1, b1, W2, b2, X, y):
    out = mlp_forward(X, W1, b1, W2, b2)
    return np.mean((out[:, 0] - y) ** 2)


def relu_layer(x, W, b):
    return np.maximum(x @ W + b, 0.0)


def sigmoid_layer(x, W, b):
    return 1.0 / (1.0 + np.exp(-(x @ W + b)))


def residual_block(x, W):
    return x + np.tanh(x @ W)


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS)


def leaky_relu(x):
    return np.where(x > 0, x, 0.01 * x)


# -- optimisation test functions ----------------------------------------------------------------

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rastrigin(x):
    return 10.0 * len(x) + np.sum(x**2 - 10.0 * np.cos(2.0 * np.pi * x))


def least_squares(A, x, b):
    return np.sum((A @ x - b) ** 2)


def quadratic_form(x, A):
    return x @ A @ x


def gradient_descent(w, X, y):
    for _ in range(3):
        w = w - 0.05 * X.T @ (X @ w - y)
    return np.sum(w**2)


# -- a Gaussian mixture -------------------------------------------------------------------------

def gmm_loglik(X, means, log_vars, logits):
    log_w = logits - logsumexp(logits)
    diff = X[:, None, :] - means[None, :, :]
    comp = -0.5 * np.sum(diff**2 / np.exp(log_vars) + log_vars + np.log(2.0 * np.pi), axis=2)
    a = comp + log_w
    m = np.max(a, axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.sum(np.exp(a - m), axis=1)))


def gmm_by_component(X, means, Ls):
    """GradBench's form: one matrix product per component (BLAS from 8192 multiply-adds),
    stored into a column, with a row-wise log-sum-exp; its adjoint broadcasts a column
    (reshaped to (n, 1)) along the rows of each product's cotangent."""
    n = X.shape[0]
    k_count = means.shape[0]
    beta = np.zeros((n, k_count))
    for k in range(k_count):
        y = (X - means[k]) @ Ls[k].T
        beta[:, k] = -0.5 * np.sum(y * y, axis=1)
    top = np.max(beta, axis=1, keepdims=True)
    return np.sum(top[:, 0] + np.log(np.sum(np.exp(beta - top), axis=1)))


def column_scaled(w, Y):
    return np.sum(np.reshape(w, (Y.shape[0], 1)) * Y * Y, axis=0)


# -- ODE steps ----------------------------------------------------------------------------------

def chain_rhs(y):
    dy = np.zeros_like(y)
    dy[1:-1] = y[:-2] - 2.0 * y[1:-1] + y[2:]
    dy[0] = -y[0]
    dy[-1] = -y[-1]
    return dy


def rk4_step(y, h):
    k1 = chain_rhs(y)
    k2 = chain_rhs(y + 0.5 * h * k1)
    k3 = chain_rhs(y + 0.5 * h * k2)
    k4 = chain_rhs(y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def rk4_energy(y0):
    y = y0
    for _ in range(4):
        y = rk4_step(y, 0.1)
    return np.sum(y**2)


def oscillator_euler(y0, h):
    y = y0.copy()
    for _ in range(5):
        y = y + h * np.array([y[1], -y[0] - 0.1 * y[1]])
    return y


def shifted_field(x, y):
    return np.concatenate((x[:1], x[1:] * y[:-1]))


def chain_ode(x, s):
    """GradBench's ode: RK4 steps of a field that shifts the state by one index (joined
    pieces of one length, stages sliced inside the loop: shadows made by the reversed loop,
    slices of lazy values in the LLVM backend)."""
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = shifted_field(x, y)
        k2 = shifted_field(x, y + h / 2 * k1)
        k3 = shifted_field(x, y + h / 2 * k2)
        k4 = shifted_field(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum(y[-3:] * y[:3]) + y[-1]


# loops carrying whole arrays (their adjoints are carried by the reversed loop as values)
def rebuilt_sum(x, p):
    r = np.zeros(p.shape[0])
    for j in range(x.shape[0]):
        r = r + x[j] * p
    return np.sum(r * r)


def rnn_loss(w, b, h0, n):
    h = h0
    for _ in range(n):
        h = np.tanh(w @ h + b)
    return np.sum(h)


def normalized_powers(a, v0):
    v = v0
    for _ in range(3):
        v = a @ v
        v = v / np.sqrt(np.sum(v * v))
    return np.sum(v * np.array([1.0, 2.0, 3.0]))


def scaled_state(x, y):
    s = x
    t = y
    for k in range(3):
        s = s * t + k
        t = t - 0.1 * s
    return np.sum(s) + np.sum(t * t)


def untouched_carry(x, y):
    s = x
    acc = 0.0
    for k in range(4):
        acc += np.sum(s * y) * k
    return acc + np.sum(s)


def nested_carry(x):
    s = x
    for i in range(2):
        for j in range(3):
            s = np.sin(s) + 0.5 * j
        s = s * (i + 1.5)
    return np.sum(s)


def carry_then_index(x):
    s = x
    for k in range(3):
        s = s * 1.5 + x
    return s[0] + s[-1] * 2.0


def carry_from_slice(x):
    s = x[1:]
    for k in range(3):
        s = s + x[:-1] * k
    return np.sum(s * s)


def carry_with_while(x):
    s = x
    k = 0
    while k < 3:
        s = s * 0.5 + np.cos(s)
        k += 1
    return np.sum(s)


# arrays a loop writes and reads again: each trip's contents are what the adjoint reads
def stores_then_sum(a, x):
    b = np.zeros(2)
    total = 0.0
    for i in range(x.shape[0]):
        b[0] = a[0] * x[i]
        b[1] = a[1] * x[i]
        total += np.sum(b * b)
    return total


def stores_then_max(a, x):
    b = np.zeros(2)
    total = 0.0
    for i in range(x.shape[0]):
        b[0] = a[0] * x[i]
        b[1] = a[1] * x[i]
        total += np.max(b)
    return total


def rows_updated_in_place(w, x):
    h = np.zeros((2, 3))
    total = 0.0
    for t in range(x.shape[0]):
        for i in range(2):
            h[i] = np.tanh(h[i] * w + x[t])
        total += np.sum(h)
    return total


def rows_updated_from_copy(w, x):
    h = np.zeros((2, 3))
    total = 0.0
    for t in range(x.shape[0]):
        for i in range(2):
            v = h[i].copy()
            h[i] = np.tanh(v * w + x[t])
        total += np.sum(h)
    return total


def view_read_after_write(x, h0):
    h = h0.copy()
    a = h[0]  # a view: it sees the write below
    h[0] = np.tanh(h[0] * x)
    return np.sum(a * x)


def view_carried_across_writes(x, h0):
    h = h0.copy()
    total = 0.0
    for t in range(3):
        a = x * 1.0
        for i in range(2):
            h[i] = np.tanh(h[i] * a)
            a = h[i]  # carried to the next layer, then overwritten on the next step
        total += np.sum(a)
    return total


def view_merged_by_branch(x, h0):
    h = h0.copy()
    if x[0] > 0:
        a = h[0]
    else:
        a = h[1]
    h[0] = np.tanh(h[0] * x)
    h[1] = np.sin(h[1] * x)
    return np.sum(a * x)


def view_read_in_loop(x, h0):
    h = h0.copy()
    a = h[0]
    for t in range(3):
        h[0] = np.tanh(h[0] * x)
        x = x + a
    return np.sum(x * a)


def view_updated_twice(x, h0):
    h = h0.copy()
    a = h[0]
    h[0] += x
    h[0] = h[0] * a
    return np.sum(a * h)


def reshape_read_before_write(x, h0):
    h = h0.copy()
    b = h.reshape(-1)
    s = np.sum(b * x[0])
    h[0] = np.tanh(h[0] * x)
    return s + np.sum(h)


def transpose_read_after_write(x, h0):
    h = h0.copy()
    b = h.T
    h[0] = np.tanh(h[0] * x)
    return np.sum(b[0] * b[1])


# -- 2x2 systems and linear algebra -------------------------------------------------------------

def jacobian_2x2(p):
    x = p[0]
    y = p[1]
    return np.array([[2.0 * x, np.cos(y)], [y * np.exp(x), x**2 - 1.0]])


def newton_2d(p):
    x = p[0]
    y = p[1]
    F = np.array([x**2 + y - 2.0, np.sin(x) * y - 0.5])
    J = np.array([[2.0 * x, 1.0], [np.cos(x) * y, np.sin(x)]])
    return p - np.linalg.solve(J, F)


def det_loss(A):
    return np.linalg.det(A) ** 2


def logdet_gram(L):
    return np.log(np.linalg.det(L @ L.T))


def inv_sum(A):
    return np.sum(np.linalg.inv(A))


def inv_quadratic(A, v):
    return v @ np.linalg.inv(A) @ v


def solve_norm(A, b):
    x = np.linalg.solve(A, b)
    return np.dot(x, x)


def solve_matrix(A, B):
    return np.linalg.solve(A, B)


def trace_product(A, B):
    return np.trace(A @ B)


def frobenius(A):
    return np.linalg.norm(A)


def vector_norm(x):
    return np.linalg.norm(x)


def normalize(x):
    return x / np.linalg.norm(x)


def outer_weighted(u, v, M):
    return np.sum(np.outer(u, v) * M)


def outer(u, v):
    return np.outer(u, v)


def inner(u, v):
    return np.inner(u, v)


def dot_matvec(A, x):
    return np.dot(A, x)


def vec_mat(v, A):
    return v @ A


def gram(X):
    return X.T @ X


def matmul_fn(A, B):
    return np.matmul(A, B)


def batched_matmul(A, B):
    return A @ B


def batched_matmul_loss(A, B):
    return np.sum((A @ B) ** 2)


def transpose_axes(T):
    return np.transpose(T, (1, 0, 2)) * 2.0


def transpose_default(A):
    return np.transpose(A) + A.T


# -- loops over rows mixed with array operations ------------------------------------------------

def rows_dot_squared(X, w):
    total = 0.0
    for i in range(X.shape[0]):
        total += np.dot(X[i], w) ** 2
    return total


def iterate_rows(X):
    total = 0.0
    for row in X:
        total += np.sum(np.sin(row))
    return total


def normalize_rows_loop(X):
    Y = np.zeros(X.shape)
    for i in range(X.shape[0]):
        Y[i, :] = X[i] / np.linalg.norm(X[i])
    return Y


def accumulate_rows(X, v):
    A = np.zeros((X.shape[0], v.shape[0]))
    for i in range(X.shape[0]):
        A[i, :] += v * X[i, 0]
        A[i] += X[i, 1]
    return A


def power_iteration(A):
    v = np.ones(A.shape[0])
    for _ in range(6):
        v = A @ v
        v = v / np.linalg.norm(v)
    return v @ A @ v


# -- reductions ---------------------------------------------------------------------------------

def sum_axis0(X):
    return np.sum(X, axis=0)


def sum_last_axis(X):
    return X.sum(axis=-1)


def vector_sum_axis0(x):
    return np.sum(x * x, axis=0) + np.mean(np.sin(x), axis=-1)


def sum_axis_tuple(T):
    return np.sum(T, axis=(0, 2))


def mean_axis_tuple_keepdims(T):
    return T - np.mean(T, axis=(1, 2), keepdims=True)


def center_columns(X):
    return X - X.mean(axis=0, keepdims=True)


def variance(x):
    return np.mean((x - np.mean(x)) ** 2)


def product(x):
    return np.prod(x)


def product_rows(X):
    return np.prod(X, axis=1)


def spread(x):
    return np.max(x) - np.min(x)


def row_max_keepdims(X):
    return X.max(axis=1, keepdims=True) - X.min(axis=1, keepdims=True)


def pick_at_argmax(x, y):
    return y[np.argmax(x)] * x[np.argmin(x)]


def argmin_columns(X):
    return np.argmin(X, axis=0)


def argmax_flat(x):
    return np.argmax(x)


def argmax_method(X):
    return X.argmax(axis=1)


def builtin_sum_len(x):
    return sum(x) / len(x)


def method_reductions(X):
    return X.sum() + X.mean() * X.max() - X.min() + X.prod()


def count_positive(x):
    return np.sum(x > 0)


def masked_weighted_sum(x):
    return np.sum((x >= 0.5) * x)


# -- broadcasting and promotion -----------------------------------------------------------------

def broadcast_col_row(a, b):
    return a * b + a - b


def pairwise_sq_dists(X, Y):
    return np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)


def bias_add(X, b):
    return X + b


def outer_by_broadcast(u, v):
    return u[:, None] * v[None, :]


def scalar_mix(x):
    return 2.0 * x - 1 / (1 + x**2) + 3 * x / 4


def int_array_true_divide(k, x):
    return k / 2 + x


def promote_f32_f64(x32, y64):
    return x32 * y64 + x32


def int_array_arith(k):
    return k * 2 + k // 3 - k % 4


def floordiv_mod(x):
    return x // 0.5 + x % 0.7


def power_and_negation(x):
    return -x**3 + np.abs(x) ** 2.5


# -- elementwise functions ----------------------------------------------------------------------

def ufunc_zoo(x):
    return (np.sin(x) + np.cos(x) * np.tan(0.3 * x) + np.exp(-x) + np.log1p(x * x)
            + np.expm1(0.5 * x) + np.sqrt(np.abs(x)) + np.sinh(x) - np.cosh(0.5 * x))


def inverse_trig(x):
    return np.arcsin(0.3 * x) + np.arccos(0.2 * x) + np.arctan(x) + np.arctan2(x, 2.0)


def log_exp_chain(x):
    return np.log(np.exp(x) + 1.0) - np.log10(2.0 + x * x)


def filled_then_written(x, v):
    """np.full of a differentiated value, partly overwritten: the value's gradient is the sum
    of what reaches the elements it still fills."""
    a = np.full((3, x.shape[0]), v * v)
    a[1] = x
    return np.sum(np.sin(a) * x)


def filled_in_a_loop(x, v):
    s = 0.0
    for i in range(x.shape[0]):
        a = np.full(2, v + i)
        a[0] += x[i]
        s += np.sum(a * a)
    return s


def clip_loss(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2)


def sign_sqrt(x):
    return np.sign(x) * np.sqrt(np.abs(x))


def maximum_minimum(x, y):
    return np.maximum(x, y) - np.minimum(x, 0.3 * y)


def softplus_sum(x, y):
    return np.sum(np.logaddexp(x, y))


def square_reciprocal(x):
    return np.square(x) + np.reciprocal(1.0 + x**2)


def floor_ceil(x):
    return np.floor(x) * x + np.ceil(x)


def bool_logic(x, y):
    return ((x > 0) & (y < 0)) | ~(x > y)


def where_select(x, y):
    return np.where(x > y, x * y, x - y)


def tanh_sum(x):
    return np.sum(np.tanh(x))


# -- shapes and construction --------------------------------------------------------------------

def reshape_transpose_ravel(x):
    return x.reshape(3, 4).T.ravel()


def reshape_infer(x):
    return np.sum(x.reshape((2, -1)) ** 2, axis=1)


def expand_dims_add(x):
    return np.expand_dims(x, 0) + x[:, None]


def none_index(x):
    return x[None] * x[None, :].T


def concatenate_list(x, y):
    return np.concatenate([x, 2.0 * y])


def concatenate_axis1(A, B):
    return np.concatenate((A, B), axis=1)


def stack_axis1(x, y):
    return np.stack([x, y * y], axis=1)


def array_of_scalars(x):
    return np.array([x[0] * x[1], x[1] ** 2, np.sin(x[2])])


def array_of_arrays(a, b):
    return np.array([a, 2.0 * b, a * b])


def zeros_ones_full(n):
    return np.zeros((n, 3)) + np.ones((n, 3)) * 2 + np.full((n, 3), 0.5)


def weighted_by_position(x):
    t = np.linspace(0.0, 1.0, x.shape[0])
    return np.sum(x * t) + np.sum(np.arange(x.shape[0]) * x)


def arange_steps(n):
    return np.arange(1, n, 2) * 0.5 + np.arange(n // 2)


def to_float32(x):
    return (x * 2.0).astype(np.float32)


def float32_through_float64(x):
    return np.sum(x.astype(np.float64) ** 2)


def empty_then_fill(n):
    a = np.empty((n, 2))
    a[:, 0] = 1.0
    a[:, 1] = np.arange(n)
    return a


# -- slicing, views and stores ------------------------------------------------------------------

def even_minus_odd(x):
    return x[::2] - x[1::2]


def negative_bounds(x):
    return x[-3:] * x[:3] + x[-4:-1]


def reverse_product(x):
    return x[::-1] * x


def ellipsis_ends(T):
    return T[..., 0] + T[..., -1]


def mixed_int_slice(A):
    return A[1, :] * A[:, 0] + A[-1, 1:3].sum()


def strided_block(A):
    return A[::2, 1:] * 3.0


def shift_right(x):
    y = np.zeros(x.shape[0])
    y[1:] = x[:-1]
    y[0] = x[-1]
    return y * x


def rows_plus_equal(v):
    a = np.zeros((3, v.shape[0]))
    for i in range(3):
        a[i, :] += v * (i + 1)
    return a


def write_through_view(x):
    y = x.copy()
    v = y[1:]
    v *= 2.0
    v[0] = 0.0
    return y


def fill_every_other(n):
    a = np.zeros(n)
    b = a[::2]
    b[:] = 1.0
    return a


def write_into_argument(out, x):
    out[1:] = x[:-1]
    out[0] = 0.0
    return np.sum(out)


def column_assign(X):
    Y = X.copy()
    Y[:, 0] = Y[:, 1] ** 2
    return np.sum(Y * X)


def diff_via_slices(x):
    return np.sum((x[1:] - x[:-1]) ** 2)


# -- integer-array and boolean-mask reads -------------------------------------------------------

def gather_sum(x, idx):
    return np.sum(x[idx] ** 2)


def gather_literal(x):
    return x[np.array([0, 2])] * 3.0


def gather_rows(X, idx, w):
    return X[idx] @ w


def positive_part_sum(x):
    return np.sum(x[x > 0])


def masked_mean(x, mask):
    return np.mean(x[mask] ** 2)


def masked_rows(X):
    return X[X[:, 0] > 0]


# -- argument factories ---------------------------------------------------------------------------

def _n(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _u(*shape, lo=0.5, hi=1.5, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def _dominant(n, seed=0, dtype=np.float64):
    """A diagonally dominant (well-conditioned, invertible) n x n matrix."""
    return (_n(n, n, seed=seed) + 4.0 * np.eye(n)).astype(dtype)


def _onehot(n, k, seed=0):
    labels = np.random.default_rng(seed).integers(0, k, n)
    return np.eye(k)[labels]


def _f32(*arrays):
    return tuple(a.astype(np.float32) for a in arrays)


F32 = np.float32



# -- in-place updates whose derivative reads the array's old value (ad/inplace.py) -------------

def scaled_in_place(x, y):
    z = x * 1.0
    z *= y
    z /= y + 2.0
    z -= 1.0
    return np.sum(z * z)


def powered_in_place(x):
    z = x + 0.5
    z **= 3
    return np.sum(z)


def floor_and_mod_in_place(x, y):
    z = 3.0 * x
    z //= 0.7
    w = 3.0 * x
    w %= 0.7
    return np.sum(z * y + w * y)


def slice_scaled_in_place(x, y):
    z = x * 1.0
    z[1:] *= y[:-1]
    z[:2] /= y[1:3] + 1.0
    return np.sum(z * x)


def rows_scaled_by_vector(a, v):
    z = a * 1.0
    z *= v
    z[0] **= 2
    return np.sum(z)


def scaled_by_element(x, y):
    z = x * 1.0
    z *= y[0]
    z /= np.sum(y)
    return np.sum(z * z)


def scaled_in_loop(x, y):
    z = x * 1.0
    for _ in range(3):
        z *= y
        z += x
    return np.sum(z)

CASES = [
    # losses
    ("mse", mse, lambda: (_n(6), _n(6, seed=1)), (0, 1)),
    ("mse-f32", mse, lambda: _f32(_n(6), _n(6, seed=1)), (0,)),
    ("mse-2d", mse, lambda: (_n(3, 4), _n(4, seed=1)), (0, 1)),
    ("sum_of_squares", sum_of_squares, lambda: (_n(5),), (0,)),
    ("sum_of_squares-strided", sum_of_squares, lambda: (np.arange(12.0)[::2],), (0,)),
    ("sum_of_squares-empty", sum_of_squares, lambda: (np.zeros(0),), (0,)),
    ("sum_of_squares-f32", sum_of_squares, lambda: (_n(7, dtype=F32),), (0,)),
    ("huber", huber, lambda: (3.0 * _n(8), _n(8, seed=1)), (0, 1)),
    ("huber-f32", huber, lambda: _f32(3.0 * _n(8), _n(8, seed=1)), (0,)),
    ("log_cosh_loss", log_cosh_loss, lambda: (_n(5), _n(5, seed=1)), (0,)),
    ("weighted_mse", weighted_mse, lambda: (_n(5), _n(5, seed=1), _u(5)), (0, 2)),
    ("cross_entropy", cross_entropy, lambda: (_n(4, 3), _onehot(4, 3)), (0,)),
    ("cross_entropy-f32", cross_entropy, lambda: _f32(_n(4, 3), _onehot(4, 3)), (0,)),
    ("nll_int_labels", nll_int_labels, lambda: (_n(4, 3), np.array([0, 2, 1, 2])), (0,)),
    ("binary_cross_entropy", binary_cross_entropy,
     lambda: (_n(6), (_n(6, seed=1) > 0).astype(np.float64)), (0,)),
    ("ridge", ridge, lambda: (_n(3), _n(5, 3, seed=1), _n(5, seed=2), 0.1), (0, 3)),
    ("ridge-transposed", ridge, lambda: (_n(3), _n(3, 5, seed=1).T, _n(5, seed=2), 0.1), (0,)),
    ("squared_hinge", squared_hinge,
     lambda: (_n(3), _n(6, 3, seed=1), np.sign(_n(6, seed=2))), (0, 1)),
    ("gaussian_nll", gaussian_nll, lambda: (_n(4), 0.3 * _n(4, seed=1), _n(4, seed=2)),
     (0, 1, 2)),
    ("gaussian_nll-broadcast", gaussian_nll,
     lambda: (_n(3, 1), 0.3 * _n(4, seed=1), _n(3, 4, seed=2)), (0, 1)),
    # softmax and logsumexp
    ("logsumexp", logsumexp, lambda: (_n(6),), (0,)),
    ("logsumexp-large", logsumexp, lambda: (_n(6) + 800.0,), (0,)),
    ("logsumexp-f32", logsumexp, lambda: (_n(6, dtype=F32),), (0,)),
    ("softmax", softmax, lambda: (_n(5),), (0,)),
    ("softmax-reversed", softmax, lambda: (_n(5)[::-1],), (0,)),
    ("softmax_rows", softmax_rows, lambda: (_n(3, 4),), (0,)),
    ("softmax_rows-f32", softmax_rows, lambda: (_n(3, 4, dtype=F32),), (0,)),
    ("log_softmax_rows", log_softmax_rows, lambda: (_n(4, 3).T,), (0,)),
    ("logsumexp_columns", logsumexp_columns, lambda: (_n(4, 3),), (0,)),
    ("softmax_entropy", softmax_entropy, lambda: (_n(5),), (0,)),
    ("attention", attention, lambda: (_n(3, 4), _n(5, 4, seed=1), _n(5, 2, seed=2)),
     (0, 1, 2)),
    ("attention_loss", attention_loss, lambda: (_n(3, 4), _n(5, 4, seed=1), _n(5, 2, seed=2)),
     (0, 1, 2)),
    ("attention_loss-f32", attention_loss,
     lambda: _f32(_n(3, 4), _n(5, 4, seed=1), _n(5, 2, seed=2)), (0,)),
    # small networks
    ("mlp_forward", mlp_forward,
     lambda: (_n(4, 3), _n(3, 5, seed=1), _n(5, seed=2), _n(5, 1, seed=3), _n(1, seed=4)),
     (0, 1, 2, 3, 4)),
    ("mlp_forward-f32", mlp_forward,
     lambda: _f32(_n(4, 3), _n(3, 5, seed=1), _n(5, seed=2), _n(5, 1, seed=3), _n(1, seed=4)),
     (1,)),
    ("mlp_loss", mlp_loss,
     lambda: (_n(3, 5), _n(5, seed=1), _n(5, 1, seed=2), _n(1, seed=3), _n(6, 3, seed=4),
              _n(6, seed=5)), (0, 1, 2, 3)),
    ("mlp_loss-f32", mlp_loss,
     lambda: _f32(_n(3, 5), _n(5, seed=1), _n(5, 1, seed=2), _n(1, seed=3), _n(6, 3, seed=4),
                  _n(6, seed=5)), (0, 2)),
    ("relu_layer", relu_layer, lambda: (_n(4, 3), _n(3, 2, seed=1), _n(2, seed=2)), (0, 1, 2)),
    ("sigmoid_layer", sigmoid_layer, lambda: (_n(3), _n(3, 2, seed=1), _n(2, seed=2)),
     (0, 1, 2)),
    ("residual_block", residual_block, lambda: (_n(2, 3), _n(3, 3, seed=1)), (0, 1)),
    ("layer_norm", layer_norm, lambda: (_n(3, 5),), (0,)),
    ("layer_norm-f32", layer_norm, lambda: (_n(3, 5, dtype=F32),), (0,)),
    ("leaky_relu", leaky_relu, lambda: (_n(2, 5),), (0,)),
    # optimisation test functions
    ("rosenbrock", rosenbrock, lambda: (_n(6),), (0,)),
    ("rosenbrock-strided", rosenbrock, lambda: (np.linspace(-1.0, 1.5, 14)[1::2],), (0,)),
    ("rosenbrock-f32", rosenbrock, lambda: (_n(6, dtype=F32),), (0,)),
    ("rosenbrock-one", rosenbrock, lambda: (np.array([0.3]),), (0,)),
    ("rastrigin", rastrigin, lambda: (_n(5),), (0,)),
    ("least_squares", least_squares, lambda: (_n(5, 3), _n(3, seed=1), _n(5, seed=2)),
     (0, 1, 2)),
    ("least_squares-f32", least_squares,
     lambda: _f32(_n(5, 3), _n(3, seed=1), _n(5, seed=2)), (1,)),
    ("least_squares-empty-rows", least_squares,
     lambda: (np.zeros((0, 3)), _n(3, seed=1), np.zeros(0)), (1,)),
    ("least_squares-fortran", least_squares,
     lambda: (np.asfortranarray(_n(5, 3)), _n(3, seed=1), _n(5, seed=2)), (0, 1)),
    ("quadratic_form", quadratic_form, lambda: (_n(4), _n(4, 4, seed=1)), (0, 1)),
    ("gradient_descent", gradient_descent, lambda: (_n(3), _n(5, 3, seed=1), _n(5, seed=2)),
     (0, 1, 2)),
    # a Gaussian mixture
    ("gmm_loglik", gmm_loglik,
     lambda: (_n(6, 2), _n(3, 2, seed=1), 0.3 * _n(3, 2, seed=2), _n(3, seed=3)),
     (0, 1, 2, 3)),
    ("gmm_by_component", gmm_by_component,
     lambda: (_n(64, 12), _n(3, 12, seed=1), 0.3 * _n(3, 12, 12, seed=2)), (0, 1, 2)),
    ("column_scaled", column_scaled, lambda: (_n(5), _n(5, 4, seed=1)), (0, 1)),
    ("column_scaled-strided", column_scaled, lambda: (_n(10)[::2], _n(4, 5, seed=1).T),
     (0, 1)),
    ("gmm_loglik-f32", gmm_loglik,
     lambda: _f32(_n(6, 2), _n(3, 2, seed=1), 0.3 * _n(3, 2, seed=2), _n(3, seed=3)), (1,)),
    # ODE steps
    ("rk4_step", rk4_step, lambda: (_n(6), 0.1), (0, 1)),
    ("rk4_energy", rk4_energy, lambda: (_n(6),), (0,)),
    ("rk4_energy-strided", rk4_energy, lambda: (_n(12)[::-2],), (0,)),
    ("oscillator_euler", oscillator_euler, lambda: (np.array([1.0, 0.5]), 0.1), (0, 1)),
    ("chain_ode", chain_ode, lambda: (_n(7), 3), (0,)),
    ("chain_ode-strided", chain_ode, lambda: (_n(14)[::2], 2), (0,)),
    # 2x2 systems and linear algebra
    ("jacobian_2x2", jacobian_2x2, lambda: (np.array([0.7, -0.4]),), (0,)),
    ("newton_2d", newton_2d, lambda: (np.array([1.1, 0.8]),), (0,)),
    ("det_loss", det_loss, lambda: (_dominant(3),), (0,)),
    ("det_loss-2x2", det_loss, lambda: (_dominant(2, seed=3),), (0,)),
    ("det_loss-transposed", det_loss, lambda: (_dominant(4, seed=1).T,), (0,)),
    ("logdet_gram", logdet_gram, lambda: (_dominant(3, seed=2),), (0,)),
    ("inv_sum", inv_sum, lambda: (_dominant(3),), (0,)),
    ("inv_sum-f32", inv_sum, lambda: (_dominant(3, dtype=F32),), (0,)),
    ("inv_quadratic", inv_quadratic, lambda: (_dominant(3), _n(3, seed=1)), (0, 1)),
    ("solve_norm", solve_norm, lambda: (_dominant(4), _n(4, seed=1)), (0, 1)),
    ("solve_matrix", solve_matrix, lambda: (_dominant(3), _n(3, 2, seed=1)), (0, 1)),
    ("trace_product", trace_product, lambda: (_n(3, 4), _n(4, 3, seed=1)), (0, 1)),
    ("frobenius", frobenius, lambda: (_n(3, 4),), (0,)),
    ("vector_norm", vector_norm, lambda: (_n(5),), (0,)),
    ("vector_norm-f32", vector_norm, lambda: (_n(5, dtype=F32),), (0,)),
    ("normalize", normalize, lambda: (_n(4),), (0,)),
    ("outer_weighted", outer_weighted, lambda: (_n(3), _n(4, seed=1), _n(3, 4, seed=2)),
     (0, 1, 2)),
    ("outer", outer, lambda: (_n(3), _n(2, seed=1)), (0, 1)),
    ("inner", inner, lambda: (_n(4), _n(4, seed=1)), (0, 1)),
    ("dot_matvec", dot_matvec, lambda: (_n(3, 4), _n(4, seed=1)), (0, 1)),
    ("vec_mat", vec_mat, lambda: (_n(3), _n(3, 2, seed=1)), (0, 1)),
    ("gram", gram, lambda: (_n(4, 3),), (0,)),
    ("gram-transposed", gram, lambda: (_n(3, 4).T,), (0,)),
    ("matmul_fn", matmul_fn, lambda: (_n(2, 3), _n(3, 4, seed=1)), (0, 1)),
    ("matmul_fn-empty-inner", matmul_fn, lambda: (np.zeros((2, 0)), np.zeros((0, 3))), (0, 1)),
    ("batched_matmul", batched_matmul, lambda: (_n(2, 3, 4), _n(2, 4, 2, seed=1)), (0, 1)),
    ("batched_matmul-broadcast", batched_matmul, lambda: (_n(2, 3, 4), _n(4, 2, seed=1)),
     (0, 1)),
    ("batched_matmul_loss", batched_matmul_loss, lambda: (_n(3, 2, 2), _n(3, 2, 3, seed=1)),
     (0, 1)),
    ("batched_matmul_loss-f32", batched_matmul_loss,
     lambda: _f32(_n(3, 2, 2), _n(3, 2, 3, seed=1)), (0,)),
    ("transpose_axes", transpose_axes, lambda: (_n(2, 3, 4),), (0,)),
    ("transpose_default", transpose_default, lambda: (_n(3, 3),), (0,)),
    # loops over rows mixed with array operations
    ("rows_dot_squared", rows_dot_squared, lambda: (_n(4, 3), _n(3, seed=1)), (0, 1)),
    ("rows_dot_squared-no-rows", rows_dot_squared, lambda: (np.zeros((0, 3)), _n(3)), (0, 1)),
    ("iterate_rows", iterate_rows, lambda: (_n(3, 4),), (0,)),
    ("iterate_rows-transposed", iterate_rows, lambda: (_n(4, 3).T,), (0,)),
    ("normalize_rows_loop", normalize_rows_loop, lambda: (_n(3, 4),), (0,)),
    ("accumulate_rows", accumulate_rows, lambda: (_n(3, 2), _n(4, seed=1)), (0, 1)),
    ("power_iteration", power_iteration, lambda: (_dominant(3) + _dominant(3).T,), (0,)),
    # reductions
    ("sum_axis0", sum_axis0, lambda: (_n(3, 4),), (0,)),
    ("sum_axis0-empty", sum_axis0, lambda: (np.zeros((0, 3)),), (0,)),
    ("sum_last_axis", sum_last_axis, lambda: (_n(2, 3, 4),), (0,)),
    ("sum_last_axis-f32", sum_last_axis, lambda: (_n(2, 3, 4, dtype=F32),), (0,)),
    ("vector_sum_axis0", vector_sum_axis0, lambda: (_n(5),), (0,)),
    ("sum_axis_tuple", sum_axis_tuple, lambda: (_n(2, 3, 4),), (0,)),
    ("mean_axis_tuple_keepdims", mean_axis_tuple_keepdims, lambda: (_n(2, 3, 4),), (0,)),
    ("center_columns", center_columns, lambda: (_n(4, 3),), (0,)),
    ("variance", variance, lambda: (_n(7),), (0,)),
    ("variance-f32", variance, lambda: (_n(7, dtype=F32),), (0,)),
    ("product", product, lambda: (_u(5),), (0,)),
    ("product-empty", product, lambda: (np.zeros(0),), (0,)),
    ("product_rows", product_rows, lambda: (_u(3, 4),), (0,)),
    ("spread", spread, lambda: (_n(6),), (0,)),
    ("row_max_keepdims", row_max_keepdims, lambda: (_n(3, 4),), (0,)),
    ("pick_at_argmax", pick_at_argmax, lambda: (_n(5), _n(5, seed=1)), (0, 1)),
    ("argmin_columns", argmin_columns, lambda: (_n(4, 3),), None),
    ("argmax_flat", argmax_flat, lambda: (_n(6),), None),
    ("argmax_method", argmax_method, lambda: (_n(3, 5),), None),
    ("builtin_sum_len", builtin_sum_len, lambda: (_n(5),), (0,)),
    ("builtin_sum_len-f32", builtin_sum_len, lambda: (_n(5, dtype=F32),), (0,)),
    ("method_reductions", method_reductions, lambda: (_u(2, 3),), (0,)),
    ("count_positive", count_positive, lambda: (_n(9),), None),
    ("masked_weighted_sum", masked_weighted_sum, lambda: (_n(6),), (0,)),
    # broadcasting and promotion
    ("broadcast_col_row", broadcast_col_row, lambda: (_n(3, 1), _n(4, seed=1)), (0, 1)),
    ("broadcast_col_row-empty", broadcast_col_row, lambda: (np.zeros((0, 1)), _n(4)), (0, 1)),
    ("broadcast_col_row-f32", broadcast_col_row,
     lambda: _f32(_n(3, 1), _n(4, seed=1)), (0, 1)),
    ("broadcast_col_row-scalar", broadcast_col_row, lambda: (_n(2, 3), 0.5), (0, 1)),
    ("pairwise_sq_dists", pairwise_sq_dists, lambda: (_n(3, 2), _n(4, 2, seed=1)), (0, 1)),
    ("pairwise_sq_dists-empty", pairwise_sq_dists,
     lambda: (np.zeros((0, 2)), _n(4, 2, seed=1)), (0, 1)),
    ("bias_add", bias_add, lambda: (_n(3, 4), _n(4, seed=1)), (0, 1)),
    ("bias_add-transposed", bias_add, lambda: (_n(4, 3).T, _n(4, seed=1)[::-1]), (0, 1)),
    ("outer_by_broadcast", outer_by_broadcast, lambda: (_n(3), _n(4, seed=1)), (0, 1)),
    ("scalar_mix", scalar_mix, lambda: (_n(2, 3),), (0,)),
    ("scalar_mix-f32", scalar_mix, lambda: (_n(2, 3, dtype=F32),), (0,)),
    ("scalar_mix-one", scalar_mix, lambda: (_n(1),), (0,)),
    ("int_array_true_divide", int_array_true_divide, lambda: (np.arange(5), _n(5)), (1,)),
    ("promote_f32_f64", promote_f32_f64, lambda: (_n(4, dtype=F32), _n(4, seed=1)), (0, 1)),
    ("int_array_arith", int_array_arith, lambda: (np.arange(-4, 6),), None),
    ("floordiv_mod", floordiv_mod, lambda: (_n(6),), (0,)),
    ("power_and_negation", power_and_negation, lambda: (_n(5),), (0,)),
    # elementwise functions
    ("ufunc_zoo", ufunc_zoo, lambda: (_n(6),), (0,)),
    ("ufunc_zoo-f32", ufunc_zoo, lambda: (_n(6, dtype=F32),), (0,)),
    ("ufunc_zoo-empty", ufunc_zoo, lambda: (np.zeros((0, 2)),), (0,)),
    ("inverse_trig", inverse_trig, lambda: (_n(2, 3),), (0,)),
    ("log_exp_chain", log_exp_chain, lambda: (_n(5),), (0,)),
    ("clip_loss", clip_loss, lambda: (_n(8),), (0,)),
    ("filled_then_written", filled_then_written, lambda: (_n(4), 0.7), (0, 1)),
    ("filled_in_a_loop", filled_in_a_loop, lambda: (_n(3), -0.4), (0, 1)),
    ("sign_sqrt", sign_sqrt, lambda: (_n(5),), (0,)),
    ("maximum_minimum", maximum_minimum, lambda: (_n(6), _n(6, seed=1)), (0, 1)),
    ("maximum_minimum-broadcast", maximum_minimum, lambda: (_n(2, 3), _n(3, seed=1)), (0, 1)),
    ("softplus_sum", softplus_sum, lambda: (_n(5), _n(5, seed=1)), (0, 1)),
    ("softplus_sum-scalar", softplus_sum, lambda: (_n(5), 0.0), (0,)),
    ("square_reciprocal", square_reciprocal, lambda: (_n(5),), (0,)),
    ("floor_ceil", floor_ceil, lambda: (2.0 * _n(5),), (0,)),
    ("bool_logic", bool_logic, lambda: (_n(6), _n(6, seed=1)), None),
    ("where_select", where_select, lambda: (_n(6), _n(6, seed=1)), (0, 1)),
    ("tanh_sum", tanh_sum, lambda: (_n(3, 4)[:, ::2],), (0,)),
    # shapes and construction
    ("reshape_transpose_ravel", reshape_transpose_ravel, lambda: (_n(12),), (0,)),
    ("reshape_transpose_ravel-strided", reshape_transpose_ravel, lambda: (_n(24)[::2],), (0,)),
    ("reshape_infer", reshape_infer, lambda: (_n(6),), (0,)),
    ("expand_dims_add", expand_dims_add, lambda: (_n(3),), (0,)),
    ("none_index", none_index, lambda: (_n(3),), (0,)),
    ("concatenate_list", concatenate_list, lambda: (_n(3), _n(2, seed=1)), (0, 1)),
    ("concatenate_list-empty", concatenate_list, lambda: (np.zeros(0), _n(2, seed=1)), (0, 1)),
    ("concatenate_axis1", concatenate_axis1, lambda: (_n(2, 3), _n(2, 1, seed=1)), (0, 1)),
    ("stack_axis1", stack_axis1, lambda: (_n(3), _n(3, seed=1)), (0, 1)),
    ("array_of_scalars", array_of_scalars, lambda: (_n(3),), (0,)),
    ("array_of_arrays", array_of_arrays, lambda: (_n(2), _n(2, seed=1)), (0, 1)),
    ("zeros_ones_full", zeros_ones_full, lambda: (3,), None),
    ("zeros_ones_full-empty", zeros_ones_full, lambda: (0,), None),
    ("weighted_by_position", weighted_by_position, lambda: (_n(5),), (0,)),
    ("arange_steps", arange_steps, lambda: (7,), None),
    ("to_float32", to_float32, lambda: (_n(4),), None),
    ("float32_through_float64", float32_through_float64, lambda: (_n(4, dtype=F32),), (0,)),
    ("empty_then_fill", empty_then_fill, lambda: (4,), None),
    # slicing, views and stores
    ("even_minus_odd", even_minus_odd, lambda: (_n(8),), (0,)),
    ("even_minus_odd-strided", even_minus_odd, lambda: (_n(16)[::-2],), (0,)),
    ("negative_bounds", negative_bounds, lambda: (_n(7),), (0,)),
    ("reverse_product", reverse_product, lambda: (_n(5),), (0,)),
    ("ellipsis_ends", ellipsis_ends, lambda: (_n(2, 3, 4),), (0,)),
    ("mixed_int_slice", mixed_int_slice, lambda: (_n(3, 3),), (0,)),
    ("mixed_int_slice-f32", mixed_int_slice, lambda: (_n(3, 3, dtype=F32),), (0,)),
    ("strided_block", strided_block, lambda: (_n(5, 4),), (0,)),
    ("shift_right", shift_right, lambda: (_n(5),), (0,)),
    ("rows_plus_equal", rows_plus_equal, lambda: (_n(4),), (0,)),
    ("write_through_view", write_through_view, lambda: (_n(5),), (0,)),
    ("fill_every_other", fill_every_other, lambda: (7,), None),
    ("write_into_argument", write_into_argument, lambda: (np.ones(5), _n(5)), None),
    ("column_assign", column_assign, lambda: (_n(3, 2),), (0,)),
    ("diff_via_slices", diff_via_slices, lambda: (_n(6),), (0,)),
    ("diff_via_slices-empty", diff_via_slices, lambda: (np.zeros(0),), (0,)),
    # integer-array and boolean-mask reads
    ("gather_sum", gather_sum, lambda: (_n(5), np.array([0, 2, 2, 4])), (0,)),
    ("gather_sum-negative", gather_sum, lambda: (_n(5), np.array([-1, 0, -1])), (0,)),
    ("gather_literal", gather_literal, lambda: (_n(4),), (0,)),
    ("gather_rows", gather_rows, lambda: (_n(4, 3), np.array([3, 0, 3]), _n(3, seed=1)),
     (0, 2)),
    ("positive_part_sum", positive_part_sum, lambda: (_n(7),), (0,)),
    ("positive_part_sum-none", positive_part_sum, lambda: (-np.abs(_n(4)),), (0,)),
    ("masked_mean", masked_mean, lambda: (_n(6), _n(6, seed=1) > 0), (0,)),
    ("masked_rows", masked_rows, lambda: (_n(5, 2),), None),
    # arrays carried by loops
    ("rebuilt_sum", rebuilt_sum, lambda: (_n(4), _n(6, seed=1)), (0, 1)),
    ("rebuilt_sum-empty", rebuilt_sum, lambda: (np.zeros(0), _n(3)), (0, 1)),
    ("rnn_loss", rnn_loss, lambda: (_n(3, 3) * 0.5, _n(3, seed=1), _n(3, seed=2), 4),
     (0, 1, 2)),
    ("rnn_loss-none", rnn_loss, lambda: (_n(2, 2), _n(2, seed=1), _n(2, seed=2), 0),
     (0, 1, 2)),
    ("normalized_powers", normalized_powers,
     lambda: (_n(3, 3) + 3.0 * np.eye(3), _n(3, seed=1)), (0, 1)),
    ("scaled_state", scaled_state, lambda: (_n(4), _n(4, seed=1)), (0, 1)),
    ("untouched_carry", untouched_carry, lambda: (_n(4), _n(4, seed=1)), (0, 1)),
    ("nested_carry", nested_carry, lambda: (_n(5),), (0,)),
    ("nested_carry-2d", nested_carry, lambda: (_n(2, 3),), (0,)),
    ("carry_then_index", carry_then_index, lambda: (_n(4),), (0,)),
    ("carry_from_slice", carry_from_slice, lambda: (_n(5),), (0,)),
    ("carry_with_while", carry_with_while, lambda: (_n(4),), (0,)),
    ("stores_then_sum", stores_then_sum, lambda: (_n(2), _n(3, seed=1)), (0, 1)),
    ("stores_then_max", stores_then_max, lambda: (_n(2), _n(3, seed=1)), (0, 1)),
    ("rows_updated_in_place", rows_updated_in_place, lambda: (_n(3), _n(3, seed=1)), (0, 1)),
    ("rows_updated_from_copy", rows_updated_from_copy, lambda: (_n(3), _n(3, seed=1)),
     (0, 1)),
    # views that see later writes (their adjoints read the contents of their own time)
    ("view_read_after_write", view_read_after_write, lambda: (_n(3), _n(2, 3, seed=1)),
     (0, 1)),
    ("view_carried_across_writes", view_carried_across_writes,
     lambda: (_n(3), _n(2, 3, seed=1)), (0, 1)),
    ("view_merged_by_branch", view_merged_by_branch, lambda: (_n(3), _n(2, 3, seed=1)),
     (0, 1)),
    ("view_merged_by_branch-else", view_merged_by_branch,
     lambda: (-np.abs(_n(3)), _n(2, 3, seed=1)), (0, 1)),
    ("view_read_in_loop", view_read_in_loop, lambda: (_n(3), _n(2, 3, seed=1)), (0, 1)),
    ("view_updated_twice", view_updated_twice, lambda: (_n(3), _n(2, 3, seed=1)), (0, 1)),
    ("reshape_read_before_write", reshape_read_before_write,
     lambda: (_n(3), _n(2, 3, seed=1)), (0, 1)),
    ("transpose_read_after_write", transpose_read_after_write,
     lambda: (_n(3), _n(2, 3, seed=1)), (0, 1)),
    # in-place updates whose derivative reads the array's old value
    ("scaled_in_place", scaled_in_place, lambda: (_n(5), _u(5, seed=1)), (0, 1)),
    ("scaled_in_place-f32", scaled_in_place, lambda: _f32(_n(5), _u(5, seed=1)), (0, 1)),
    ("powered_in_place", powered_in_place, lambda: (np.abs(_n(6)),), (0,)),
    ("floor_and_mod_in_place", floor_and_mod_in_place, lambda: (_n(5), _n(5, seed=1)),
     (0, 1)),
    ("slice_scaled_in_place", slice_scaled_in_place, lambda: (_n(5), _u(5, seed=1)), (0, 1)),
    ("slice_scaled_in_place-strided", slice_scaled_in_place,
     lambda: (_n(10)[::2], _u(5, seed=1)), (0, 1)),
    ("rows_scaled_by_vector", rows_scaled_by_vector, lambda: (_n(3, 4), _n(4, seed=1)),
     (0, 1)),
    ("scaled_by_element", scaled_by_element, lambda: (_n(4), np.abs(_n(3, seed=1)) + 1.0),
     (0, 1)),
    ("scaled_in_loop", scaled_in_loop, lambda: (_n(4), _n(4, seed=1)), (0, 1)),
]
