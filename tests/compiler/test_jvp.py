"""Forward mode on the corpus: every JVP equals central finite differences of the function in
a random direction, on the interpreter and the Python backend alike."""

import copy

import numpy as np
import pytest

import adcompile as ac
from tests.compiler.corpus import CASES


def _is_float(v):
    if isinstance(v, np.ndarray):
        return v.dtype == np.float64
    return isinstance(v, float) and not isinstance(v, np.float32)


def _direction(args, rng):
    return tuple((rng.standard_normal(a.shape) if isinstance(a, np.ndarray) else
                  float(rng.standard_normal())) if _is_float(a) else None for a in args)


def _shift(args, tangents, eps):
    return tuple(a if t is None else a + eps * t for a, t in zip(args, tangents))


def _flat(value):
    if isinstance(value, tuple):
        return np.concatenate([_flat(v) for v in value]) if value else np.zeros(0)
    return np.asarray(value, dtype=np.float64).ravel()


WRITES_DIFFERENTIATED_ARRAY = {"scale_inplace", "bubble_sort", "calls_mutating"}
PARAMS = [(fn, i, args) for fn, arg_sets in CASES for i, args in enumerate(arg_sets)
          if any(_is_float(a) for a in args) and fn.__name__ not in WRITES_DIFFERENTIATED_ARRAY]


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("fn,i,args", PARAMS, ids=[f"{f.__name__}-{i}" for f, i, _ in PARAMS])
def test_jvp_matches_finite_differences(fn, i, args, backend):
    rng = np.random.default_rng(i)
    tangents = _direction(args, rng)
    compiled = ac.adcompile(fn, backend=backend, verify=True)
    value, value_dot = ac.jvp(compiled, copy.deepcopy(args), tangents)
    eps = 1e-6
    plus = fn(*copy.deepcopy(_shift(args, tangents, eps)))
    minus = fn(*copy.deepcopy(_shift(args, tangents, -eps)))
    numeric = (_flat(plus) - _flat(minus)) / (2 * eps)
    np.testing.assert_allclose(_flat(value), _flat(fn(*copy.deepcopy(args))), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(_flat(value_dot), numeric, rtol=1e-5, atol=1e-5)


def test_jvp_source_reads_like_hand_written_code():
    from tests.compiler.corpus import dot

    x = np.arange(3.0)
    source = ac.api.jvp_source(dot, (x, x), (np.ones(3), None))
    assert "x_dot" in source and "s_dot" in source and "def dot_jvp(x, y, x_dot)" in source


@pytest.mark.parametrize("name", sorted(WRITES_DIFFERENTIATED_ARRAY))
def test_writing_into_a_differentiated_array_is_refused(name):
    fn, arg_sets = next((f, a) for f, a in CASES if f.__name__ == name)
    args = copy.deepcopy(arg_sets[0])
    tangents = _direction(args, np.random.default_rng(0))
    with pytest.raises(ac.CompileError, match="writes into 'x', an argument being"):
        ac.jvp(fn, args, tangents)


def test_int_argument_cannot_be_differentiated():
    from tests.compiler.corpus import sum_range

    with pytest.raises(TypeError, match="cannot differentiate with respect to 'n'"):
        ac.jvp(sum_range, (3,), (1.0,))


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
@pytest.mark.parametrize("x", [0.3, 0.9])
def test_jvp_of_a_pair_with_an_int_returned_from_two_places(x, backend):
    from tests.compiler.corpus import tuple_with_an_int_from_two_returns as fn

    m = np.array([0.5, 1.0])
    compiled = ac.adcompile(fn, backend=backend, verify=True)
    value, value_dot = ac.jvp(compiled, (m, x), (None, 1.0))
    eps = 1e-6
    assert value == fn(m, x)
    assert value_dot == pytest.approx((fn(m, x + eps) - fn(m, x - eps)) / (2 * eps), rel=1e-6,
                                      abs=1e-9)


def divided_by_a_made_zero(x):
    zeros = np.zeros(2)
    return np.ceil(x) / ((x // 1.0) / zeros[1])


def made_then_written(x):
    z = np.zeros(2)
    z[0] = x * 2.0
    z[1] = 4.0
    return z[0] / z[1] + z[0]


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_an_array_only_read_is_a_constant(backend):
    """np.zeros that nothing writes has no tangent: forward mode's derivative is reverse
    mode's 0, not 0 * inf = nan; an array written with a differentiated value keeps one."""
    f = ac.adcompile(divided_by_a_made_zero, backend=backend)
    with np.errstate(divide="ignore", invalid="ignore"):
        value, tangent = ac.jvp(f, (-2.5,), (1.0,))
        assert tangent == 0.0 and ac.grad(f)(-2.5) == 0.0
        g = ac.adcompile(made_then_written, backend=backend)
        value, tangent = ac.jvp(g, (1.5,), (1.0,))
    assert tangent == ac.grad(g)(1.5) == 2.5


def filled_with_constants(x):
    """An array filled with -inf in a loop, its size read: a constant (arctan2's partials
    at (-inf, -inf) are nan)."""
    t = np.empty(len(x))
    for i in range(len(t)):
        t[i] = -np.inf
    v = t[t.size - 1] / 100.0
    return np.arctan2(v, v) + np.sum(x * x)


def constants_then_a_view_written(x):
    """Constants first, then a differentiated value through a view: not a constant."""
    t = np.empty(x.shape[0])
    for i in range(t.shape[0]):
        t[i] = 2.0
    u = t[1:]
    u[0] = x[0] * 3.0
    return np.sum(t * t)


def constants_into_a_loop_slot(x, n):
    """A constant-filled array carried by a loop that adds x into it: not a constant."""
    t = np.zeros(x.shape[0])
    for i in range(t.shape[0]):
        t[i] = 1.0
    for _ in range(n):
        t = t + x
    return np.sum(t * t)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_an_array_written_only_with_constants_is_a_constant(backend):
    """An array whose every write stores a value that depends on no differentiated argument
    has no tangent either (fuzz seed 589792254069: jvp gave nan where grad gives 0); one
    that a differentiated value reaches through a view or a loop keeps its tangent."""
    x = np.array([0.5, -1.5, 2.0])
    ones = np.ones(3)
    f = ac.adcompile(filled_with_constants, backend=backend)
    with np.errstate(invalid="ignore"):
        value, tangent = ac.jvp(f, (x,), (ones,))
        np.testing.assert_allclose(tangent, np.sum(2 * x))
        np.testing.assert_allclose(ac.grad(f)(x) @ ones, tangent)
    for g, args in ((constants_then_a_view_written, (x,)),
                    (constants_into_a_loop_slot, (x, 3))):
        g = ac.adcompile(g, backend=backend)
        for k in range(3):
            direction = np.eye(3)[k]
            _, tangent = ac.jvp(g, args, (direction,) + (None,) * (len(args) - 1))
            assert tangent == pytest.approx(ac.grad(g)(*args)[k], rel=1e-12)


def filled_from_a_tuple(p):
    a, b = p
    t = np.zeros(2)
    t[0] = a
    t[1] = b
    return np.sum(t * t)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_an_array_filled_from_a_differentiated_tuple_has_a_tangent(backend):
    """A tuple argument's items are differentiated values too: an array filled from them
    is no constant (its tangent was dropped, and jvp gave 0)."""
    f = ac.adcompile(filled_from_a_tuple, backend=backend)
    value, tangent = ac.jvp(f, ((3.0, 1.0),), ((1.0, 0.0),))
    assert (value, tangent) == (10.0, 6.0)


def scaled_copy(a, x):
    A = x * 1.0  # made from x, which is not differentiated
    A *= a
    return np.sum(A * A)


def written_through_a_view(p, x):
    a, b = p
    A = x + 0.0
    A[1:] = a * x[1:] + b
    return np.sum(A * A)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_an_array_made_from_constants_and_written_with_a_derivative(backend):
    """An array an elementwise op makes from values without derivatives, into which a
    differentiated value is written later, gets a tangent (zeros where it is made); jvp
    refused such programs."""
    x = np.array([1.0, 2.0, -0.5])
    f = ac.adcompile(scaled_copy, backend=backend)
    value, tangent = ac.jvp(f, (3.0, x), (1.0, None))
    assert value == pytest.approx(9.0 * np.sum(x * x)) and \
        tangent == pytest.approx(6.0 * np.sum(x * x))
    g = ac.adcompile(written_through_a_view, backend=backend)
    p = (1.5, -0.25)
    _, tangent = ac.jvp(g, (p, x), ((1.0, 0.0), None))
    h = 1e-6
    slope = (written_through_a_view((p[0] + h, p[1]), x) -
             written_through_a_view((p[0] - h, p[1]), x)) / (2 * h)
    assert tangent == pytest.approx(slope, rel=1e-6)


def atan2_of_a_large_int(y, n):
    return np.arctan2(y, n - 3) + np.arctan2(n * 1, y)


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_atan2_sees_an_int_operand_as_a_float(backend):
    """The rule squares its operands: an int near 2**62 is squared as a float (as math.atan2
    and numpy compute it), not in int64, which overflowed."""
    f = ac.adcompile(atan2_of_a_large_int, backend=backend)
    n = 2 ** 62
    expected = float(n - 3) / (float(n - 3) ** 2 + 0.25) - float(n) / (float(n) ** 2 + 0.25)
    assert ac.grad(f)(0.5, n) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert ac.jvp(f, (0.5, n), (1.0, None))[1] == pytest.approx(expected, rel=1e-12,
                                                                abs=1e-300)
