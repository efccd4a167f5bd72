"""Array programs that must not run (issue 11). Three kinds:

- mistakes visible at compile time (shapes built from constants, an axis or index beyond the
  signature's number of dimensions, numpy functions outside the subset, writes into an argument
  being differentiated): a CompileError located at the user's line;
- mistakes that depend on the arguments' shapes or values: the exception numpy raises
  (ValueError, IndexError, LinAlgError), naming the user's line;
tests/compiler/test_array_errors.py holds the table of expected errors.
"""

import numpy as np


# -- shapes that cannot agree, known from constants ---------------------------------------------

def static_broadcast(x):
    a = np.ones((2, 3))
    b = np.ones((4, 5))
    return np.sum(a + b) + x


def static_matmul(x):
    return np.sum(np.zeros((2, 3)) @ np.zeros((4, 5))) * x


def static_dot(x):
    u = np.ones(3)
    v = np.ones(4)
    return np.dot(u, v) + x


def static_concatenate(x):
    parts = np.concatenate([np.zeros((2, 3)), np.zeros((2, 4))])
    return np.sum(parts) + x


def static_stack(x):
    rows = np.stack([np.zeros(3), np.ones(4)])
    return np.sum(rows) * x


def static_reshape(x):
    grid = np.zeros(6).reshape(4, 2)
    return np.sum(grid) + x


def static_where(x):
    picked = np.where(np.ones(3) > 0.5, np.ones(3), np.zeros(2))
    return np.sum(picked) * x


def static_slice_store(x):
    a = np.zeros(5)
    a[1:] = np.ones(3)
    return np.sum(a) * x


def static_solve(x):
    A = np.full((3, 3), 2.0)
    b = np.ones(4)
    return np.sum(np.linalg.solve(A, b)) + x


# -- axes and indices beyond the signature's dimensions -----------------------------------------

def sum_axis_out_of_range(x):
    return np.sum(x, axis=2)


def mean_axis_tuple_out_of_range(X):
    return X.mean(axis=(0, 2))


def argmax_negative_axis_out_of_range(X):
    return np.argmax(X, axis=-3)


def too_many_indices_2d(X):
    return X[0, 1, 2]


def transpose_wrong_axes(T):
    return np.sum(np.transpose(T, (1, 0)))


def reshape_two_unknowns(x):
    return np.sum(x.reshape((-1, -1)))


# -- numpy functions outside the subset ---------------------------------------------------------

def uses_fft(x):
    spectrum = np.fft.fft(x)
    return np.sum(spectrum)


def uses_einsum(x):
    return np.einsum("i,i->", x, x)


def uses_unique(x):
    return np.sum(np.unique(x))


def uses_sort(x):
    s = np.sort(x)
    return s[0]


def uses_nansum(x):
    return np.nansum(x * x)


def uses_pinv(A):
    return np.sum(np.linalg.pinv(A))


def uses_vstack(x):
    return np.sum(np.vstack([x, x]))


def uses_eigh(A):
    w, v = np.linalg.eigh(A)
    return w[0]


def uses_cumsum(x):
    return np.sum(np.cumsum(x))


# -- writes into an argument that is being differentiated ---------------------------------------

def zero_tail_in_place(x):
    x[1:] = 0.0
    return np.sum(x * x)


def write_through_view(x):
    v = x[1:]
    v[0] = -1.0
    return np.sum(x)


def scale_in_place(x):
    x *= 2.0
    return np.sum(x)


def shift_rows_in_place(X):
    for i in range(X.shape[0]):
        X[i] += 1.0
    return np.sum(X**2)


# -- mistakes that depend on the arguments ------------------------------------------------------

def add_vectors(x, y):
    return np.sum(x + y)


def matvec(A, x):
    return np.sum(A @ x)


def row_of(A, i):
    return np.sum(A[i, :])


def gather(x, idx):
    return np.sum(x[idx])


def invert(A):
    return np.sum(np.linalg.inv(A))


def solve_system(A, b):
    return np.sum(np.linalg.solve(A, b))


def determinant(A):
    return np.linalg.det(A)


def reshape_rows(x):
    return np.sum(x.reshape(4, 2), axis=1)


def stack_rows(X, Y):
    return np.sum(np.concatenate([X, Y]))


def shifted_copy(x, n):
    y = np.zeros(n)
    y[1:] = x
    return y


def masked_total(x, mask):
    return np.sum(x[mask])


def largest(x):
    return np.max(x)


# -- reshapes of arrays written while the reshape is in use (reverse mode refuses them) ------

def reshape_read_after_write(x, h0):
    h = h0.copy()
    b = h.reshape(-1)
    h[0] = np.tanh(h[0] * x)
    return np.sum(b * b)


def reshape_read_in_loop(x, h0):
    h = h0.copy()
    b = h.reshape(-1)
    s = 0.0
    for t in range(2):
        s += np.sum(b * b)
        h[0] = np.tanh(h[0] * x)
    return s


def write_through_reshape(x, h0):
    h = h0.copy()
    b = h.reshape(-1)
    b[0:3] = np.tanh(x)
    return np.sum(h * h)
