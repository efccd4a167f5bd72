"""The Python backend's emitted source: names, the type of numpy calls on Python numbers, and
Python's semantics of `**`, math.pow and math.* at their edges (on the interpreter too).

- Any name works: a function named after a builtin or a helper the emitted code reads (`float`,
  `np`, `math`, `_pow`) keeps its name, and the helper is bound under another; a parameter or
  local named so is renamed only where the code reads that global.
- `fresh` hands out the same names as the quadratic probe it replaced, in amortised O(1).
- numpy calls emitted for Python-number (weak) types give Python numbers, as the IR says.
- `a ** b` of Python floats raises ValueError where CPython gives a complex number; math.pow
  raises what CPython's does; numpy scalars keep numpy's nan/inf.

Functions named after builtins are written to files in a temporary directory (adcompile reads
the source, and defining them here would shadow the builtins this module uses)."""

import importlib.util
import itertools
import math

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.python import emit

BACKENDS = ("interp", "python")

_counter = itertools.count()


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("python_backend_names")


def load(directory, source, name):
    path = directory / f"names_{next(_counter)}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


HEADER = "import math as m_\nimport numpy as n_\n\n\n"

# a function named after each global the emitted code may read; its body calls min() (float
# cast of the result), range() and math.sin, and its gradient pops an int tape (int(...));
# functions named min or range cannot call themselves (that is recursion) and use the second
NAMED = """\
def {name}(a, x):
    s = min(a, 1) * 2.0 + m_.sin(a)
    for k in range(3):
        if x[k] > 0:
            s = s + x[k] * a * k
    return s
"""
NAMED_WITHOUT_BUILTINS = """\
def {name}(a, x):
    s = a * 2.0 + m_.sin(a)
    k = 0
    while k < 3:
        if x[k] > 0:
            s = s + x[k] * a * k
        k += 1
    return s
"""


@pytest.mark.parametrize("name", ["float", "int", "bool", "range", "min", "max", "abs", "np",
                                  "math", "_erf", "_Tape", "_pow", "_float", "größe"])
def test_a_function_keeps_a_name_its_code_reads(name, directory):
    body = NAMED_WITHOUT_BUILTINS if name in ("min", "range") else NAMED
    fn = load(directory, HEADER + body.format(name=name), name)
    x = np.array([0.5, -1.0, 2.0])
    compiled = ac.adcompile(fn, backend="python")
    assert compiled(0.25, x) == fn(0.25, x)
    assert compiled.source(0.25, x).startswith(f"def {name}(a, x):")
    for backend in BACKENDS:
        g = ac.grad(ac.adcompile(fn, backend=backend))(0.25, x)
        assert type(g) is float
        assert g == pytest.approx(2.0 + math.cos(0.25) + 2.0 * 2, rel=1e-12)
    grad_source = ac.grad(compiled).source(0.25, x)
    assert grad_source.startswith(f"def {name}_grad(a, x):")


LOCALS = """\
def roles({p}, {arr}):
    {loc} = {p} * 2.0 + m_.sin({p})
    k = 0
    while k < {arr}.shape[0]:
        {loc} = {loc} + {arr}[k] * m_.tanh({loc})
        if {loc} > 1:
            {loc} = {loc} * 0.5
        k += 1
    return {loc}
"""


@pytest.mark.parametrize("p,arr,loc", [("float", "int", "bool"), ("np", "math", "range"),
                                       ("min", "max", "abs"), ("größe", "δx", "float"),
                                       ("_pow", "_erf", "_Tape")])
def test_parameters_and_locals_named_after_globals(p, arr, loc, directory):
    fn = load(directory, HEADER + LOCALS.format(p=p, arr=arr, loc=loc), "roles")
    x = np.array([0.5, -0.25, 1.5])
    for backend in BACKENDS:
        compiled = ac.adcompile(fn, backend=backend)
        assert compiled(0.375, x) == fn(0.375, x)
        eps = 1e-6
        expected = (fn(0.375 + eps, x) - fn(0.375 - eps, x)) / (2 * eps)
        assert ac.grad(compiled)(0.375, x) == pytest.approx(expected, rel=1e-6)
        ac.grad(compiled, argnums=1)(0.375, x)


def test_a_local_is_renamed_only_where_the_code_reads_that_global(directory):
    source = HEADER + "def f(float, bool):\n    int = float * bool\n    return int + 1.0\n"
    fn = load(directory, source, "f")
    text = ac.adcompile(fn, backend="python").source(2.0, 3.0)
    assert "def f(float, bool):" in text and "int = float * bool" in text
    # the gradient of int(k) ... reads float(); a parameter called float is renamed there
    source = HEADER + ("def g(float, x):\n    s = 0.0\n    for k in range(x.shape[0]):\n"
                       "        if x[k] > 0:\n            s = s + int(k) * float\n    return s\n")
    fn = load(directory, source, "g")
    x = np.array([1.0, -1.0, 2.0])
    compiled = ac.adcompile(fn, backend="python")
    assert compiled(0.5, x) == fn(0.5, x)
    assert ac.grad(compiled)(0.5, x) == 2.0


def test_a_function_named_after_a_helper_reads_it_under_another_name(directory):
    fn = load(directory, HEADER + "def np(a):\n    return a * 2.0 + n_.sin(a)\n", "np")
    text = ac.adcompile(fn, backend="python").source(0.5)
    assert "def np(a):" in text and "_np.sin(a)" in text
    fn = load(directory, HEADER + "def float(a):\n    return min(a, 1)\n", "float")
    compiled = ac.adcompile(fn, backend="python")
    assert compiled(0.5) == 0.5 and type(compiled(2.0)) is float  # not a RecursionError
    assert "_float(min(a, 1))" in compiled.source(0.5)


class _Value:
    def __init__(self, name):
        self.name, self.owner = name, None


def test_fresh_names_are_those_of_the_smallest_free_suffix():
    emitter = emit._Emitter(type("F", (), {"name": "f", "params": [], "body": None})())
    emitter.taken |= {"t_2", "x_1", "t_1_1"}
    names = [emitter.fresh(h) for h in ["t", None, "t", "t", "t_1", "t_1", "x", "x", "_x", "9",
                                        "a.b", "größe", "ﬁt", "if", "if"]]
    assert names == ["t", "t_1", "t_3", "t_4", "t_1_2", "t_1_3", "x", "x_2", "x_3", "v9",
                     "a_b", "größe", "fit", "if_1", "if_2"]


# -- numpy calls of Python numbers ------------------------------------------------------------

def abs_of(a):
    return abs(a) * 2.0 + math.fabs(a)


def sign_mix(a):
    return np.float64(a) * 2.0 + math.sin(a) * abs(a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [abs_of, sign_mix])
def test_the_gradient_of_a_python_float_function_is_a_python_float(fn, backend):
    reference = ac.grad(ac.adcompile(fn, backend="interp"))(-0.75)
    got = ac.grad(ac.adcompile(fn, backend=backend))(-0.75)
    assert type(got) is type(reference) and got == reference
    assert type(ac.grad(ac.adcompile(abs_of, backend=backend))(-0.75)) is float


def test_numpy_of_a_python_float_is_converted_back_in_the_source():
    assert "float(np.sign(a))" in ac.grad(ac.adcompile(abs_of, backend="python")).source(-0.75)


# -- ** and math.pow --------------------------------------------------------------------------

def power(a, b):
    return a ** b


def math_pow(a, b):
    return math.pow(a, b)


def np_power(a, b):
    return np.power(a, b)


def outcome(fn, *args):
    try:
        with np.errstate(all="ignore"):
            value = fn(*args)
    except (ArithmeticError, ValueError) as e:
        return "raises", type(e)
    return "value", type(value), value


POWERS = [(power, (-8.0, 1 / 3)),  # complex in CPython: ValueError (power, (-8, 0.5)), (power, (-8.0, 2.0)), (power, (-8.0, -1)),
          (power, (0.0, -1.0)), (power, (0, -1)), (power, (10.0, 400.0)), (power, (2, -1)),
          (power, (-0.0, 0.5)), (power, (-math.inf, 0.5)), (power, (-8.0, math.inf)),
          (power, (np.float64(-8.0), 1 / 3)), (power, (-8.0, np.float64(1 / 3))),
          (power, (np.float64(10.0), 400.0)), (power, (np.float32(-8.0), 0.5)),
          (math_pow, (0.0, -1.0)), (math_pow, (-8.0, 1 / 3)), (math_pow, (10.0, 400.0)),
          (math_pow, (2, 3)), (math_pow, (np.float64(-8.0), 0.5)),
          (np_power, (-8.0, 1 / 3)), (np_power, (1.5, 2.0))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,args", POWERS, ids=[f"{f.__name__}{a}" for f, a in POWERS])
def test_powers_follow_python(fn, args, backend):
    compiled = ac.adcompile(fn, backend=backend)
    expected = outcome(fn, *args)
    if expected[:2] == ("value", complex):  # compiled code does not compute complex numbers
        with pytest.raises(ValueError, match="complex number"):
            compiled(*args)
        return
    got = outcome(compiled, *args)
    assert got[:2] == expected[:2]
    if expected[0] == "value":
        np.testing.assert_equal(got[2], expected[2])


def powers(x, y):
    return x ** 2 + x ** 3.0 + 2.0 ** x + x ** -1 + x ** y + x ** 0.5


def test_only_a_power_that_may_be_complex_calls_the_helper():
    text = ac.adcompile(powers, backend="python").source(1.5, 0.25)
    for kept in ("x ** 2", "x ** 3.0", "2.0 ** x", "x ** -1", "_pow(x, y)", "_pow(x, 0.5)"):
        assert kept in text, text
    assert text.count("_pow(") == 2


# -- math.* of Python floats at the edges ------------------------------------------------------

def m_exp(a):
    return math.exp(a)


def m_sin(a):
    return math.sin(a)


def m_log(a):
    return math.log(a)


def m_sqrt(a):
    return math.sqrt(a)


def m_floor(a):
    return math.floor(a)


def m_ceil(a):
    return math.ceil(a)


def m_trunc(a):
    return math.trunc(a)


def to_int(a):
    return int(a)


def floor_plus_one(a):
    return math.floor(a) + 1


EDGES = [m_exp, m_sin, m_log, m_sqrt, m_floor, m_ceil, m_trunc, to_int, floor_plus_one]
VALUES = [0.0, -0.0, -1.0, 1000.0, 1e300, -1e300, math.inf, -math.inf, math.nan, 2.5,
          np.float64(1e300), np.float64(math.nan)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", EDGES, ids=lambda f: f.__name__)
def test_math_functions_at_the_edges_follow_python(fn, backend):
    """Python ints do not overflow on these backends (math.floor(1e300) is Python's big int);
    the LLVM backend raises OverflowError past 64 bits instead."""
    compiled = ac.adcompile(fn, backend=backend)
    for value in VALUES:
        expected, got = outcome(fn, value), outcome(compiled, value)
        assert got[:2] == expected[:2], value
        if expected[0] == "value":
            np.testing.assert_equal(got[2], expected[2])
            if isinstance(expected[2], float) and expected[2] == 0:
                assert math.copysign(1, got[2]) == math.copysign(1, expected[2])
