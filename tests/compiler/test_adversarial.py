"""Adversarial inputs give what plain Python gives, on every backend (interp, python, llvm).

One test per kind of input, each run on a function that reads an array, one that writes into
an array argument, and the gradient (grad and value_and_grad) of the reader: non-contiguous,
negative-stride, zero-size, read-only, big-endian and unaligned arrays; one array passed twice
to a writer; NaN and infinities, as scalars and as array elements; the int64 minimum, as a
numpy integer (wraps, as in numpy) and as a Python int (compiled code raises OverflowError
where Python would need more than 64 bits); mutual recursion (a located CompileError); a
2,000-line function; and float32 values computed as Python computes them (builtin sum adding in
order, np.array of Python floats and float32 values, math functions of float32 values and
their derivatives) and derivatives through unusual control flow (a refusal after a possible
return, a written array that a loop rebinds), found by the random-program fuzzer.

Results are compared with plain Python with `same`: the same types, floats bit for bit
(-0.0 is not 0.0) with every NaN equal to every NaN, arrays with the same dtype (byte order
included) and shape. A gradient, which plain Python cannot compute, is compared with the
reference interpreter's on a C-contiguous native copy of the input.

Every compiled function is defined at module level (adcompile reads its source)."""

import importlib.util
import inspect
import json
import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import adcompile as ac

BACKENDS = ("interp", "python", "llvm")
REPO = Path(__file__).resolve().parents[2]
INT64_MIN = -2**63


# =============================================================================================
# helpers
# =============================================================================================

_compiled = {}


def compiled(fn, backend):
    """One compiled function per (function, backend) for the whole module."""
    key = (fn, backend)
    if key not in _compiled:
        _compiled[key] = ac.adcompile(fn, backend=backend)
    return _compiled[key]


def _bits(value):
    a = np.asarray(value)
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), np.nan, a)  # one NaN for all payloads and signs
    return a.astype(a.dtype.newbyteorder("=")).tobytes()


def same(got, expected):
    """Same type and value, recursively through tuples; see the module docstring."""
    assert type(got) is type(expected), (got, expected)
    if isinstance(expected, tuple):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
    elif isinstance(expected, int):  # Python ints (and bools) may not fit 64 bits
        assert got == expected
    else:
        if isinstance(expected, np.ndarray):
            assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
        assert _bits(got) == _bits(expected), (got, expected)


def outcome(fn, *args):
    """What fn(*args) gives: ("value", result) or ("raises", exception type)."""
    try:
        with np.errstate(all="ignore"):
            return "value", fn(*args)
    except (ArithmeticError, ValueError, IndexError) as e:
        return "raises", type(e)


def outgrows_int64(value):
    return type(value) is int and not -2**63 <= value < 2**63


def like_python(backend, fn, *args):
    """fn compiled for `backend` gives what fn gives: the same result or an exception of the
    same type. Where Python's result is an int past 64 bits, native code's is OverflowError."""
    kind, expected = outcome(fn, *args)
    if kind == "value" and backend == "llvm" and outgrows_int64(expected):
        kind, expected = "raises", OverflowError
    if kind == "raises":
        with pytest.raises(expected):
            compiled(fn, backend)(*args)
    else:
        with np.errstate(all="ignore"):
            same(compiled(fn, backend)(*args), expected)


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    hits = [start + k for k, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (fn, text)
    return hits[0]


# =============================================================================================
# 1. array layouts: a reader, a writer and the reader's gradient
# =============================================================================================

def read_1d(x):
    s = np.float64(0.0)  # Python's result type even when the loop never runs
    for i in range(len(x)):
        s += x[i] * (i + 1) + math.sin(x[i])
    return s


def write_1d(x, c):
    for i in range(len(x)):
        x[i] = x[i] * c + i
    return x


def read_2d(m):
    s = np.float64(0.0)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            s += m[i, j] * (i - j) + m[i, j] ** 2
    return s


def write_2d(m, c):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            m[i, j] = m[i, j] * c - j
    return m


def middle_row(m):
    return m[m.shape[0] // 2]


def write_then_fail(x, c):
    for i in range(len(x)):
        x[i] = x[i] * c
    return x[len(x)]


FUNCTIONS = {1: (read_1d, write_1d), 2: (read_2d, write_2d)}


def fresh_1d():
    return np.linspace(-1.5, 2.25, 11)


def fresh_2d():
    return np.arange(20.0).reshape(4, 5) * 0.375 - 2.0


def unaligned(a):
    """A copy of `a` at an odd address."""
    buffer = bytearray(a.nbytes + 1)
    b = np.frombuffer(buffer, dtype=a.dtype, offset=1, count=a.size).reshape(a.shape)
    b[...] = a
    assert not b.flags.aligned
    return b


def read_only(a):
    a.setflags(write=False)
    return a


# each table: name -> a function making a fresh array of that kind (writers change it)
NON_CONTIGUOUS = {
    "strided": lambda: fresh_1d()[1::3],
    "column": lambda: fresh_2d()[:, 2],
    "strided_2d": lambda: fresh_2d()[::2, 1::2],
    "fortran_2d": lambda: np.asfortranarray(fresh_2d()),
    "transposed_2d": lambda: fresh_2d().T,
}
NEGATIVE_STRIDES = {
    "reversed": lambda: fresh_1d()[::-1],
    "reversed_by_two": lambda: fresh_1d()[::-2],
    "reversed_2d": lambda: fresh_2d()[::-1, ::-2],
    "reversed_transposed_2d": lambda: fresh_2d()[:, ::-1].T,
}
ZERO_SIZE = {
    "empty": lambda: np.zeros(0),
    "no_columns_2d": lambda: np.zeros((3, 0)),
    "no_rows_2d": lambda: np.zeros((0, 3)),
}
BIG_ENDIAN = {
    "big_endian": lambda: fresh_1d().astype(">f8"),
    "big_endian_2d": lambda: fresh_2d().astype(">f8"),
    "big_endian_strided_2d": lambda: fresh_2d().astype(">f8")[::-1, ::2],
}
UNALIGNED = {
    "unaligned": lambda: unaligned(fresh_1d()),
    "unaligned_2d": lambda: unaligned(fresh_2d()),
    "unaligned_transposed_2d": lambda: unaligned(fresh_2d()).T,
}
READ_ONLY = {
    "read_only": lambda: read_only(fresh_1d()),
    "read_only_2d": lambda: read_only(fresh_2d()),
    "read_only_strided_2d": lambda: read_only(fresh_2d())[::2, ::-1],
    "read_only_big_endian": lambda: read_only(fresh_1d().astype(">f8")),
    "read_only_unaligned": lambda: read_only(unaligned(fresh_1d())),
}


def check_reader(make, backend, reader=None):
    """The reader gives Python's value; grad and value_and_grad give the reference gradient;
    nothing is written."""
    reader = reader or FUNCTIONS[make().ndim][0]
    x = make()
    same(compiled(reader, backend)(x), reader(make()))
    reference = ac.grad(compiled(reader, "interp"))(np.array(x, dtype=np.float64))
    same(ac.grad(compiled(reader, backend))(x), reference)
    same(ac.value_and_grad(compiled(reader, backend))(x), (reader(make()), reference))
    same(x, make())


def check_writer(make, backend):
    """The writer leaves the array as Python leaves it and returns the argument itself."""
    writer = FUNCTIONS[make().ndim][1]
    got_array, expected_array = make(), make()
    got = compiled(writer, backend)(got_array, 1.5)
    expected = writer(expected_array, 1.5)
    same(got_array, expected_array)
    same(got, expected)
    assert got is got_array


def check_row_view(make, backend):
    """A returned row is a view of the caller's array (its dtype and memory), as in Python."""
    got_array, expected_array = make(), make()
    like_python(backend, middle_row, got_array)
    if got_array.shape[0]:
        got, expected = compiled(middle_row, backend)(got_array), middle_row(expected_array)
        assert np.shares_memory(got, got_array) == np.shares_memory(expected, expected_array)


def check_write_then_fail(make, backend):
    """A function that writes and then fails leaves the array as Python leaves it."""
    got_array, expected_array = make(), make()
    with pytest.raises(IndexError):
        write_then_fail(expected_array, 2.0)
    with pytest.raises(IndexError):
        compiled(write_then_fail, backend)(got_array, 2.0)
    same(got_array, expected_array)


EXTRA_CHECKS = {1: check_write_then_fail, 2: check_row_view}


def check_layout(make, backend):
    check_reader(make, backend)
    check_writer(make, backend)
    EXTRA_CHECKS[make().ndim](make, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", NON_CONTIGUOUS)
def test_non_contiguous_arrays(kind, backend):
    assert not NON_CONTIGUOUS[kind]().flags.c_contiguous
    check_layout(NON_CONTIGUOUS[kind], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", NEGATIVE_STRIDES)
def test_negative_strides(kind, backend):
    assert min(NEGATIVE_STRIDES[kind]().strides) < 0
    check_layout(NEGATIVE_STRIDES[kind], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ZERO_SIZE)
def test_zero_size_arrays(kind, backend):
    check_layout(ZERO_SIZE[kind], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", BIG_ENDIAN)
def test_big_endian_arrays(kind, backend):
    check_layout(BIG_ENDIAN[kind], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", UNALIGNED)
def test_unaligned_arrays(kind, backend):
    check_layout(UNALIGNED[kind], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", READ_ONLY)
def test_read_only_arrays(kind, backend):
    """Readers and gradients work; a writer raises numpy's ValueError and writes nothing."""
    make = READ_ONLY[kind]
    check_reader(make, backend)
    writer = FUNCTIONS[make().ndim][1]
    with pytest.raises(ValueError, match="read-only"):
        writer(make(), 1.5)
    x = make()
    with pytest.raises(ValueError, match="read-only"):
        compiled(writer, backend)(x, 1.5)
    same(x, make())


# =============================================================================================
# 2. one array passed twice
# =============================================================================================

def shift_add(x, y):
    for i in range(1, len(x)):
        x[i] = x[i] + y[i - 1]
    return x


def mix_2d(m, n):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            m[i, j] = m[i, j] * 0.5 + n[j, i]
    return m


def scatter_dot(x, y, c):
    s = 0.0
    for i in range(len(x)):
        x[i] = y[len(y) - 1 - i] * c
        s += x[i] * y[i]
    return s


def _square():
    return np.arange(16.0).reshape(4, 4) - 5.5


def _ramp():
    return np.arange(1.0, 10.0)


# name -> (function, a fresh base array, the arguments made from it: they share memory)
ALIASED = {
    "same_array": (shift_add, _ramp, lambda a: (a, a)),
    "overlapping": (shift_add, _ramp, lambda a: (a[1:], a[:-1])),
    "overlapping_behind": (shift_add, _ramp, lambda a: (a[:-1], a[1:])),
    "reversed": (shift_add, _ramp, lambda a: (a, a[::-1])),
    "same_2d": (mix_2d, _square, lambda m: (m, m)),
    "transposed_2d": (mix_2d, _square, lambda m: (m, m.T)),
    "scalar_result": (scatter_dot, _ramp, lambda a: (a, a, 2.0)),
}
# native code reads big-endian and unaligned arrays through copies, which cannot share memory:
# such aliased calls are refused with a TypeError naming both parameters (other backends run them)
ALIASED_COPIED = {
    "same_big_endian": (shift_add, lambda: _ramp().astype(">f8"), lambda a: (a, a)),
    "overlapping_unaligned": (shift_add, lambda: unaligned(_ramp()), lambda a: (a[1:], a[:-1])),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ALIASED)
def test_one_array_passed_twice_to_a_writer(case, backend):
    """The plain call has the Python function's aliasing semantics: a read sees the writes
    made before it through the other argument."""
    fn, base, split = ALIASED[case]
    got_base, expected_base = base(), base()
    got = compiled(fn, backend)(*split(got_base))
    expected = fn(*split(expected_base))
    same(got_base, expected_base)
    same(got, expected)
    assert np.shares_memory(got, got_base) == np.shares_memory(expected, expected_base)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ALIASED_COPIED)
def test_one_copied_array_passed_twice_to_a_writer(case, backend):
    fn, base, split = ALIASED_COPIED[case]
    got_base, expected_base = base(), base()
    if backend == "llvm":
        with pytest.raises(TypeError, match="'x' and 'y' share memory"):
            compiled(fn, backend)(*split(got_base))
        same(got_base, base())  # nothing was written
        return
    got = compiled(fn, backend)(*split(got_base))
    same(got, fn(*split(expected_base)))
    same(got_base, expected_base)


GRADIENTS = {
    "grad": lambda f: ac.grad(f, argnums=1),
    "value_and_grad": lambda f: ac.value_and_grad(f, argnums=1),
    "vjp": lambda f: lambda *args: ac.vjp(f, *args)[1](1.0),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("transform", GRADIENTS)
@pytest.mark.parametrize("split", [lambda a: (a, a, 2.0), lambda a: (a[1:], a[:-1], 2.0)],
                         ids=["same_array", "overlapping"])
def test_gradient_of_a_writer_given_one_array_twice_is_refused(split, transform, backend):
    """The derivative re-reads arguments it assumes unchanged: sharing is an error that says
    so, raised before anything is written."""
    a = _ramp()
    with pytest.raises((ac.CompileError, ValueError), match="shares memory"):
        GRADIENTS[transform](compiled(scatter_dot, backend))(*split(a))
    same(a, _ramp())


# =============================================================================================
# 3. NaN and infinities
# =============================================================================================

def arithmetic(a, b):
    return a + b, a - b, a * b, a / b, a ** 2, -a, abs(a)


def extrema(a, b):
    return min(a, b), max(a, b), np.minimum(a, b), np.maximum(a, b)


def comparisons(a, b):
    return a < b, a <= b, a > b, a >= b, a == b, a != b, not (a < b)


def element_stats(x):
    s = 0.0
    lo = x[0]
    hi = x[0]
    positive = 0
    unordered = 0
    for i in range(len(x)):
        s += x[i]
        lo = min(lo, x[i])
        hi = max(hi, x[i])
        if x[i] > 0:
            positive += 1
        if x[i] != x[i]:
            unordered += 1
    return s, lo, hi, positive, unordered


def weighted_squares(x):
    s = np.float64(0.0)
    for i in range(len(x)):
        s += x[i] * (i + 1) + x[i] * x[i]
    return s


NAN, INF = math.nan, math.inf
PAIRS = [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (INF, 1.0), (1.0, -INF), (INF, -INF),
         (-INF, -INF), (NAN, INF), (-0.0, INF)]
NUMBER_KINDS = {"float": float, "float64": np.float64}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", NUMBER_KINDS)
@pytest.mark.parametrize("a,b", PAIRS)
@pytest.mark.parametrize("fn", [arithmetic, extrema, comparisons], ids=lambda f: f.__name__)
def test_nan_and_infinite_scalars(fn, a, b, kind, backend):
    make = NUMBER_KINDS[kind]
    like_python(backend, fn, make(a), make(b))


ELEMENTS = {
    "nan_inside": [1.0, NAN, 2.0],
    "nan_first": [NAN, 1.0, -1.0],
    "nan_last": [1.0, 2.0, NAN],
    "infinities": [INF, -INF, 1.0],
    "signed_zeros": [-0.0, 0.0, -INF],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values", ELEMENTS)
def test_nan_and_infinite_array_elements(values, backend):
    x = np.array(ELEMENTS[values])
    like_python(backend, element_stats, x)
    like_python(backend, read_1d, x)  # math.sin(inf) is Python's ValueError
    check_reader(lambda: np.array(ELEMENTS[values]), backend, weighted_squares)


def floor_of(a):
    return math.floor(a)


def ceil_of(a):
    return math.ceil(a)


def trunc_of(a):
    return math.trunc(a)


def int_of(a):
    return int(a)


def int64_of(a):
    return np.int64(a)


def floor_of_element(x):
    return math.floor(x[0])


def int_of_element(x):
    return int(x[0])


TO_INT = [floor_of, ceil_of, trunc_of, int_of]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [NAN, INF, -INF, 1e300, -2.5])
@pytest.mark.parametrize("fn", TO_INT + [int64_of], ids=lambda f: f.__name__)
def test_float_to_int_of_nan_and_infinity_raises_like_python(fn, value, backend):
    """math.floor(inf) is an OverflowError, int(nan) a ValueError, as in Python."""
    like_python(backend, fn, value)
    if fn is not int64_of:  # np.int64 of a numpy float casts as numpy does (not checked)
        like_python(backend, fn, np.float64(value))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [NAN, INF, -INF])
@pytest.mark.parametrize("fn", [floor_of_element, int_of_element], ids=lambda f: f.__name__)
def test_float_to_int_of_a_nan_or_infinite_element(fn, value, backend):
    like_python(backend, fn, np.array([value, 1.0]))


def sin_of(a):
    return math.sin(a)


def cos_of(a):
    return math.cos(a)


def tan_of(a):
    return math.tan(a)


def exp_of(a):
    return math.exp(a)


def expm1_of(a):
    return math.expm1(a)


def cosh_of(a):
    return math.cosh(a)


def sinh_of(a):
    return math.sinh(a)


def fmod_of(a, b):
    return math.fmod(a, b)


def math_pow(a, b):
    return math.pow(a, b)


def power(a, b):
    return a ** b


# Python raises for these: math's domain errors (ValueError) and range errors (OverflowError),
# and float ** float past the largest float
MATH_ERRORS = [
    (sin_of, (INF,)), (cos_of, (-INF,)), (tan_of, (INF,)), (exp_of, (1000.0,)),
    (expm1_of, (1000.0,)), (cosh_of, (-1000.0,)), (sinh_of, (1000.0,)), (fmod_of, (INF, 1.0)),
    (fmod_of, (1.0, 0.0)), (math_pow, (10.0, 400.0)), (math_pow, (0.0, -1.0)),
    (power, (10.0, 400.0)), (power, (1e300, 2)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", MATH_ERRORS,
                         ids=[f"{f.__name__}{args}" for f, args in MATH_ERRORS])
def test_math_domain_and_range_errors_of_infinities_and_huge_values(fn, args, backend):
    assert outcome(fn, *args)[0] == "raises"
    like_python(backend, fn, *args)


# =============================================================================================
# 4. the int64 minimum
# =============================================================================================

def negate(n):
    return -n


def absolute(n):
    return abs(n)


def floordiv_by_minus_one(n):
    return n // -1


def mod_by_minus_one(n):
    return n % -1


def floordiv(n, m):
    return n // m


def mod(n, m):
    return n % m


def times_minus_one(n):
    return n * -1


def zero_minus(n):
    return 0 - n


INT_MIN_CASES = [(negate, 1), (absolute, 1), (floordiv_by_minus_one, 1), (mod_by_minus_one, 1),
                 (floordiv, 2), (mod, 2), (times_minus_one, 1), (zero_minus, 1)]


def _min_args(count, make):
    return (make(INT64_MIN), make(-1))[:count]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,count", INT_MIN_CASES, ids=[f.__name__ for f, _ in INT_MIN_CASES])
def test_int64_minimum_as_a_numpy_integer_wraps_as_in_numpy(fn, count, backend):
    like_python(backend, fn, *_min_args(count, np.int64))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,count", INT_MIN_CASES, ids=[f.__name__ for f, _ in INT_MIN_CASES])
def test_int64_minimum_as_a_python_int(fn, count, backend):
    """Python gives a big int; native code cannot and raises OverflowError instead (the
    Python backend and the interpreter compute with Python ints)."""
    like_python(backend, fn, *_min_args(count, int))


def np_absolute(n):
    return np.abs(n)


def np_squared(a):
    return np.power(a, 2)


# numpy functions return numpy scalars, of Python numbers too
NUMPY_OF_NUMBERS = [(np_absolute, -3), (np_absolute, np.int64(-3)), (np_absolute, -0.5),
                    (np_absolute, np.float64(-0.5)), (np_absolute, np.int64(INT64_MIN)),
                    (np_squared, 1.5), (np_squared, np.float64(-1.5)),
                    *[pytest.param(np_squared, v, marks=pytest.mark.xfail(
                        strict=True, reason="known gap: np.power of integers is computed as "
                        "float64 (numpy gives int64, and ValueError for negative exponents)"))
                      for v in (-3, np.int64(-3))]]


def _numpy_case_id(case):
    return case.__name__ if callable(case) else repr(case)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,value", NUMPY_OF_NUMBERS, ids=_numpy_case_id)
def test_numpy_functions_of_negative_numbers(fn, value, backend):
    like_python(backend, fn, value)


# =============================================================================================
# 5. recursion
# =============================================================================================

def ping(n, x):
    if n <= 0:
        return x
    return pong(n - 1, x * 2.0)


def pong(n, x):
    if n <= 0:
        return x
    return ping(n - 1, x + 1.0)


def calls_into_a_cycle(x):
    return ping(3, x) + 1.0


RECURSIVE_CALLS = {line_of(ping, "return pong("), line_of(pong, "return ping(")}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", [(ping, (3, 1.0)), (calls_into_a_cycle, (1.0,))],
                         ids=["mutual", "through_a_caller"])
def test_mutual_recursion_is_a_located_compile_error(fn, args, backend):
    for call in (compiled(fn, backend), ac.grad(compiled(fn, backend), argnums=len(args) - 1)):
        with pytest.raises(ac.CompileError, match="recursion") as info:
            call(*args)
        assert info.value.filename == __file__
        assert info.value.line in RECURSIVE_CALLS


# =============================================================================================
# 6. a gradient raises what its function raises
# =============================================================================================

def pick(x, i):
    return x[i] * 2.0


def pick_2d(m, i, j):
    return m[i, j] * 2.0


def floordiv_plus(a, b):
    return a // b + a


def log_plus(a, b):
    return math.log(a) + b


# name -> (function, arguments for which it raises, the differentiated argument)
RAISING = {
    "index_past_the_end": (pick, (np.arange(5.0), 5), 0),
    "index_before_the_start": (pick, (np.arange(5.0), -6), 0),
    "index_far_out": (pick, (np.arange(5.0), 10**8), 0),
    "index_2d": (pick_2d, (np.zeros((3, 4)), 1, 4), 0),
    "floor_division_by_zero": (floordiv_plus, (1.0, 0.0), 0),
    "math_domain": (log_plus, (0.0, 2.0), 0),
    "math_domain_of_infinity": (sin_of, (INF,), 0),
}
TRANSFORMS = {"grad": ac.grad, "value_and_grad": ac.value_and_grad}


def gradient_outcomes(backend):
    """{case-transform: the exception's name, or "no error"} for every RAISING case."""
    found = {}
    for case, (fn, args, argnum) in RAISING.items():
        for name, transform in TRANSFORMS.items():
            kind, what = outcome(transform(compiled(fn, backend), argnums=argnum), *args)
            found[f"{case}-{name}"] = what.__name__ if kind == "raises" else "no error"
    return found


CHILD = ("import json, sys\n"
         "from tests.compiler import test_adversarial as t\n"
         "print(json.dumps(t.gradient_outcomes(sys.argv[1])))\n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gradient_raises_what_its_function_raises(backend):
    """In a child process: a gradient that skipped an index check would write outside the
    array (and could take the test run down with it)."""
    child = subprocess.run([sys.executable, "-c", CHILD, backend], cwd=REPO,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    expected = {f"{case}-{name}": outcome(fn, *args)[1].__name__
                for case, (fn, args, _) in RAISING.items() for name in TRANSFORMS}
    assert json.loads(child.stdout.splitlines()[-1]) == expected


# =============================================================================================
# 7. a 2,000-line function
# =============================================================================================

def _load_benchmark():
    spec = importlib.util.spec_from_file_location("compile_time",
                                                  REPO / "benchmarks" / "compile_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_2000_line_function(tmp_path):
    """Compiles and runs on the LLVM and Python backends with Python's result to the bit; the
    native gradient agrees with central differences."""
    bench = _load_benchmark()
    fn = bench.load_long_function(2000, tmp_path)
    assert len(inspect.getsource(fn).splitlines()) == 2000
    x, c = np.linspace(-1.0, 1.0, 8), 0.3
    expected = fn(x, c)
    for backend in ("llvm", "python"):
        same(ac.adcompile(fn, backend=backend)(x, c), expected)
    g_x, g_c = ac.grad(ac.adcompile(fn), argnums=(0, 1))(x, c)
    eps = 1e-6
    for k in range(len(x)):
        e = np.zeros_like(x)
        e[k] = eps
        fd = (fn(x + e, c) - fn(x - e, c)) / (2 * eps)
        np.testing.assert_allclose(g_x[k], fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_c, (fn(x, c + eps) - fn(x, c - eps)) / (2 * eps), rtol=1e-5,
                               atol=1e-7)


# =============================================================================================
# 8. a gradient returns where its function returns; a loop test is not evaluated after return
# =============================================================================================

def sqrt_of(a):
    return math.sqrt(a)


def half_power(a):
    return a ** 0.5


def tiny_power(a, b):
    return math.pow(a, b)


def quotient(a, b):
    return b / (a + 1.0)


# Python floats at points where the derivative is infinite: like JAX and PyTorch, the
# gradient is inf or nan there (derivative code computes as numpy does), not a Python error
SINGULAR = [(sqrt_of, (0.0,), 0, math.inf), (half_power, (0.0,), 0, math.inf),
            (tiny_power, (5e-324, 5e-324), 0, math.inf), (quotient, (-1.0 + 2.0**-52, 1e300), 0,
                                                          -math.inf)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args,argnum,expected", SINGULAR,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(SINGULAR)])
def test_a_gradient_at_a_singular_point_is_infinite_not_an_error(fn, args, argnum, expected,
                                                                  backend):
    fn(*args)  # the function itself returns
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = ac.grad(compiled(fn, backend), argnums=argnum)(*args)
        value, g2 = ac.value_and_grad(compiled(fn, backend), argnums=argnum)(*args)
    assert type(g) is float and g == expected and g2 == expected
    same(value, fn(*args))


def while_returns_at_the_end(a, x):
    i = 0
    s = x
    while a[i] * s > 0.0:  # a[len(a)] would be out of range: the return comes first
        s = s * a[i]
        i += 1
        if i == len(a):
            return s * x
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_while_test_is_not_evaluated_after_a_return_in_its_body(backend):
    a, x = np.array([1.5, 1.2, 1.1]), 0.7
    f = compiled(while_returns_at_the_end, backend)
    same(f(a, x), while_returns_at_the_end(a, x))
    g_a, g_x = ac.grad(f, argnums=(0, 1))(a, x)
    np.testing.assert_allclose(g_a, [x * x * 1.2 * 1.1, x * x * 1.5 * 1.1, x * x * 1.5 * 1.2])
    np.testing.assert_allclose(g_x, 2 * x * 1.5 * 1.2 * 1.1)


def compared_only(x):
    if x ** 0.5 > 1.0 or np.sqrt(x) < -1.0:  # nan at x < 0: only compared, never differentiated
        x = x * 2.0
    return x * 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_value_only_compared_gets_no_adjoint(backend):
    """Its adjoint would be zero, and zero times its nan partial derivative is nan."""
    x = np.float64(-1.5)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ac.grad(compiled(compared_only, backend))(x) == 3.0
        assert ac.jvp(compiled(compared_only, backend), (x,), (np.float64(1.0),))[1] == 3.0


def masked_in_a_branch(flag, x):
    if flag > 2.0:  # (in a branch: the array's zero adjoint was made all the same)
        return np.sum(x[np.arcsin(x) >= 0.0])
    return 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_array_only_compared_gets_no_adjoint(backend):
    """arcsin(x) only builds a mask; its zero adjoint met arcsin's partial derivative, nan
    where |x| > 1 (fuzz seed 1673084427444)."""
    x = np.array([[1.8, 0.032, 2.28, -0.6], [2.2, 1.993, 2.0, 0.6], [-1e300, -2.081, 0.976, 0.0]])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = ac.grad(compiled(masked_in_a_branch, backend), argnums=1)(3.0, x)
    np.testing.assert_array_equal(g, (np.arcsin(np.clip(x, -1, 1)) >= 0) & (np.abs(x) <= 1))


def mask_carried_by_a_loop(x):
    acc = np.arcsin(x) * 1.0
    for i in range(3):
        acc = acc * 2.0
    return np.sum(x[acc >= 0])


def mask_merged_by_a_branch(flag, x):
    acc = np.arcsin(x) * 1.0
    if flag > 0:
        acc = acc * 2.0
    return np.sum(x[acc >= 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_array_only_compared_after_a_loop_or_branch_gets_no_adjoint(backend):
    """As above, with the compared array carried by a loop or merged by a branch: the slot's
    arrays (initial, carried, yielded, result) reach no output, so none gets an adjoint
    (each had a zero one, and arcsin's partial made it nan where |x| > 1)."""
    x = np.array([0.5, -0.3, 1.5, 0.2])
    expected = np.array([1.0, 0.0, 0.0, 1.0])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g_loop = ac.grad(compiled(mask_carried_by_a_loop, backend))(x)
        g_branch = ac.grad(compiled(mask_merged_by_a_branch, backend), argnums=1)(1.0, x)
    np.testing.assert_array_equal(g_loop, expected)
    np.testing.assert_array_equal(g_branch, expected)


def element_of_a_carried_array(x):
    a = x * 2.0
    s = 0.0
    for i in range(3):
        a = a * x
        s = s + a[i]
    return s


def swapped_carried_arrays(x):
    a = x * 1.0
    b = x * 2.0
    for i in range(2):
        a, b = b, a * x
    return a[0] + b[1]


def written_copy_carried_by_a_loop(x):
    a = x * 1.0
    for i in range(2):
        a[0] = a[0] * 3.0
        a = a * x
    return a[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [element_of_a_carried_array, swapped_carried_arrays,
                                written_copy_carried_by_a_loop])
def test_arrays_a_loop_makes_and_carries(fn, backend):
    """Three gradients through arrays a loop carries, found by review: an element read of
    the array the body makes and yields had no adjoint (0); of two slots swapping arrays,
    one carried its adjoint as a value and the other looked for its shadow (half the
    gradient lost); and `x * 1.0` was folded to x although the loop writes into it, so the
    function wrote into its argument."""
    x = np.array([0.5, -0.3, 0.7])
    before = x.copy()
    same(compiled(fn, backend)(x), fn(before.copy()))
    np.testing.assert_array_equal(x, before)
    g = ac.grad(compiled(fn, backend))(x)
    eps = 1e-6
    fd = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def reversed_view_in_a_loop(a, n):
    h = np.log(a) * 0.5
    t = a * 1.0
    u = 0.0
    for i in range(n):
        h = h * 0.5 + a
        u = t[0] if h[i] <= t[1] else u
        t = a * h[::-1]
    return float(np.sum(t)) + u


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_of_an_array_the_reversed_loop_carries(backend):
    """h is made in the loop and carried to the next trip: the reversed loop carries its
    shadow, and the view h[::-1] takes its shadow from that one (it had none: KeyError,
    fuzz seed 3411244320428)."""
    a = np.array([0.5, 0.9, 1.3, 1.7])
    g = ac.grad(compiled(reversed_view_in_a_loop, backend))(a, 3)
    eps = 1e-6
    fd = [(reversed_view_in_a_loop(a + eps * e, 3) - reversed_view_in_a_loop(a - eps * e, 3))
          / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def huge_folded_int(x, n):
    v = int(1.7976931348623157e308) * 10  # folded: an int no float holds
    return x + (v + n) % 7 + (n - v) % 5


@pytest.mark.parametrize("backend", ["interp", "python"])
def test_an_int_constant_no_float_holds_is_emitted(backend):
    """The Python backend printed a folded int constant through math.copysign, which turns
    it into a float: OverflowError while compiling (fuzz seed 3411244320685). Compiled code
    has 64-bit ints and raises OverflowError instead (test_native)."""
    v = int(1.7976931348623157e308) * 10
    same(compiled(huge_folded_int, backend)(1.0, 3), 1.0 + (v + 3) % 7 + (3 - v) % 5)


def int_of_five_thousand_digits(x, n):
    v = 10 ** 5000  # folded: Python has no decimal repr for it
    return x + (v + n) % 7 - v // (v - 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int_constant_of_more_than_4300_digits(backend):
    """CSE keyed constants by their repr and the printer printed them with it, which Python
    refuses for ints of more than 4300 digits: an InternalError. The interpreter and the
    Python backend compute with Python ints; compiled code's ints are 64-bit, so the folded
    constant is an OverflowError when the code runs."""
    want = 2.5 + (10 ** 5000 + 3) % 7 - 1
    if backend == "llvm":
        with pytest.raises(OverflowError):
            compiled(int_of_five_thousand_digits, backend)(2.5, 3)
    else:
        same(compiled(int_of_five_thousand_digits, backend)(2.5, 3), want)


def constant_test_returns(a, b):
    if -7:
        return a
    return b  # CPython drops this line's code as unreachable: the source must still have it


@pytest.mark.parametrize("backend", BACKENDS)
def test_code_python_drops_as_unreachable_is_still_read(backend):
    same(compiled(constant_test_returns, backend)(1.0, 2.0), 1.0)


# =============================================================================================
# 9. float32 values computed as Python computes them (random-program findings)
# =============================================================================================

def column_sum(m, x):
    return float(x - sum(m[:, 1]))


def store_row_sum(m, i, j):
    m[j % m.shape[0], i % m.shape[1]] = sum(m[i % m.shape[0], :])
    return m


def builtin_sum(x):
    return sum(x)


# float32 elements whose sum in float32, in order, is not np.sum's (pairwise from 8 elements
# in numpy, in float64 on the LLVM backend): 1e8 + 3 rounds back to 1e8 each time
_SUMMED = np.array([1e8] + [3.0] * 8, dtype=np.float32)
SUMS = {
    "float32": lambda: _SUMMED.copy(),
    "float32_nan": lambda: np.array([1e8, 3.0, math.nan, 3.0], dtype=np.float32),
    "signed_zeros": lambda: np.array([-0.0, -0.0]),  # 0 + -0.0 is 0.0
    "bool": lambda: np.array([True, False, True]),  # 0 + np.True_ is an np.int64
    "rows_float32": lambda: np.stack([_SUMMED, _SUMMED[::-1], _SUMMED]).T.copy(),
    "rows_bool": lambda: np.array([[True, False], [True, True], [False, True]]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("values", SUMS)
def test_builtin_sum_adds_in_order_from_int_zero(values, backend):
    """sum(x) is Python's loop: 0 + x[0] + x[1] + ... with numpy scalar semantics (float32
    stays float32), the rows of a 2-d array added as arrays."""
    like_python(backend, builtin_sum, SUMS[values]())


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtin_sum_of_float32_views(backend):
    m = np.array([[0.5, 1e8, 2.0], [1.0, 3.0, -1.0], [2.0, 3.0, 0.25], [3.0, 3.0, 7.0]],
                 dtype=np.float32)
    like_python(backend, column_sum, m, -2.385)
    got, expected = np.asfortranarray(m), np.asfortranarray(m)
    store_row_sum(expected, np.int64(2), np.int64(-2))
    compiled(store_row_sum, backend)(got, np.int64(2), np.int64(-2))
    same(got, expected)


def weighted_row_sum(m):
    return float(np.sum(sum(m) * np.arange(m.shape[1])))


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtin_sum_gradient(backend):
    x = np.array([0.5, -1.5, 2.0])
    assert ac.grad(compiled(builtin_sum, backend))(x).tolist() == [1.0, 1.0, 1.0]
    m = np.arange(6.0).reshape(2, 3)
    assert ac.grad(compiled(weighted_row_sum, backend))(m).tolist() == [[0.0, 1.0, 2.0]] * 2


def literal_of_mixed_numbers(x, y):
    t = np.array([x, x, x * y])  # x * y is a float32, the array float64
    return float(x * t[5 % len(t)] * y), t, np.stack([x * y, x]), np.array([1, y])


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_of_python_floats_and_float32_is_float64(backend):
    """np.array([...]) and np.stack([...]) make each item an array first: a Python float is a
    float64 there (not weak), so a float32 item does not make the array float32."""
    like_python(backend, literal_of_mixed_numbers, 0.4, np.float32(2.094))


def cos_of_float32(x, a):
    return math.cos(a[0] - x)  # math.cos converts the float32 difference to a float


def cos_of_stored_float32(b, y, x, a):
    x /= x if x <= 3.25 else x
    w = 0
    while w < 7:
        w += 1
        for _ in range(3):
            a[(w - 2) % len(a)] = x
        return float(np.cos(a[-1] + x))
    return float(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_math_function_of_float32_is_differentiated_in_float64(backend):
    """The derivative of math.cos(t) for a float32 t is -math.sin(t) in float64, as the value
    is computed; it is rounded to float32 only on its way back to t."""
    a = np.array([-0.142754], dtype=np.float32)
    t = a[0] - 2.36
    expected = float(np.float32(math.sin(float(t))))
    assert ac.grad(compiled(cos_of_float32, backend))(2.36, a) == expected
    same(ac.value_and_grad(compiled(cos_of_float32, backend))(2.36, a),
         (cos_of_float32(2.36, a), expected))


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivative_programs_return_the_function_value(backend):
    """jvp and value_and_grad return the compiled function's own value, bit for bit (np.cos
    of a float32: the LLVM backend's cosf may differ from numpy's in the last bit, never from
    itself)."""
    def args():
        return True, np.float64(1.2), np.float32(1.116), np.array([-1.02709, -0.4, 0.6, 0.329],
                                                                 dtype=np.float32)

    f = compiled(cos_of_stored_float32, backend)
    value = f(*args())
    same(ac.jvp(f, args(), (None, np.float64(1.0), None, None))[0], value)
    same(ac.value_and_grad(f, argnums=1)(*args())[0], value)


# =============================================================================================
# 10. derivatives through unusual control flow (random-program findings)
# =============================================================================================

def _pair_returned_late(x, n):
    for i in range(n):
        return 1.0, 2.0
    for j in range(n):  # runs only when the first loop did not return: guarded by an if
        return x, x * j
    return x, x


def sums_a_pair(x, n):
    a, b = _pair_returned_late(x, n)
    return a + b


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pair_returned_after_a_possible_return_is_differentiated(backend):
    """The if guarding the statements after a possible return merges the pair from each
    return (reverse mode refused that merge until tuples were split, passes/split_tuples)."""
    g = ac.grad(compiled(sums_a_pair, backend))
    assert g(1.5, 3) == 0.0 and g(1.5, 0) == 2.0


def write_rebound_in_loop(m, c, y):
    for i in range(m.shape[0]):
        m[i, 0] += 1.0  # the argument in the first iteration, new arrays afterwards
        m = m * 0.5
    return y * c + float(m[0, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_of_a_writer_whose_array_a_loop_rebinds(backend):
    def args():
        return np.arange(6.0).reshape(3, 2), 2.0, 3.0

    got_args, expected_args = args(), args()
    value, tangent = ac.jvp(compiled(write_rebound_in_loop, backend), got_args,
                            (None, None, 1.0))
    same(value, write_rebound_in_loop(*expected_args))
    same(got_args[0], expected_args[0])
    assert tangent == 2.0


# =============================================================================================
# 11. numpy's dtypes and signed zeros in reductions (random-program findings)
# =============================================================================================

def clipped_product(a):
    return np.prod(a[::-1].clip(-1, 2)), np.clip(a, 0, 3), a.clip(-1.5, 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_of_integers_by_integers_stays_integer(backend):
    """An int64 array clipped by Python ints is int64 (its product 0, not -0.0); by a
    float, float64."""
    a = np.array([2**62, 6, 0, 5, -2])
    same(compiled(clipped_product, backend)(a.copy()), clipped_product(a.copy()))



def clip_bounds(x, lo, hi):
    return np.clip(x, lo, hi), x.clip(lo, hi)


CLIP_BOUNDS = [(0.0, 5.0), (-0.0, 5.0), (-5.0, 0.0), (-5.0, -0.0), (np.nan, 1.0), (0.0, np.nan),
               (2.0, 1.0)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lo,hi", CLIP_BOUNDS, ids=range(len(CLIP_BOUNDS)))
def test_clip_keeps_a_value_equal_to_its_bound(lo, hi, backend):
    """numpy's clip keeps x where it equals a bound (-0.0 clipped at 0.0 stays -0.0, 0.0 at
    -0.0 stays 0.0), propagates a NaN value or bound, and gives hi where lo > hi."""
    x = np.array([-0.0, 0.0, np.nan, -7.0, 7.0, 1.0, 1.5, -0.0, 0.0])
    same(compiled(clip_bounds, backend)(x, lo, hi), clip_bounds(x, lo, hi))


def nan_signs(x):
    return (math.copysign(1.0, np.inf - np.inf), math.copysign(1.0, np.inf * 0.0),
            math.copysign(1.0, x - x), math.copysign(1.0, -(np.inf - np.inf)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_folded_nan_keeps_its_sign(backend):
    """inf - inf is a NaN with its sign bit set on x86 (the CPU's default NaN); folded to a
    constant, it stays that NaN (the Python backend once wrote float('nan'), a positive one)."""
    with np.errstate(invalid="ignore"):
        same(compiled(nan_signs, backend)(np.inf), nan_signs(np.inf))

def zero_maxima(a, m):
    return np.max(a), np.min(a), np.max(m, axis=0), np.min(m, axis=1, keepdims=True)


ZERO_TIES = [np.array([0.0, -0.0]), np.array([-0.0, 0.0]), np.array([-0.0, 0.0, -0.0]),
             np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, -0.0])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a", ZERO_TIES, ids=range(len(ZERO_TIES)))
def test_max_and_min_of_tied_zeros_keep_the_last(a, backend):
    """Among +0.0 and -0.0 the last wins, as in np.maximum's reduction over a few elements
    (numpy's vector loops over many elements pick in an order of their own)."""
    m = np.array([[0.0, -0.0, 3.0], [-0.0, 0.0, 3.0]])
    same(compiled(zero_maxima, backend)(a, m), zero_maxima(a, m))


def unused_ceil_of_int(m, n):
    unused = (m[0, 0] - True) // np.ceil(n)
    return 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_function_of_a_python_int_past_64_bits_raises_even_unused(backend):
    """np.ceil(n) converts the Python int n to int64 first: past 64 bits every backend raises
    OverflowError (as Python's floor division by the result would), unused result or not."""
    m = np.ones((2, 2), dtype=np.int64)
    assert compiled(unused_ceil_of_int, backend)(m, 7) == 1.0
    with pytest.raises(OverflowError):
        compiled(unused_ceil_of_int, backend)(m, 2**70)
    with pytest.raises(OverflowError):
        unused_ceil_of_int(m, 2**70)


def shifted_onto_itself(x):
    t = x * 1.0
    for i in range(x.size):
        t[1:-1] = t[2:]
    return np.sum(t * x)


def assigned_to_itself(x):
    t = x * 2.0
    t[...] = t
    t[:2] = t[1:3]
    return np.sum(t * t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [shifted_onto_itself, assigned_to_itself])
def test_an_assignment_from_overlapping_memory(fn, backend):
    """`t[1:-1] = t[2:]`: the adjoint reads t's shadow at the destination, clears it there,
    then adds into the source's part, which overlaps it. It added first and cleared after,
    losing what the overlap received (fuzz seed 2634214510371: a quarter of a gradient
    through max's tied elements)."""
    x = np.array([0.5, -0.3, 0.7, 1.1, -0.4])
    same(compiled(fn, backend)(x), fn(x.copy()))
    g = ac.grad(compiled(fn, backend))(x)
    eps = 1e-6
    fd = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
