"""Whole-array primitives on the LLVM backend (issue 11): every array primitive runs natively
and gives the interpreter's (and plain numpy's) answer.

CASES is a table of small array functions (defined below, at module level: adcompile reads
their source) with argument sets; each runs with backend="llvm", with backend="interp" and as
plain numpy, and the three must agree: the same kind of object, dtype and shape, values equal
(integers and booleans exactly; floats to rtol 1e-12, float32 to 1e-5). Every array argument
is also passed in other layouts holding the same values (a strided view, Fortran order, a
reversed view), so each op meets non-contiguous operands, and the arguments afterwards must
hold what numpy leaves in them. Then: the runtime errors numpy raises (broadcasting, indices,
singular matrices...), memory (returned arrays own their data, temporaries do not leak, also
on error exits and in loops), and det/inv/solve without LAPACK (our own LU).
"""

import gc
import inspect
import re
import sys

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import capi
from adcompile.backends.llvm.linalg import BLAS_MIN
from tests.compiler import corpus

# -- the functions ------------------------------------------------------------------------------


def add(x, y):
    return x + y


def affine(x, w, b):
    return x * w + b


def arith_mix(x, y):
    return (x - y) / (x * x + 1.0) - 2.0 * y ** 2


def int_arith(a, b):
    return a // b, a % b, a * b - a, -a, abs(a)


def int_true_division(a, b):
    return a / b


def int_power(a):
    return a ** 3 + 2 ** a


def float_power(x, y):
    return np.abs(x) ** y, x ** 2, x ** -1.0


def compare(x, y):
    return x < y, x >= 0.5, x == y, x != y


def logic(p, q):
    return p & q, p | q, p ^ q, ~p, p == q


def int_bits(a, b):
    return a & b, a | b, a ^ b, ~a


def bool_arith(p, q):
    return p + q, p * q


def where(x, y):
    return np.where(x > 0.0, x, y), np.where(x > 0.0, 1.0, 0.0)


def casts(x):
    return x.astype(np.int64), x.astype(np.float32), x.astype(np.bool_)


def unary_math(x):
    return np.sin(x), np.exp(x), np.tanh(x), np.floor(x), np.ceil(x), np.sqrt(np.abs(x))


def log_of(x):
    return np.log(x), np.log1p(x), np.expm1(x)


def binary_math(x, y):
    return np.maximum(x, y), np.minimum(x, y), np.arctan2(x, y), np.hypot(x, y)


def clip(x):
    return np.clip(x, -0.5, 0.5)


def f32_keeps_precision(x):
    return x * 2.0 + np.float32(1.5), np.sin(x)


def int_math(a):
    return np.sqrt(a), np.maximum(a, 2)


def reductions(x):
    return np.sum(x), np.mean(x), np.max(x), np.min(x), np.prod(x), np.argmax(x), np.argmin(x)


def axis_reductions(x):
    return (np.sum(x, axis=0), np.mean(x, axis=1), np.max(x, axis=1, keepdims=True),
            np.min(x, axis=(0, 1)), x.prod(axis=1), np.argmax(x, axis=0), np.argmin(x, axis=1),
            x.sum(axis=0, keepdims=True))


def reductions_3d(x):
    return (np.sum(x, axis=(0, 2)), np.sum(x, axis=(0, 2), keepdims=True), np.max(x, axis=2),
            np.mean(x, axis=(1, 2)), np.argmax(x, axis=1))


def int_reductions(a):
    return np.sum(a), np.sum(a, axis=0), np.prod(a, axis=1), np.max(a), np.argmin(a), np.mean(a)


def bool_reductions(p):
    return np.sum(p), np.sum(p, axis=0), np.max(p), np.argmax(p), np.mean(p)


def builtin_sum(x):
    return sum(x)


def views(x):
    return x[1:], x[::-1], x[:, 0], x[None], x.T, x[1:-1, ::2], x[-1]


def slice_bounds(x, i, j, k):
    return x[i:j:k], x[i:], x[:j], x[::k], x[-100:100], x[5:1], x[j:i:-1]


def scalar_of_slice(x, i):
    return x[i, 0] + x[-1, i]


def transposes(x):
    return np.transpose(x, (1, 0, 2)), x.T, x.transpose()


def reshapes(x):
    return x.reshape(3, 4), x.reshape(-1, 2), x.ravel(), x.reshape(12)


def empty_reshapes(x):  # numpy's no-copy algorithm is for non-empty arrays (a crash)
    return x.reshape(x.shape[1], x.shape[0]), x.reshape(-1), \
        x.T.reshape(x.shape[0], x.shape[1])


def overlapping_assigns(x):
    """numpy copies an overlapping source only for opposite 1-d strides or more axes; else its
    loop reads while it writes, backward when the source starts below (seed 1440600711258)"""
    x[2::2] = x[:-2:2]
    x[1:4] = x[0:3]
    x[:3] = x[::-1][:3]
    x[3::3] = x[1:-3:2][:len(x[3::3])]
    return x


def overlapping_rows(m):
    m[:, 2] = m[1, :]
    m[1:, :] = m[:-1, :]
    m[:, 0] = 0 + m[2, :]
    return m


def reshape_writes_through(x):
    y = x.reshape(2, -1)
    y[0, 1] = 100.0
    z = x[::2].reshape(-1)
    z[0] = -1.0
    return y, z


def write_through_view(n):
    y = np.zeros((3, n))
    v = y[1:, ::2]
    v[0, 0] = 5.0
    r = y[2]
    r[1] = 7.0
    return y


def slice_assign(x, v):
    y = np.zeros((4, 3))
    y[1:] = x
    y[0, :] += v
    y[:, 2] = -1.0
    return y


def augmented(x, v):
    y = x.copy()
    y += v
    y *= 2.0
    y -= 1.0
    return y


def int_in_place(a, b):
    y = a.copy()
    y //= 2
    y %= 3
    y += b
    y *= y
    y ^= 5
    return y


def bool_in_place(p, q):
    y = p.copy()
    y &= q
    y |= p[0]
    return y


def shift_in_place(x):
    y = x.copy()
    y[1:] = y[:-1]
    return y


def shift_back(x):
    y = x.copy()
    y[:-1] += y[1:]
    return y


def write_into_argument(x, v):
    x[1:] = v
    x[0] += 1.0
    return x


def matmuls(a, b):
    return a @ b, a @ b[:, 0], a[0] @ b, a[0] @ b[:, 0]


def batched(a, b):
    return a @ b


def int_matmul(a, b):
    return a @ b


def dot_and_outer(x, y):
    return np.dot(x, y), np.outer(x, y)


def literals(a, b):
    return np.array([a, b, a + b]), np.array([[a, b], [b, a]]), np.array([1, 2, 3])


def construction(n, m):
    return np.zeros((n, m)), np.ones(n), np.full((m, n), 2.5), np.zeros(n, dtype=np.int64)


def joins(x, y):
    return (np.concatenate([x, y]), np.concatenate([x, y], axis=1), np.stack([x, y]),
            np.stack([x, y], axis=2), np.concatenate([x, x.astype(np.float32)]))


def ranges(n, start, step):
    return (np.arange(n), np.arange(start, n, step), np.arange(0.0, 1.0, 0.1),
            np.arange(n, 0, -3), np.linspace(0.0, 1.0, n), np.linspace(start, 2, 7))


def integer_indexing(x, idx, rows, cols):
    return x[idx], x[rows, cols], x[rows]


def boolean_indexing(x):
    return x[x > 0.0], x[x[:, 0] > 0.0]


def linalg(a, b):
    return np.linalg.det(a), np.linalg.inv(a), np.linalg.solve(a, b), np.linalg.solve(a, a)


def trace_and_diagonal(a):
    return np.trace(a), np.trace(a @ a), np.diagonal(a)


def carried_array(x, n):
    y = x
    for i in range(n):
        y = y * 0.5 + x
    return y


def array_from_branches(x, flag):
    if flag:
        y = x * 2.0
    else:
        y = x[::-1]
    return y + 1.0


def while_halving(x):
    y = x.copy()
    while np.max(np.abs(y)) > 1.0:
        y = y / 2.0
    return y


def temporaries_in_loop(x, n):
    s = 0.0
    for i in range(n):
        t = np.exp(x * i) - x
        s += np.sum(t[1:] * t[:-1])
    return s


def tuple_of_one(x):
    y = x * 2.0
    return y, y, y[0]


def returns_views_of_temporary(x):
    y = x + 1.0
    return y.T, y[1:]


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def mlp(x, w1, b1, w2):
    h = np.tanh(x @ w1 + b1)
    return np.mean((h @ w2) ** 2)


# -- argument sets --------------------------------------------------------------------------------

def _n(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _i(*shape, seed=0, low=-5, high=6):
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.int64)


def _b(*shape, seed=0):
    return np.random.default_rng(seed).random(shape) > 0.5


def _spd(n, seed=0, dtype=np.float64):
    a = _n(n, n, seed=seed)
    return (a @ a.T + n * np.eye(n)).astype(dtype)


A34 = _n(3, 4)
CASES = [
    (add, [(A34, _n(4, seed=1)), (A34, _n(3, 1, seed=1)), (_n(2, 1, 3), _n(4, 1)),
           (np.zeros((0, 3)), _n(3)), (A34, 2.0), (1, _n(3))]),
    (affine, [(_n(5, 3), _n(3, seed=1), 0.5), (_n(5, 3), 2.0, _n(5, 1, seed=2))]),
    (arith_mix, [(_n(6), _n(6, seed=1)), (_n(2, 3, dtype=np.float32), 0.25)]),
    (int_arith, [(_i(7), _i(7, seed=1)), (_i(3, 4), 3), (-7, _i(5, seed=2))]),
    (int_true_division, [(_i(6), _i(6, seed=1)), (_i(4), 2)]),
    (int_power, [(_i(6, low=0, high=5),)]),
    (float_power, [(_n(6), _n(6, seed=1)), (_n(3, 2, dtype=np.float32), 1.5)]),
    (compare, [(_n(5), _n(5, seed=1)), (_i(4), 1), (_n(3, 2), _n(2, seed=3))]),
    (logic, [(_b(6), _b(6, seed=1)), (_b(2, 3), True)]),
    (int_bits, [(_i(6), _i(6, seed=1)), (_i(2, 3), 6)]),
    (bool_arith, [(_b(6), _b(6, seed=1))]),
    (where, [(_n(7), _n(7, seed=1)), (_n(3, 2), 0.0)]),
    (casts, [(_n(7) * 3,), (np.array([0.0, -0.0, 1.5, -2.5, np.nan]),)]),
    (unary_math, [(_n(8),), (_n(2, 3, dtype=np.float32),)]),
    (log_of, [(np.abs(_n(6)) + 0.1,)]),
    (binary_math, [(_n(6), _n(6, seed=1)), (np.array([1.0, np.nan, -0.0]), 0.0)]),
    (clip, [(_n(9),)]),
    (f32_keeps_precision, [(_n(5, dtype=np.float32),)]),
    (int_math, [(_i(6, low=0),)]),
    (reductions, [(_n(7),), (_n(3, 4),), (_n(2, 3, dtype=np.float32),),
                  (np.array([1.0, np.nan, 3.0]),)]),
    (axis_reductions, [(_n(3, 4),), (_n(1, 5),)]),
    (reductions_3d, [(_n(2, 3, 4),)]),
    (int_reductions, [(_i(3, 4),)]),
    (bool_reductions, [(_b(3, 4),)]),
    (builtin_sum, [(_n(6),)]),
    (views, [(_n(4, 5),)]),
    (slice_bounds, [(_n(9), 1, 7, 2), (_n(9), -3, 100, 3), (_n(9), 7, -8, -2),
                    (_n(0), 0, 0, 1)]),
    (scalar_of_slice, [(_n(4, 3), 1), (_n(4, 3), -2)]),
    (transposes, [(_n(2, 3, 4),)]),
    (reshapes, [(_n(12),), (_n(4, 3),), (_n(2, 6).T,)]),
    (overlapping_assigns, [(_n(12),), (_n(13),)]),
    (overlapping_rows, [(_n(4, 4),), (_n(4, 4).T,)]),
    (empty_reshapes, [(np.zeros((0, 5)),), (np.zeros((5, 0)),), (np.zeros((0, 0)),)]),
    (reshape_writes_through, [(_n(12),), (_n(4, 6),), (_n(6, 4)[:, ::2],)]),
    (write_through_view, [(5,)]),
    (slice_assign, [(_n(3, 3), _n(3, seed=1)), (_n(3), 2.0)]),
    (augmented, [(_n(3, 4), _n(4, seed=1)), (_n(2, 2), 3.0)]),
    (int_in_place, [(_i(3, 4), _i(4, seed=1)), (_i(5), 2)]),
    (bool_in_place, [(_b(3, 4), _b(3, 4, seed=1))]),
    (shift_in_place, [(_n(6),), (_n(4, 2),)]),
    (shift_back, [(_n(6),)]),
    (write_into_argument, [(_n(5), _n(4, seed=1)), (_n(4, 3), 0.5)]),
    (matmuls, [(_n(3, 4), _n(4, 5, seed=1)), (_n(3, 4, dtype=np.float32),
                                              _n(4, 2, seed=1, dtype=np.float32)),
               (np.zeros((1, 0)), np.zeros((0, 3))),
               (_n(50, 2), _n(2, 3, seed=1)[:, ::-1]), (_n(5, 40)[:, ::2], _n(20, 1, seed=1))]),
    (batched, [(_n(2, 3, 4), _n(4, 5, seed=1)), (_n(3, 4), _n(2, 4, 2, seed=1)),
               (_n(2, 1, 3, 4), _n(5, 4, 2, seed=1)), (_n(4), _n(2, 4, 3, seed=1))]),
    (int_matmul, [(_i(3, 4), _i(4, 2, seed=1)), (_b(3, 4), _b(4, 2, seed=1))]),
    (dot_and_outer, [(_n(5), _n(5, seed=1))]),
    (literals, [(1.5, 2.0), (np.float32(1.5), np.float32(2.0)), (3, 4)]),
    (construction, [(3, 2), (0, 4)]),
    (joins, [(_n(2, 3), _n(2, 3, seed=1)), (_i(2, 2), _i(2, 2, seed=1))]),
    (ranges, [(10, 2, 3), (0, -1, 2), (5, 1.5, 0.5)]),
    (integer_indexing, [(_n(5, 3), np.array([0, -1, 2, 2]), np.array([1, 4]),
                         np.array([0, -2]))]),
    (boolean_indexing, [(_n(5, 3),), (np.zeros((0, 2)),)]),
    (linalg, [(_spd(4), _n(4, seed=1)), (_spd(3, dtype=np.float32),
                                         _n(3, seed=1, dtype=np.float32)),
              (_n(3, 3, seed=5), _n(3, seed=1)), (np.zeros((0, 0)), np.zeros(0))]),
    (trace_and_diagonal, [(_n(3, 3),), (_n(3, 4)[:, :3],), (_i(3, 3),)]),
    (carried_array, [(_n(4), 5), (_n(2, 3), 0)]),
    (array_from_branches, [(_n(5), True), (_n(5), False)]),
    (while_halving, [(_n(6) * 10,)]),
    (temporaries_in_loop, [(_n(5) * 0.1, 4)]),
    (tuple_of_one, [(_n(3),)]),
    (returns_views_of_temporary, [(_n(2, 3),)]),
    (softmax, [(_n(4, 5),), (_n(3, 2, dtype=np.float32),)]),
    (mlp, [(_n(6, 3), _n(3, 4, seed=1), _n(4, seed=2), _n(4, 2, seed=3))]),
]


# -- layouts -------------------------------------------------------------------------------------

def strided(a):
    """The same values through a view with gaps (every other element of a bigger array)."""
    if a.ndim == 0:
        return a
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    view = big[..., ::2]
    view[...] = a
    return view


def fortran(a):
    return np.asfortranarray(a)


def reversed_view(a):
    if a.ndim == 0:
        return a
    return a[::-1].copy()[::-1]


LAYOUTS = {"C": lambda a: a.copy(), "strided": strided, "F": fortran, "reversed": reversed_view}


def _with_layout(args, layout):
    return tuple(LAYOUTS[layout](a) if isinstance(a, np.ndarray) else a for a in args)


PARAMS = [pytest.param(fn, k, layout, id=f"{fn.__name__}-{k}-{layout}")
          for fn, arg_sets in CASES for k in range(len(arg_sets))
          for layout in (LAYOUTS if any(isinstance(a, np.ndarray) and a.ndim
                                        for a in arg_sets[k]) else ("C",))]
ARGS = {fn: arg_sets for fn, arg_sets in CASES}


def check_same(ours, expected, what):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected), what
        for k, (o, e) in enumerate(zip(ours, expected)):
            check_same(o, e, f"{what}[{k}]")
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(ours, np.ndarray), f"{what}: {type(ours).__name__}, not an array"
        assert ours.shape == expected.shape, f"{what}: shape {ours.shape} != {expected.shape}"
    else:
        assert not isinstance(ours, np.ndarray), f"{what}: an array, numpy gives a scalar"
        assert type(ours) is type(expected) or np.asarray(ours).dtype == np.asarray(
            expected).dtype, f"{what}: {type(ours).__name__} != {type(expected).__name__}"
    assert np.asarray(ours).dtype == np.asarray(expected).dtype, \
        f"{what}: dtype {np.asarray(ours).dtype} != {np.asarray(expected).dtype}"
    if np.asarray(expected).dtype.kind in "biu":
        np.testing.assert_array_equal(ours, expected, err_msg=what)
    else:
        rtol = 1e-5 if np.asarray(expected).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol, equal_nan=True,
                                   err_msg=what)


_COMPILED = {}


def compiled(fn, backend):
    key = (fn, backend)
    if key not in _COMPILED:
        _COMPILED[key] = ac.adcompile(fn, backend=backend)
    return _COMPILED[key]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,k,layout", PARAMS)
def test_llvm_matches_interp_and_numpy(fn, k, layout):
    args = ARGS[fn][k]
    expected_args = _with_layout(args, layout)
    expected = fn(*expected_args)
    for backend in ("interp", "llvm"):
        backend_args = _with_layout(args, layout)
        got = compiled(fn, backend)(*backend_args)
        check_same(got, expected, f"{fn.__name__} on {backend}")
        for a, e in zip(backend_args, expected_args):
            if isinstance(e, np.ndarray):
                check_same(a, e, f"{fn.__name__} on {backend}: an argument afterwards")


# -- runtime errors: numpy's exception types, naming the user's line ------------------------------

def take_rows(x, idx):
    return x[idx]


def row_of(x, i):
    return x[i, :]


def masked(x, m):
    return x[m]


def reshaped(x, n):
    return x.reshape(n, -1)


def stepped(x, k):
    return x[::k]


def inverse(a):
    return np.linalg.inv(a)


def solved(a, b):
    return np.linalg.solve(a, b)


def determinant(a):
    return np.linalg.det(a)


def joined(x, y):
    return np.concatenate([x, y], axis=1)


def stacked(x, y):
    return np.stack([x, y])


def assign_rows(x, v):
    y = x.copy()
    y[1:] = v
    return y


def sized(n):
    return np.zeros(n)


def sized_minus_one(x):
    t = np.zeros(-1)  # a constant length too: numpy's ValueError when it runs, no refusal
    return t[0] + x


def counted(n, step):
    return np.arange(0, n, step)


def spaced(n):
    return np.linspace(0.0, 1.0, n)


def largest(x):
    return np.max(x, axis=1)


def where_largest(x):
    return np.argmax(x)


def int_power_of(a, b):
    return a ** b


def errors_inside_loop(x, n):
    s = 0.0
    for i in range(n):
        t = x * float(i)
        s += t[i]
    return s


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
ERRORS = [
    (add, (_n(3), _n(4)), ValueError),
    (add, (_n(2, 3), _n(2, 1, 4)), ValueError),
    (matmuls, (_n(3, 4), _n(3, 4)), ValueError),
    (batched, (_n(2, 3, 4), _n(3, 4, 5)), ValueError),
    (take_rows, (_n(3, 2), np.array([0, 3])), IndexError),
    (take_rows, (_n(3, 2), np.array([-4])), IndexError),
    (row_of, (_n(3, 2), 3), IndexError),
    (row_of, (_n(3, 2), -4), IndexError),
    (masked, (_n(3, 2), np.array([[True, False]] * 2)), IndexError),
    (reshaped, (_n(6), 4), ValueError),
    (stepped, (_n(6), 0), ValueError),
    (inverse, (SINGULAR,), np.linalg.LinAlgError),
    (inverse, (np.zeros((3, 3)),), np.linalg.LinAlgError),
    (inverse, (_n(2, 3),), np.linalg.LinAlgError),
    (solved, (SINGULAR, _n(2)), np.linalg.LinAlgError),
    (solved, (_spd(3), _n(4)), ValueError),
    (joined, (_n(2, 3), _n(3, 3)), ValueError),
    (stacked, (_n(3), _n(4)), ValueError),
    (assign_rows, (_n(4, 3), _n(2, 3)), ValueError),
    (sized, (-1,), ValueError),
    (sized_minus_one, (1.0,), ValueError),
    (counted, (5, 0), ZeroDivisionError),
    (spaced, (-2,), ValueError),
    (largest, (np.zeros((3, 0)),), ValueError),
    (largest, (np.zeros((0, 0)),), ValueError),  # nothing to reduce, even to nothing
    (where_largest, (np.zeros(0),), ValueError),
    (int_power_of, (_i(3), -1), ValueError),
    (errors_inside_loop, (_n(3), 5), IndexError),
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,args,error", ERRORS,
                         ids=[f"{fn.__name__}-{error.__name__}" for fn, args, error in ERRORS])
def test_errors_are_numpys(fn, args, error):
    with pytest.raises(error):
        fn(*args)
    with pytest.raises(error) as raised:
        compiled(fn, "llvm")(*args)
    assert "test_llvm_arrays.py:" in str(raised.value)


def two_sums(a, b, c):
    first = a + b
    second = a + c
    return first, second


def test_an_op_shared_by_two_lines_names_the_failing_line():
    """The two additions compile to one outlined function; its error names the line of the
    call that failed."""
    with pytest.raises(ValueError) as raised:
        compiled(two_sums, "llvm")(_n(3), _n(3), _n(4))
    assert f"test_llvm_arrays.py:{line_of(two_sums, 'second = a + c')}" in str(raised.value)
    with pytest.raises(ValueError) as raised:
        compiled(two_sums, "llvm")(_n(3), _n(4), _n(3))
    assert f"test_llvm_arrays.py:{line_of(two_sums, 'first = a + b')}" in str(raised.value)
    module = compiled(two_sums, "llvm").llvm_ir(_n(3), _n(3), _n(3))
    assert len(re.findall(r"^define .*@\"?adc\.op\.add\.", module, re.M)) == 1


def test_singular_det_is_zero():
    for a in (SINGULAR, np.zeros((3, 3))):
        assert compiled(determinant, "llvm")(a) == np.linalg.det(a) == 0.0


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


# -- memory --------------------------------------------------------------------------------------

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * __import__("os").sysconf("SC_PAGE_SIZE")


def _growth(call, n, start):
    for k in range(n):
        call()
        if k == start:
            gc.collect()
            before = rss_bytes()
    gc.collect()
    return rss_bytes() - before


def fail_after_temporaries(x, i):
    y = np.exp(x) + x
    z = y[::2] * 2.0
    return z[i, 0]


def test_temporaries_are_freed():
    """About 8 MB of temporaries per call (several per loop iteration, carried arrays, a
    branch result): thousands of calls must not grow memory, also when every call raises
    halfway through."""
    x = _n(1000, 125)
    calls = [(temporaries_in_loop, (x, 3)), (carried_array, (x, 4)),
             (array_from_branches, (x, False)), (softmax, (x,)), (tuple_of_one, (x,))]
    for fn, args in calls:
        f = compiled(fn, "llvm")
        assert _growth(lambda: f(*args), 300, 30) < 32 * 2**20, fn.__name__
    failing = compiled(fail_after_temporaries, "llvm")

    def fail():
        with pytest.raises(IndexError):
            failing(x, 10_000)

    assert _growth(fail, 300, 30) < 32 * 2**20


PEAK = """
import resource, sys
import numpy as np
import adcompile as ac
sys.path.insert(0, {root!r})
from tests.compiler import test_llvm_arrays as t
f = ac.adcompile(t.{name}, backend="llvm")
x = np.linspace(0.0, 1e-3, 131072)  # 1 MiB
f(x, 2)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
f(x, 100)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.parametrize("name", ["temporaries_in_loop", "carried_array"])
def test_loops_free_each_iterations_temporaries(name):
    """The peak memory of a loop making several 1 MiB temporaries per iteration (and carrying
    one from iteration to iteration) does not grow with the number of iterations: each
    iteration's buffers are freed when they die, not when the function returns."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", PEAK.format(root=root, name=name)],
                         capture_output=True, text=True, check=True, cwd=root)
    grown_kib = int(out.stdout.split()[-1])
    assert grown_kib < 32 * 1024, f"peak memory grew by {grown_kib} KiB over 100 iterations"


def test_returned_arrays_own_their_memory():
    x = _n(3, 4)
    y = compiled(affine, "llvm")(x, 2.0, 1.0)
    assert y.flags.owndata and y.flags.writeable and y.flags.c_contiguous
    assert sys.getrefcount(y) == 2 and not np.shares_memory(y, x)
    a, b, row = compiled(tuple_of_one, "llvm")(x)
    assert a is b and np.shares_memory(row, a) and row.base is a
    t, tail = compiled(returns_views_of_temporary, "llvm")(x)
    assert np.shares_memory(t, tail) and not np.shares_memory(t, x)
    np.testing.assert_array_equal(t, (x + 1.0).T)
    base = t.base
    del t
    tail[0, 0] = 99.0  # the memory outlives the other view
    assert base.flags.owndata and base[4] == 99.0
    v = compiled(views, "llvm")(x)
    assert all(np.shares_memory(part, x) for part in v)
    assert v[0].base is x and v[4].base is x


def small_results(x, n):
    """Small temporaries in a loop (pooled buffers, carved from slabs), then results that are
    a whole pooled buffer, a view of one, and two views of another."""
    acc = x * 0.0
    for i in range(n):
        acc = acc + np.tanh(x * i) * 0.5
    both = acc * 2.0
    return acc, both[1:], both[::-1], (acc + 1.0)[0]


def test_pooled_results_outlive_the_call():
    """A result whose buffer lies in a slab is copied out when it is handed to numpy: later
    calls (which reuse the slabs) do not change it, its views share its memory as they would
    in numpy, and numpy owns (and frees) that memory."""
    f = compiled(small_results, "llvm")
    x = _n(5)
    first = f(x, 4)
    kept = [np.array(r, copy=True) for r in first]
    for n in (3, 7, 2):  # overwrite the slabs the first call used
        f(x + n, n)
    for got, want in zip(first, kept):
        np.testing.assert_array_equal(got, want)
    check_same(first, small_results(x, 4), "pooled results")
    acc, tail, rev, scalar = first
    assert acc.flags.owndata and acc.base is None
    assert np.shares_memory(tail, rev) and tail.base is rev.base
    assert not np.shares_memory(acc, tail)
    tail[0] = 123.0
    assert rev[-2] == 123.0


def many_sizes(x, n):
    s = 0.0
    for i in range(1, n):
        t = np.ones(i * 37) * x[0]  # every pooled size class, then past the largest
        s += np.sum(t)
    return s


def test_pool_covers_every_size_and_stays_flat():
    """Buffers of every size class and larger, created and released in a loop: the result
    is numpy's and repeated calls (which give their slabs back to the process's cache) do not
    grow memory; nor do calls that raise halfway."""
    x = _n(3)
    f = compiled(many_sizes, "llvm")
    assert f(x, 600) == many_sizes(x, 600)
    assert _growth(lambda: f(x, 600), 200, 20) < 16 * 2**20
    small = compiled(fail_after_temporaries, "llvm")
    y = _n(8, 3)

    def fail():
        with pytest.raises(IndexError):
            small(y, 10_000)

    assert _growth(fail, 3000, 100) < 16 * 2**20


def test_pooled_buffers_under_threads():
    """Calls on several threads take slabs from the shared cache and give them back at
    once; results stay right and memory stays bounded."""
    f = compiled(small_results, "llvm")
    x = _n(6)
    expected = small_results(x, 5)
    errors = []

    def work():
        for _ in range(300):
            got = f(x, 5)
            if not all(np.array_equal(a, b) for a, b in zip(got, expected)):
                errors.append(got)

    _on_threads(work, 4)
    assert not errors


def large_temporaries(x, n):
    """Temporaries past the pool's limit (16 KiB), of several sizes, kept alive together and
    released in a loop; the result is one of them."""
    s = 0.0
    last = x
    for i in range(1, n):
        t = np.ones(20000 * i) * x[0]  # 160 KB, 320 KB, ...
        u = t * 2.0
        s += np.sum(u) + np.sum(t[::2])
        last = x * float(i)
    return s, last


def test_large_buffers_are_reused_and_bounded():
    """Large temporaries go back on the context's list when released, are taken again by the
    next one of their size (within the call and, through the process's cache, in the next
    call), and the cache keeps at most LARGE_KEPT bytes: results stay numpy's, a result that
    was a temporary's buffer is not overwritten by later calls, and memory does not grow,
    on one thread or several."""
    x = np.linspace(0.5, 1.5, 40000)
    f = compiled(large_temporaries, "llvm")
    first = f(x, 6)
    kept = np.array(first[1], copy=True)
    check_same(first, large_temporaries(x, 6), "large temporaries")
    for n in (3, 9, 2):
        check_same(f(x, n), large_temporaries(x, n), "large temporaries")
    np.testing.assert_array_equal(first[1], kept)
    assert _growth(lambda: f(x, 9), 100, 10) < 16 * 2**20
    expected = large_temporaries(x, 5)
    errors = []

    def work():
        for _ in range(30):
            got = f(x, 5)
            if got[0] != expected[0] or not np.array_equal(got[1], expected[1]):
                errors.append(got)

    _on_threads(work, 4)
    assert not errors


def four_large_results(x):
    return x * 2.0, x + 1.0, x - 3.0, x * x


FOUR_LARGE = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
from tests.compiler import test_llvm_arrays as t
f = t.compiled(t.four_large_results, "llvm")
x = np.linspace(-1.0, 1.0, 40_000)
for _ in range(5):
    got = f(x)
    t.check_same(got, t.four_large_results(x), "four large results")
    print(*(a.ctypes.data % 4096 for a in got))
    del got
"""


def test_large_blocks_fall_in_different_cache_sets():
    """malloc hands out the large blocks of one size at about one offset into a page (16
    bytes apart on its heap, at one offset when mapped); each large buffer starts a different
    number of cache lines into its block (memory.COLOURS), so the arrays of one loop fall in
    different sets of the L1 cache. Blocks freed and taken again keep working: results stay
    numpy's, call after call. In a process of its own: blocks other tests gave back to the
    cache could hold any colour."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", FOUR_LARGE.format(root=root)],
                         capture_output=True, text=True, check=True, cwd=root,
                         env={**os.environ, "ADCOMPILE_CACHE_DIR": "off"})
    for line in out.stdout.split("\n")[-6:-1]:
        offsets = [int(v) for v in line.split()]
        assert all(v % 16 == 0 for v in offsets)
        assert len({v // 64 for v in offsets}) == 4, offsets


def large_results(x, scale):
    """Two results past the pool's limit (a whole buffer and a view of another) and a
    small one."""
    y = x * scale + 1.0
    z = x * x - scale
    return y, z[1:], np.sum(y)


def _minor_faults():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_large_results_go_back_to_the_cache():
    """A large result's block is held by a capsule (its base) whose destructor puts it back on
    the process's cache, so the next call that needs that size takes it without malloc and
    without page faults. Results are still ordinary numpy arrays: equal to numpy's bit for bit
    on every backend, writable, picklable; a view keeps the block alive; a result that
    outlives many later calls keeps its values; memory stays flat over 10^4 calls."""
    import pickle

    x = np.linspace(-2.0, 2.0, 300_000)  # 2.4 MB per result
    f = compiled(large_results, "llvm")
    want = large_results(x, 0.5)
    for backend in ("llvm", "python", "interp"):
        got = compiled(large_results, backend)(x, 0.5)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, err_msg=backend)
    y, tail, _ = f(x, 0.5)
    assert not y.flags.owndata and type(y.base).__name__ == "PyCapsule"
    assert y.flags.writeable and y.flags.c_contiguous and tail.base.base is not None
    y[0] = -7.0
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(y)), y)
    kept, kept_tail = y.copy(), tail.copy()
    del y  # the view alone keeps its block alive
    for k in range(200):  # later calls take blocks from the cache, never the live ones
        f(x, float(k))
    np.testing.assert_array_equal(tail, kept_tail)
    old = f(x, 0.25)[0]
    address = old.ctypes.data
    del old
    again = f(x, 0.5)[0]
    assert again.ctypes.data == address  # the block came back
    np.testing.assert_array_equal(again, want[0])
    before = _minor_faults()
    for _ in range(20):
        f(x, 0.5)
    assert (_minor_faults() - before) / 20 < 100  # 1700 pages per call were faulted in before
    assert _growth(lambda: f(x, 0.5), 10_000, 100) < 32 * 2**20


def zeros_result(n):
    return np.zeros(n)


NEWEST_KEPT = """
import resource, sys
sys.path.insert(0, {root!r})
import adcompile as ac
from adcompile.backends.llvm.memory import LARGE_KEPT
from tests.compiler import test_llvm_arrays as t
f = ac.adcompile(t.zeros_result, backend="llvm")
older = [int(LARGE_KEPT * share) // 8 for share in (0.35, 0.5)]
newest = int(LARGE_KEPT * 0.2) // 8
for n in (*older, newest, newest):  # three size classes, together past LARGE_KEPT
    f(n)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    f(newest)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 3, newest * 8 // 4096)
"""


def test_the_cache_keeps_the_blocks_released_last():
    """A process whose results grow (GradBench ba1 to ba14 in one run) fills the cache of large
    blocks with its first sizes': a block released past LARGE_KEPT goes at the head of the
    cache and the oldest go, so the size the process now calls again and again takes its
    block back without page faults (it was freed on every call, and faulted in again). In a
    process of its own: the cache ends up holding about LARGE_KEPT bytes."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", NEWEST_KEPT.format(root=root)],
                         capture_output=True, text=True, check=True, cwd=root)
    faults, pages = (int(v) for v in out.stdout.split()[-2:])
    assert faults < pages // 20, f"{faults} page faults per call of a {pages}-page result"


def test_large_results_dying_on_other_threads():
    """Results die (and their blocks go back to the cache) on several threads while other
    calls run without the GIL and take blocks from it: values stay right, memory bounded."""
    x = np.linspace(-1.0, 1.0, 50_000)
    f = compiled(large_results, "llvm")
    want = large_results(x, 2.0)
    errors = []

    def work():
        held = []
        for k in range(300):
            got = f(x, 2.0)
            held.append(got)
            if len(held) > 3:
                old = held.pop(0)
                if not all(np.array_equal(a, b) for a, b in zip(old, want)):
                    errors.append(k)

    _on_threads(work, 4)
    assert not errors
    assert _growth(lambda: _on_threads(work, 2), 20, 2) < 64 * 2**20


def blas_product(a, b, scale):
    return a @ b, a[0, 0] * scale


@pytest.mark.parametrize("fastmath", [False, True])
def test_blas_products_and_subnormals(fastmath):
    """A product that calls BLAS keeps numpy's subnormal results in strict IEEE; with
    fastmath=True the whole kernel, BLAS included, flushes them to zero (fpenv.py), and the
    caller's floating-point state is back afterwards in Python."""
    tiny = 1e-310
    a, b = np.full((30, 30), tiny), np.ones((30, 30))
    assert 30 * 30 * 30 >= BLAS_MIN
    f = ac.adcompile(blas_product, backend="llvm", fastmath=fastmath)
    product, after = f(a, b, 0.5)
    if fastmath:
        np.testing.assert_array_equal(product, np.zeros((30, 30)))
        assert after == 0.0
    else:
        np.testing.assert_array_equal(product, a @ b)
        assert after == tiny * 0.5 != 0.0
    assert np.float64(tiny) * 0.5 != 0.0
    normal = _n(30, 30)
    check_same(f(normal, b, 0.5), blas_product(normal, b, 0.5), "blas product")


def half_into_front(x, n):
    x[:n] = x[::2]
    return x


def test_an_assignment_that_reads_what_it_writes_runs_in_order():
    """numpy does not copy x[::2] before writing x[:n] (same direction, different strides):
    its loop reads elements it wrote before, so the loop is not split over threads."""
    x = np.arange(2_000_001, dtype=np.float64)
    expected = half_into_front(x.copy(), 1_000_001)
    for _ in range(3):
        np.testing.assert_array_equal(ac.adcompile(half_into_front)(x.copy(), 1_000_001),
                                      expected)


def test_views_of_arguments_write_through():
    x = _n(5)
    before = x.copy()
    out = compiled(write_into_argument, "llvm")(x, _n(4, seed=3))
    assert out is x and x[0] == before[0] + 1.0
    np.testing.assert_array_equal(x[1:], _n(4, seed=3))


# -- det, inv and solve without LAPACK (our own LU) -----------------------------------------------

@pytest.fixture
def without_lapack(monkeypatch):
    monkeypatch.setattr(capi, "_lapack", {})


@pytest.mark.parametrize("a,b", [(_spd(4), _n(4, seed=1)), (_n(5, 5, seed=7), _n(5, 2, seed=2)),
                                 (_spd(3, dtype=np.float32), _n(3, seed=1, dtype=np.float32)),
                                 (np.array([[0.0, 1.0], [1.0, 0.0]]), _n(2, seed=4)),
                                 (np.zeros((0, 0)), np.zeros(0))])
def test_own_lu_matches_numpy(without_lapack, a, b):
    f = ac.adcompile(linalg, backend="llvm")
    check_same(f(a, b), linalg(a, b), "linalg without LAPACK")
    assert not f.specialize(a, b).callable.last.lapack
    with pytest.raises(np.linalg.LinAlgError):
        ac.adcompile(inverse, backend="llvm")(SINGULAR)
    assert ac.adcompile(determinant, backend="llvm")(SINGULAR) == 0.0


# -- scalars: the new bitwise primitives -----------------------------------------------------------

def scalar_bits(p, q, a, b):
    return p & q, p | q, p ^ q, a & b, a | b, a ^ b, ~a, p & a


@pytest.mark.parametrize("args", [(True, False, 6, -3), (np.True_, np.True_, np.int64(5), 12),
                                  (False, np.False_, -1, np.int64(0))])
def test_scalar_bitwise(args):
    check_same(compiled(scalar_bits, "llvm")(*args), scalar_bits(*args), "bitwise")


def _on_threads(work, count):
    import threading

    threads = [threading.Thread(target=work) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_threads_allocate_independently():
    """Kernels run without the GIL; each call keeps its own list of buffers."""
    x = _n(50, 40)
    f = compiled(softmax, "llvm")
    expected = softmax(x)
    errors = []

    def work():
        for _ in range(200):
            if not np.allclose(f(x), expected, rtol=1e-12):
                errors.append("wrong result")

    _on_threads(work, 4)
    assert not errors


@pytest.mark.parametrize("fn", [softmax, reductions, mlp, linalg, matmuls, axis_reductions])
def test_fastmath_and_unchecked_variants(fn):
    """fastmath=True may reorder sums (close, not equal); boundscheck=False changes nothing
    for indices in range."""
    args = ARGS[fn][0]
    expected = fn(*args)
    check_same(ac.adcompile(fn, backend="llvm", boundscheck=False)(*args), expected, "unchecked")
    fast = ac.adcompile(fn, backend="llvm", fastmath=True)(*args)
    for got, want in zip(fast if isinstance(fast, tuple) else (fast,),
                         expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def fill_tail(x, v):
    x[1:] = v
    x.T[0] += 1.0


def test_whole_array_writes_count_as_writes():
    """A function writing into an argument only through views (`x[1:] = v`) refuses a
    read-only array, as numpy does, and writes back into one it ran on a copy of."""
    f = compiled(fill_tail, "llvm")
    ro = np.zeros(4)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        f(ro, 1.0)
    for x in (np.zeros(4, dtype=">f8"), np.zeros(4)):
        f(x, 2.0)
        np.testing.assert_array_equal(x, [1.0, 2.0, 2.0, 2.0])


# -- the entry point's method definition outlives the builtin -----------------------------------

COLLECT = """
import gc, os, sys
sys.path.insert(0, {tests!r})
os.environ["ADCOMPILE_CACHE_DIR"] = "off"
import numpy as np
import adcompile as ac
from test_llvm_arrays import chain_loop

for _ in range(3):
    f = ac.adcompile(chain_loop)
    g = ac.grad(f)
    y0 = np.linspace(0.1, 0.4, 4)
    value, grad = f(y0), g(y0)
    del f, g
    gc.collect()  # each Variant <-> entry point cycle is collected here
print("ok")
"""


def chain_loop(y0):
    y = y0
    for _ in range(2):
        dy = np.zeros_like(y)
        dy[1:-1] = y[:-2] - 2.0 * y[1:-1] + y[2:]
        y = y + dy
    return np.sum(y**2)


def test_collecting_a_variant_does_not_free_its_method_definition():
    """Regression: an entry point's PyMethodDef was a ctypes Structure held by its Variant,
    and the builtin's `self` is the Variant (a reference cycle). Collecting the cycle runs
    tp_clear on every object in it: the Variant dropped the structure, ctypes freed its buffer,
    and the builtin's dealloc then read `ml_flags` from freed memory (a segfault at
    interpreter exit after the gradient of rk4_energy). In a child process whose freed memory
    is overwritten (glibc's MALLOC_PERTURB_), so reading it crashes every time."""
    import os
    import subprocess

    tests = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(tests))
    env = dict(os.environ, PYTHONMALLOC="malloc", MALLOC_PERTURB_="255")
    child = subprocess.run([sys.executable, "-c", COLLECT.format(tests=tests)], env=env,
                           capture_output=True, text=True, cwd=root, timeout=600)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.split()[-1] == "ok"


# -- sums in numpy's order: bit for bit ----------------------------------------------------------
# np.sum / np.mean of floats add in numpy's order on LLVM (backends/llvm/pairwise.py): pairwise
# over runs, numpy's calls for other layouts, float32 in float32. The values span 16 decades, so
# another order of additions gives other bits (test_sums_are_order_sensitive).


def total(x):
    return np.sum(x)


def average(x):
    return np.mean(x)


def method_sums(x):
    return x.sum(), x.mean()


def sum_last_axis(x):
    return np.sum(x, axis=-1)


def sum_first_axis(x):
    return np.sum(x, axis=0)


def mean_rows_kept(x):
    return x.mean(axis=1, keepdims=True)


def sum_outer_axes(x):
    return np.sum(x, axis=(0, 2)), x.mean(axis=(1, 2))


def fused_total(x):
    return np.sum(x * 2.0 - 1.0)


def fused_mean(x):
    return np.mean(np.abs(x) * x + x)


def fused_last_axis(x):
    return np.sum(x * x, axis=-1)


def fused_first_axis(x):
    return np.mean(x * x + 1.0, axis=0)


def fused_pair(x, y):
    return np.sum(x * y + x), np.sum(x - y * 0.5, axis=1)


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def trace_of(x):
    return np.trace(x)


def int_means(a):
    return np.mean(a), np.mean(a, axis=0)


def _wide(*shape, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)).astype(dtype)


SUM_SIZES = (0, 1, 7, 8, 9, 127, 128, 129, 1000, 10000, 100000)
VECTOR_LAYOUTS = {"C": lambda a: a, "reversed": lambda a: a[::-1],
                  "strided": lambda a: np.repeat(a, 3)[::3]}
MATRIX_LAYOUTS = {
    "C": lambda a: a, "F": np.asfortranarray, "transposed": lambda a: a.T.copy().T,
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "sliced": lambda a: np.concatenate([a, a], axis=1)[:, :a.shape[1]],
    "reversed": lambda a: a[::-1].copy()[::-1], "rows reversed": lambda a: a[::-1]}
VECTOR_SUMS = (total, average, method_sums, fused_total, fused_mean, rosenbrock)
MATRIX_SUMS = (total, average, sum_last_axis, sum_first_axis, mean_rows_kept, fused_total,
               fused_last_axis, fused_first_axis, trace_of)
# (rows, columns): one call, a block per row, numpy's buffered calls of whole rows (8192
# elements: 100 x 999 adds 8 rows at a time), rows longer than half the buffer
MATRIX_SHAPES = ((3, 5), (40, 25), (8, 16), (100, 1000), (9, 5000), (301, 300))
SUM_PARAMS = (
    [pytest.param(fn, (_wide(n, dtype=dtype),), layout, VECTOR_LAYOUTS,
                  id=f"{fn.__name__}-{np.dtype(dtype).name}-{n}-{layout}")
     for fn in VECTOR_SUMS for dtype in (np.float64, np.float32) for n in SUM_SIZES
     for layout in VECTOR_LAYOUTS] +
    [pytest.param(fn, (_wide(*shape, dtype=dtype),), layout, MATRIX_LAYOUTS,
                  id=f"{fn.__name__}-{np.dtype(dtype).name}-{shape}-{layout}")
     for fn in MATRIX_SUMS for dtype in (np.float64, np.float32) for shape in MATRIX_SHAPES
     for layout in MATRIX_LAYOUTS] +
    [pytest.param(fn, (_wide(*shape, dtype=dtype),), layout, {"C": lambda a: a,
                  "F": np.asfortranarray, "stepped": lambda a: a[:, ::2], "swapped":
                  lambda a: np.swapaxes(a, 0, 2)},
                  id=f"{fn.__name__}-{np.dtype(dtype).name}-{shape}-{layout}")
     for fn in (total, average, sum_last_axis, sum_first_axis, sum_outer_axes, fused_total,
                fused_last_axis) for dtype in (np.float64, np.float32)
     for shape in ((6, 7, 40), (30, 40, 50)) for layout in ("C", "F", "stepped", "swapped")] +
    [pytest.param(fused_pair, (_wide(50, 40), _wide(50, 40, seed=1)), layout, MATRIX_LAYOUTS,
                  id=f"fused_pair-{layout}") for layout in MATRIX_LAYOUTS] +
    [pytest.param(int_means, (np.random.default_rng(0).integers(-2**50, 2**50, shape),),
                  layout, MATRIX_LAYOUTS if len(shape) == 2 else VECTOR_LAYOUTS,
                  id=f"int_means-{shape}-{layout}")
     for shape in ((100000,), (300, 301)) for layout in ("C", "reversed", "strided")] +
    [pytest.param(average, (np.random.default_rng(0).random(20000) > 0.3,), "C",
                  VECTOR_LAYOUTS, id="bool_mean")])


def check_bits(ours, expected, what):
    """The same type, dtype, shape and bits (the sign of zero too; NaNs equal)."""
    if isinstance(expected, tuple):
        for k, (o, e) in enumerate(zip(ours, expected, strict=True)):
            check_bits(o, e, f"{what}[{k}]")
        return
    assert type(ours) is type(expected), f"{what}: {type(ours)} != {type(expected)}"
    o, e = np.asarray(ours), np.asarray(expected)
    assert o.dtype == e.dtype and o.shape == e.shape, f"{what}: {o.dtype}{o.shape}"
    assert np.array_equal(o, e, equal_nan=True), f"{what}: {ours!r} != {expected!r}"
    assert np.array_equal(np.signbit(o), np.signbit(e)), f"{what}: the sign of a zero"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn,args,layout,layouts", SUM_PARAMS)
def test_sums_add_in_numpys_order(fn, args, layout, layouts):
    args = tuple(layouts[layout](a) for a in args)
    check_bits(compiled(fn, "llvm")(*args), fn(*args), fn.__name__)


def test_sums_are_order_sensitive():
    """The test data has teeth: adding in C order, or float32 in float64, gives other bits."""
    x = _wide(100000)
    assert np.sum(x) != sum(x.tolist())
    assert np.sum(_wide(100, 999)) != np.sum(_wide(100, 999).ravel()[::-1])
    y = _wide(10000, dtype=np.float32)
    assert np.sum(y) != np.float32(np.sum(y.astype(np.float64)))


def test_gradient_programs_sum_as_numpy():
    """value_and_grad's value is numpy's sum bit for bit (the loss is not folded into the
    loop of its gradient's stores any more)."""
    x = _wide(1000) * 1e-3
    value, grad = ac.value_and_grad(ac.adcompile(rosenbrock))(x)
    assert value == rosenbrock(x)
    assert np.allclose(grad, ac.grad(ac.adcompile(rosenbrock, backend="python"))(x))


def test_ode_gradient_is_the_python_backends_bit_for_bit():
    """GradBench ode's RK4 loop (array_corpus.chain_ode): in its LLVM gradient the stages'
    slices stay lazy inside the field's concatenation, the stages' shadows are made by the
    reversed loop and the state's shadow is carried backwards by it; value and gradient are
    the Python backend's (numpy's operations one at a time) bit for bit, on contiguous and
    strided arguments."""
    from tests.compiler.array_corpus import chain_ode

    for x in (np.linspace(0.2, 1.3, 23), np.linspace(-1.0, 1.0, 40)[::-3]):
        for s in (1, 3):
            want = ac.value_and_grad(compiled(chain_ode, "python"))(x, s)
            got = ac.value_and_grad(compiled(chain_ode, "llvm"))(x, s)
            assert got[0] == want[0] == compiled(chain_ode, "llvm")(x, s) == chain_ode(x, s)
            np.testing.assert_array_equal(got[1], want[1])


def scaled_total(a, x):
    return np.sum(a * x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_zero_dim_array_gradient_is_zero_dim(dtype):
    """The gradient of a 0-d array argument broadcast against a vector is a new 0-d array:
    allocated with no strides (it had one, and the result tuple did not fit its type)."""
    a, x = np.array(2.0, dtype), np.arange(3.0, dtype=dtype)
    results = [ac.value_and_grad(ac.adcompile(scaled_total, backend=b), argnums=(0, 1))(a, x)
               for b in ("llvm", "python", "interp")]
    for value, (a_bar, x_bar) in results:
        assert a_bar.shape == () and a_bar.dtype == dtype and x_bar.shape == (3,)
        assert (value, a_bar.item(), x_bar.tolist()) == (6.0, 3.0, [2.0, 2.0, 2.0])


def narrow_product(a, c):
    return a @ c


@pytest.mark.parametrize("m,k,n", [(1, 5, 1), (2, 1000, 2), (3, 7, 3), (5, 0, 2), (4, 9, 1),
                                   (7, 3, 2), (6, 2, 4)])
def test_a_narrow_product_adds_in_order_of_k(m, k, n):
    """Products of fewer than NARROW result columns compute two rows' elements at a time,
    all in registers side by side (arrays.narrow_product): each element is still its
    products added in order of k from +0.0, on any layout."""
    rng = np.random.default_rng(m * 100 + k + n)
    a, c = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    want = corpus.matmul(a, c)  # (the corpus's loops: each element summed in order of k)
    f = ac.adcompile(narrow_product)
    for x, y in ((a, c), (np.asfortranarray(a), c[::-1][::-1]), (a[::-1][::-1], c.T.copy().T)):
        np.testing.assert_array_equal(f(x, y), want)
    np.testing.assert_array_equal(f(np.stack([a, a * 2.0]), c)[1], f(a * 2.0, c))


def broadcast_into_rows(x, b):
    return np.sum(np.sin(x * b + b))


@pytest.mark.parametrize("xs,bs", [((1000, 1), (1,)), ((1000, 2), (2,)), ((999, 3), (3,)),
                                   ((1000, 4), (4,)), ((1000, 5), (5,)), ((300, 2, 2), (2, 2)),
                                   ((7, 3, 2), (3, 2)), ((64, 1, 2), (1, 2)), ((0, 2), (2,))])
def test_a_few_sums_over_rows_in_registers(xs, bs, monkeypatch):
    """b's adjoint sums x's rows (sum_to over the leading axes): with at most FEW_SUMS
    results, each sum is in a register, all in one pass (arrays.sums_in_registers); each adds
    in C order from +0.0 as the sums through memory do: the same bits as without."""
    from adcompile.backends.llvm import arrays
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    rng = np.random.default_rng(len(xs) * 10 + xs[-1])
    x, b = rng.normal(size=xs), rng.normal(size=bs)
    for layout in (x, np.asfortranarray(x)):
        got = ac.grad(ac.adcompile(broadcast_into_rows), argnums=1)(layout, b)
        monkeypatch.setattr(arrays, "FEW_SUMS", 0)
        want = ac.grad(ac.adcompile(broadcast_into_rows), argnums=1)(layout, b)
        monkeypatch.setattr(arrays, "FEW_SUMS", 4)
        assert got.tobytes() == want.tobytes()
