"""Property test: random straight-line and branching programs (with small loops) give the
same result under CPython, the reference interpreter and the Python backend."""

import importlib.util
import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adcompile import adcompile, jvp, vjp

_counter = itertools.count()
VARS = ["a", "b", "c"]


@st.composite
def expressions(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        if draw(st.booleans()):
            return draw(st.sampled_from(VARS))
        return repr(draw(st.sampled_from([0.5, 1.5, 2, 3, -1, 0.25])))
    op = draw(st.sampled_from(["+", "-", "*", "/", "min", "abs", "sin"]))
    left = draw(expressions(depth + 1))
    right = draw(expressions(depth + 1))
    if op == "/":
        return f"({left} / (1.0 + {right} * {right}))"
    if op == "min":
        return f"min({left}, {right})"
    if op == "abs":
        return f"abs({left})"
    if op == "sin":
        return f"math.sin({left})"
    return f"({left} {op} {right})"


@st.composite
def statements(draw, depth=0, indent="    "):
    kind = draw(st.sampled_from(["assign", "assign", "aug", "if", "for"] if depth < 2
                                else ["assign", "aug"]))
    target = draw(st.sampled_from(VARS))
    if kind == "assign":
        return [f"{indent}{target} = {draw(expressions())}"]
    if kind == "aug":
        return [f"{indent}{target} {draw(st.sampled_from(['+=', '-=', '*=']))} "
                f"{draw(expressions())}"]
    if kind == "if":
        cond = f"{draw(expressions())} {draw(st.sampled_from(['<', '>', '<=', '!=']))} " \
               f"{draw(expressions())}"
        lines = [f"{indent}if {cond}:"]
        lines += draw(blocks(depth + 1, indent + "    "))
        if draw(st.booleans()):
            lines += [f"{indent}else:"] + draw(blocks(depth + 1, indent + "    "))
        return lines
    n = draw(st.integers(0, 3))
    return [f"{indent}for i in range({n}):"] + draw(blocks(depth + 1, indent + "    "))


@st.composite
def blocks(draw, depth=0, indent="    "):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        lines += draw(statements(depth, indent))
    return lines


def _load(source, tmp_path):
    path = tmp_path / f"random_program_{next(_counter)}.py"
    path.write_text("import math\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


def _close(x, y):
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return x == pytest.approx(y, rel=1e-12, abs=1e-12)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=blocks(), args=st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.integers(-3, 3)))
def test_random_program_agrees_with_cpython(tmp_path, body, args):
    source = "def program(a, b, c):\n" + "\n".join(body) + "\n    return a + b + c\n"
    fn = _load(source, tmp_path)
    try:
        expected = fn(*args)
    except (ZeroDivisionError, OverflowError, ValueError):
        return
    for backend in ("interp", "python", "llvm"):
        got = adcompile(fn, backend=backend, verify=True)(*args)
        assert _close(got, expected), (backend, source, args, got, expected)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=blocks(), args=st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.integers(-3, 3)),
       directions=st.tuples(st.floats(-1, 1), st.floats(-1, 1)), cot=st.floats(-1, 1))
def test_random_program_derivatives_are_consistent(tmp_path, body, args, directions, cot):
    """<J t, c> = <t, J^T c> for random programs, and both backends give the same numbers."""
    source = "def program(a, b, c):\n" + "\n".join(body) + "\n    return a + b + c\n"
    fn = _load(source, tmp_path)
    try:
        value = fn(*args)
    except (ZeroDivisionError, OverflowError, ValueError):
        return
    if not isinstance(value, float) or not math.isfinite(value) or abs(value) > 1e6:
        return
    tangents = directions + (None,)
    results = []
    for backend in ("interp", "python", "llvm"):
        compiled = adcompile(fn, backend=backend, verify=True)
        _, value_dot = jvp(compiled, args, tangents)
        _, pullback = vjp(compiled, *args)
        grads = pullback(cot)
        results.append((value_dot, grads))
        lhs = value_dot * cot
        rhs = sum(g * t for g, t in zip(grads[:2], directions))
        assert _close(lhs, rhs) or abs(lhs - rhs) <= 1e-9 * (1 + abs(lhs)), (source, args)
    assert _close(results[0][0], results[1][0])

