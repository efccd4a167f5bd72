"""Property test: random whole-array numpy expressions (issue 11) give numpy's values on every
backend, and the gradient of their sum equals finite differences.

A program is one expression over three arguments: x and y of broadcast-compatible shapes (1-3
dimensions, sizes 0-4; x sometimes a strided view) and w of shape (4, 3). The expression nests
+ - * /, np.maximum, np.sin, np.exp, np.tanh, np.abs, unary minus, scalar constants, slices
with steps (negative ones too), np.sum/np.mean with an axis and keepdims, and `@ w[:k]` where
the shapes fit. It is written to a real module (the compiler reads source through inspect),
as `program` and as `loss` = np.sum(program).

A program the compiler refuses is skipped and counted. While ARRAYS_LAND is False (issue 11 in
progress) any CompileError or InternalError counts as a refusal; once it is True only a located
CompileError saying "not supported" does, anything else fails, and test_arrays_are_accepted
fails if every program was refused. A wrong value or gradient fails either way.
"""

import importlib.util
import os
import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adcompile as ac
from adcompile.errors import CompileError, InternalError

# CI's number of examples; ADCOMPILE_HYPOTHESIS_FULL=1 runs twice as many
FULL = bool(os.environ.get("ADCOMPILE_HYPOTHESIS_FULL"))

# Set to True once the compiler accepts whole-array code (issue 11): refusals other than
# "not supported" then fail, and so does a run where no program compiled.
ARRAYS_LAND = True  # array programs compile: a refused example is a failure of its own kind

BACKENDS = ("interp", "python", "llvm")
MAX_DEPTH = 3
W_SHAPE = (4, 3)
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SEEN = Counter()  # "values"/"grad" -> programs checked; "refused ..." -> programs refused
REFUSALS = Counter()  # why, for the summary
_modules = itertools.count()


# -- drawing programs ---------------------------------------------------------------------------

@st.composite
def _shapes(draw):
    """The shapes of x and y: each drops some leading dimensions of a common shape and may
    have size 1 where the other has any size (numpy broadcasting)."""
    ndim = draw(st.integers(1, 3))
    full = [draw(st.integers(0, 4)) for _ in range(ndim)]

    def operand():
        kept = full[draw(st.integers(0, ndim - 1)):]
        return tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in kept)

    return operand(), operand()


def _broadcast(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


@st.composite
def _expr(draw, env, depth=0):
    """(source, shape, uses_an_argument) of a random expression over env's arguments."""
    kinds = ["binary", "binary", "unary", "slice", "reduce", "matmul"] + ["leaf"] * (depth > 0)
    kind = "leaf" if depth >= MAX_DEPTH else draw(st.sampled_from(kinds))
    if kind == "leaf":
        if draw(st.integers(0, 3)) == 0:
            return repr(draw(st.sampled_from([0.5, 2.0, -1.5, 3.0]))), (), False
        name = draw(st.sampled_from(["x", "y"]))
        return name, env[name], True
    a, shape, used = draw(_expr(env, depth + 1))
    if kind == "binary":
        b, b_shape, b_used = draw(_expr(env, depth + 1))
        out = _broadcast(shape, b_shape)
        if out is None:
            b, b_shape, b_used, out = "0.5", (), False, shape
        op = draw(st.sampled_from(["+", "-", "*", "/", "maximum"]))
        text = (f"np.maximum({a}, {b})" if op == "maximum" else
                f"({a} / (1.0 + {b} * {b}))" if op == "/" else f"({a} {op} {b})")
        return text, out, used or b_used
    if kind == "unary":
        fn = draw(st.sampled_from(["np.sin", "np.exp", "np.tanh", "np.abs", "-"]))
        return (f"(-{a})" if fn == "-" else f"{fn}({a})"), shape, used
    if not shape:  # the rest need an array
        a = draw(st.sampled_from(["x", "y"]))
        shape, used = env[a], True
    if kind == "slice":
        index = draw(st.sampled_from(["::2", "1:", "::-1", "-2::-2", "1:-1"]))
        axis = draw(st.integers(0, len(shape) - 1))
        last = 0 < axis == len(shape) - 1
        full = "..., " + index if last else ", ".join([":"] * axis + [index])
        return f"({a})[{full}]", np.zeros(shape)[_parse_index(full)].shape, used
    if kind == "reduce":
        fn = draw(st.sampled_from(["np.sum", "np.mean"]))
        axis = draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
        keepdims = draw(st.booleans())
        reduced = shape[axis] if axis is not None else int(np.prod(shape))
        if fn == "np.mean" and reduced == 0:
            fn = "np.sum"  # numpy's mean of nothing is nan with a warning
        args = a + ("" if axis is None else f", axis={axis}") + \
            (", keepdims=True" if keepdims else "")
        out = np.sum(np.zeros(shape), axis=axis, keepdims=keepdims)
        return f"{fn}({args})", np.shape(out), used
    k = shape[-1]  # matmul with the first k rows of w
    return f"({a} @ w[:{k}])", shape[:-1] + (W_SHAPE[1],), True


def _parse_index(text):
    parts = []
    for part in text.split(", "):
        if part == "...":
            parts.append(Ellipsis)
        else:
            bounds = [int(v) if v else None for v in part.split(":")]
            parts.append(slice(*bounds))
    return tuple(parts)


@st.composite
def programs(draw):
    x_shape, y_shape = draw(_shapes())
    env = {"x": x_shape, "y": y_shape}
    expr, shape, used = draw(_expr(env))
    if not used:
        expr, shape = "x", x_shape
    strided = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return expr, shape, x_shape, y_shape, strided, seed


def _arguments(x_shape, y_shape, strided, seed):
    rng = np.random.default_rng(seed)
    if strided and x_shape:
        x = rng.uniform(-1.5, 1.5, (2 * x_shape[0],) + x_shape[1:])[::-2]
    else:
        x = rng.uniform(-1.5, 1.5, x_shape)
    return x, rng.uniform(-1.5, 1.5, y_shape), rng.uniform(-1.0, 1.0, W_SHAPE)


def _load(workdir, expr, shape):
    loss = f"np.sum({expr})" if shape else expr
    source = (f"import numpy as np\n\n\ndef program(x, y, w):\n    return {expr}\n\n\n"
              f"def loss(x, y, w):\n    return {loss}\n")
    path = workdir / f"array_program_{next(_modules)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, source


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("array_programs")


# -- checking them ------------------------------------------------------------------------------

def _refused(error, check):
    """Whether `error` from compiling is a refusal to count (see the module docstring)."""
    if (isinstance(error, CompileError) and "not supported" in str(error)) or \
            (not ARRAYS_LAND and isinstance(error, (CompileError, InternalError))):
        SEEN[f"refused {check}"] += 1
        REFUSALS[getattr(error, "message", str(error))[:120]] += 1
        return True
    return False


def _close(ours, expected, what):
    expected = np.asarray(expected)
    assert np.shape(ours) == expected.shape, f"{what}: shape {np.shape(ours)}, numpy " \
                                             f"{expected.shape}"
    assert np.asarray(ours).dtype == expected.dtype, f"{what}: dtype {np.asarray(ours).dtype}"
    scale = 1.0 + float(np.max(np.abs(expected), initial=0.0))
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-10 * scale, err_msg=what)


@settings(max_examples=60 if FULL else 30, **SETTINGS)
@given(program=programs())
def test_values_match_numpy(workdir, program):
    expr, shape, x_shape, y_shape, strided, seed = program
    module, source = _load(workdir, expr, shape)
    args = _arguments(x_shape, y_shape, strided, seed)
    with np.errstate(all="ignore"):
        expected = module.program(*args)
    if not np.all(np.isfinite(expected)):
        return
    for backend in BACKENDS:
        fresh = _arguments(x_shape, y_shape, strided, seed)
        try:
            compiled = ac.adcompile(module.program, backend=backend, verify=True)
            ours = compiled(*fresh)
        except (CompileError, InternalError) as e:
            if _refused(e, "values"):
                return
            raise AssertionError(f"{backend} fails on\n{source}\n{e}") from e
        _close(ours, expected, f"{backend}, shapes x{x_shape} y{y_shape}:\n{source}")
        for before, after in zip(args, fresh):
            np.testing.assert_array_equal(after, before, err_msg=f"{backend} wrote into an "
                                                                f"argument:\n{source}")
    SEEN["values"] += 1


def _numeric_grad(fn, args, k, step):
    x = args[k]
    grad = np.zeros(x.size)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = step
        up = list(args)
        down = list(args)
        up[k] = x + e.reshape(x.shape)
        down[k] = x - e.reshape(x.shape)
        grad[j] = (fn(*up) - fn(*down)) / (2 * step)
    return grad.reshape(x.shape)


@settings(max_examples=40 if FULL else 20, **SETTINGS)
@given(program=programs())
def test_grad_of_sum_matches_finite_differences(workdir, program):
    expr, shape, x_shape, y_shape, strided, seed = program
    module, source = _load(workdir, expr, shape)
    args = _arguments(x_shape, y_shape, strided, seed)
    with np.errstate(all="ignore"):
        value = module.loss(*args)
        if not np.isfinite(value) or abs(value) > 1e6:
            return
        numeric = [_numeric_grad(module.loss, args, k, 1e-6) for k in range(3)]
        coarse = [_numeric_grad(module.loss, args, k, 1e-4) for k in range(3)]
    for fine, rough in zip(numeric, coarse):  # a kink (abs, maximum) within reach: skip
        if not np.allclose(fine, rough, rtol=1e-3, atol=1e-3):
            return
    for backend in BACKENDS:
        try:
            compiled = ac.adcompile(module.loss, backend=backend, verify=True)
            grads = ac.grad(compiled, argnums=(0, 1, 2))(*args)
        except (CompileError, InternalError) as e:
            if _refused(e, "grad"):
                return
            raise AssertionError(f"{backend} fails on\n{source}\n{e}") from e
        for k, (g, want) in enumerate(zip(grads, numeric)):
            assert np.shape(g) == args[k].shape, f"{backend}: gradient {k} has shape " \
                                                 f"{np.shape(g)}:\n{source}"
            scale = 1.0 + float(np.max(np.abs(want), initial=0.0)) + abs(float(value))
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6 * scale,
                                       err_msg=f"{backend}: gradient {k} of\n{source}")
    SEEN["grad"] += 1


def test_arrays_are_accepted():
    """Runs after the two properties (file order): some programs must have been checked."""
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(SEEN.items())) or "nothing ran"
    if REFUSALS:
        summary += "; refused because: " + "; ".join(f"{why} ({n})" for why, n in
                                                     REFUSALS.most_common(3))
    if not ARRAYS_LAND:
        pytest.skip(f"ARRAYS_LAND is False; {summary}")
    assert SEEN["values"] > 0, f"every program was refused ({summary})"
    assert SEEN["grad"] > 0, f"every gradient was refused ({summary})"
