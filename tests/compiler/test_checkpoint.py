"""Per-iteration checkpointing in reverse mode (adcompile/ad/checkpoint.py): the derivative
programs that store scratch arrays, recompute iterations, counters and reloads give the same
gradients, bit for bit, as the taped programs (checkpoint.ENABLED = False), on every backend,
for the corpus and for a fixed slice of the fuzzer's random programs (nested loops, while,
break); the choice is stated in the derivative source; scratch elements are not taped."""

import copy

import numpy as np
import pytest

import adcompile as ac
from adcompile.ad import checkpoint
from tests.compiler import corpus as c
from tests.compiler import fuzzgen
from tests.compiler.test_fuzz import differentiable, fresh, load
from tests.compiler.test_jvp import PARAMS
from tests.slices import sliced

BACKENDS = ["interp", "python", "llvm"]


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    # the switch is not part of the cache key: both programs are built from scratch
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")


def _gradients(fn, args, argnums, backend, enabled):
    saved = checkpoint.ENABLED
    checkpoint.ENABLED = enabled
    try:
        compiled = ac.adcompile(fn, backend=backend, verify=True)
        _, pullback = ac.vjp(compiled, *copy.deepcopy(args))
        return pullback(1.0)
    finally:
        checkpoint.ENABLED = saved


def _identical(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is b
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


SCALAR_CASES = [(fn, i, args) for fn, i, args in PARAMS
                if isinstance(fn(*copy.deepcopy(args)), (float, np.float64))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,i,args", SCALAR_CASES,
                         ids=[f"{f.__name__}-{i}" for f, i, _ in SCALAR_CASES])
def test_corpus_gradients_equal_the_taped_programs(fn, i, args, backend):
    new = _gradients(fn, args, None, backend, True)
    old = _gradients(fn, args, None, backend, False)
    assert _identical(new, old)


CHECKPOINTED = {"mixture_like": "store:", "scratch_recompute": "recompute:",
                "scratch_while": "store:", "scratch_break": "store:"}


@pytest.mark.parametrize("name,strategy", sorted(CHECKPOINTED.items()))
def test_the_choice_is_stated_in_the_source(name, strategy):
    fn, arg_sets = next((f, a) for f, a in c.CASES if f.__name__ == name)
    source = ac.grad(fn).source(*arg_sets[0])
    assert f"# {strategy}" in source


def test_scratch_elements_and_counters_are_not_taped():
    fn, arg_sets = c.mixture_like, next(a for f, a in c.CASES if f is c.mixture_like)
    source = ac.grad(fn, argnums=(0, 1)).source(*arg_sets[0])
    pushes = [line.split(".push(")[1] for line in source.splitlines() if ".push(" in line]
    # qx goes on a tape once per iteration of the component loop (a loop over its
    # elements), not one push per use inside the nested loops; xc, a cheap function of the
    # inputs, is filled again by the adjoint; `idx` is pushed once per column, not once per
    # element (its value in the element loop is recomputed)
    assert not any(p.startswith(("xc_", "qx_")) for p in pushes), pushes
    assert "qx_saved_tape.push" in source and "xc_saved" not in source
    assert sum("idx" in p for p in pushes) <= 1, pushes


def _pushes(source, name):
    """The indentation of each line of `source` pushing on `name`'s tape, and of the
    primal's loop headers, in order: [(indent, line)]."""
    return [(len(line) - len(line.lstrip()), line.strip()) for line in source.splitlines()
            if f"{name}_tape.push" in line or line.strip().startswith(("for ", "while "))]


def test_the_column_counter_is_carried_back_not_taped():
    """The triangular loop's counter (`idx`, grown by the element loop's trip count each
    column) is pushed once per component, after the column loop, not once per column: the
    reversed column loop carries it backwards from its final value."""
    fn, arg_sets = c.mixture_like, next(a for f, a in c.CASES if f is c.mixture_like)
    source = ac.grad(fn, argnums=(0, 1)).source(*arg_sets[0])
    lines = _pushes(source, "idx")
    pushes = [k for k, (_, text) in enumerate(lines) if "push" in text]
    assert len(pushes) == 1, lines
    column = next(k for k, (_, text) in enumerate(lines) if text.startswith("for c in"))
    assert pushes[0] > column and lines[pushes[0]][0] == lines[column][0], lines


@pytest.mark.parametrize("name,counter", [("scratch_while", "i"), ("scratch_break", "i"),
                                          ("series_exp", "k"), ("recurrence_break", "broke")])
def test_while_counters_are_recomputed(name, counter):
    """A while loop's counter (`k += 1`, and the counter of a range loop with break) is
    recomputed from the reversed loop's trip number, and so is the `broke` flag of a loop
    with break (true on the last trip at most: checkpoint.exit_flags); nothing is pushed per
    trip for them (with checkpointing off, it is)."""
    fn, arg_sets = next((f, a) for f, a in c.CASES if f.__name__ == name)
    assert f"{counter}_tape" not in ac.grad(fn).source(*arg_sets[0])
    saved = checkpoint.ENABLED
    checkpoint.ENABLED = False
    try:
        taped = ac.grad(ac.adcompile(fn, backend="python")).source(*arg_sets[0])
    finally:
        checkpoint.ENABLED = saved
    assert f"{counter}_tape" in taped or f"{counter}_next_tape" in taped


def test_nested_tapes_are_sized_once():
    source = ac.grad(c.mixture_like, argnums=(0, 1)).source(
        *next(a for f, a in c.CASES if f is c.mixture_like)[0])
    assert "qx_saved_tape.reserve(0," in source


SEEDS = range(60)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_programs_gradients_equal_the_taped_programs(seed, tmp_path):
    program = fuzzgen.generate(seed)
    argnums = differentiable(program)
    if not argnums:
        pytest.skip("nothing to differentiate")
    plain = load(program.render(checked=False), tmp_path, f"p{seed}").program
    arg_set = program.arg_sets[0]
    try:
        value = plain(*fresh(arg_set))
    except Exception:
        pytest.skip("the program raises on its first argument set")
    if type(value) not in (float, np.float64) or not np.isfinite(value):
        pytest.skip("not a finite float result")
    for backend in BACKENDS:
        results = []
        for enabled in (True, False):
            saved = checkpoint.ENABLED
            checkpoint.ENABLED = enabled
            try:
                g = ac.grad(ac.adcompile(plain, backend=backend), argnums=argnums)
                results.append(g(*fresh(arg_set)))
            except Exception as e:  # both programs must raise alike
                results.append(type(e))
            finally:
                checkpoint.ENABLED = saved
        assert _identical(results[0], results[1]) if not isinstance(results[0], type) \
            else results[0] is results[1]


# -- random programs of the checkpointed shape --------------------------------------------------

_EXPRS = ["x[i, j] * w[j]", "x[i, j] - w[j]", "math.sin(x[i, j]) * w[j]", "math.exp(w[j] * 0.5)",
          "x[i, j] * x[i, j] + w[j]"]
_USES = ["{a}[j] * {b}[m]", "{a}[m] * w[j]", "math.tanh({a}[j]) * {b}[m]", "{a}[j] * {a}[j]",
         "math.exp({b}[m] * 0.1) * w[m]"]
_HEADS = {"for": ["for i in range(n):"],
          "while": ["i = 0", "while i < n:"],
          "break": ["for i in range(n):"],
          "while_down": ["i = n - 1", "while i >= 0:"],
          "break_step": ["for i in range(1, n, 2):"]}
_KINDS = sorted(_HEADS)
_STEPS = {"while": ["        i += 1"], "while_down": ["        i -= 1"]}
# the triangular loop's counter: (inner range, increment)
_COUNTERS = [("range(j + 1, d)", "1"), ("range(j + 1, d, 2)", "1"), ("range(j, d)", "2")]


def scratch_program(seed):
    """A random function of the shape reverse mode checkpoints: an outer loop (for, while or
    for with break) whose body fills one or two scratch arrays with loops over their length,
    updates one of them in a triangular loop with a counter, and reads them in nested loops."""
    rng = np.random.default_rng(seed)
    kind = _KINDS[seed % len(_KINDS)]
    names = ["z0", "z1"][: 1 + int(rng.integers(2))]
    lines = ["def program(w, x, lv):", "    n, d = x.shape", "    total = 0.0"]
    lines += [f"    {a} = np.empty(d)" for a in names]
    lines += ["    " + h for h in _HEADS[kind]]
    for a in names:
        lines += ["        for j in range(d):",
                  f"            {a}[j] = {_EXPRS[int(rng.integers(len(_EXPRS)))]}"]
    a, b = names[0], names[-1]
    if rng.integers(2):
        inner, step = _COUNTERS[int(rng.integers(len(_COUNTERS)))]
        lines += ["        idx = 0", "        for j in range(d):",
                  f"            for m in {inner}:",
                  f"                {a}[m] += lv[idx % lv.shape[0]] * {b}[j]",
                  f"                idx += {step}"]
    use = _USES[int(rng.integers(len(_USES)))].format(a=a, b=b)
    lines += ["        for j in range(d):", "            for m in range(j):",
              f"                total += {use}"]
    lines += _STEPS.get(kind, [])
    if kind.startswith("break"):
        lines += ["        if total > 1.5:", "            break"]
    lines += ["    return total"]
    return "import math\nimport numpy as np\n\n\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", sliced(range(30), every=2))  # CI: the even seeds
def test_random_scratch_programs(seed, tmp_path):
    source = scratch_program(seed)
    fn = load(source, tmp_path, f"s{seed}").program
    rng = np.random.default_rng(1000 + seed)
    args = (rng.standard_normal(4) * 0.5, rng.standard_normal((5, 4)) * 0.5,
            rng.standard_normal(3) * 0.5)
    grads = {}
    for backend in BACKENDS:
        new = _gradients(fn, args, None, backend, True)
        old = _gradients(fn, args, None, backend, False)
        assert _identical(new, old), (backend, source)
        grads[backend] = new
    for backend in ("python", "llvm"):
        np.testing.assert_allclose(np.concatenate([np.ravel(g) for g in grads[backend]]),
                                   np.concatenate([np.ravel(g) for g in grads["interp"]]),
                                   rtol=1e-13, atol=1e-13)
    assert "# store:" in ac.grad(fn, argnums=(0, 1, 2)).source(*args) or \
        "# recompute:" in ac.grad(fn, argnums=(0, 1, 2)).source(*args), source


# -- the adjoint's recomputed index arithmetic and loads ----------------------------------------

def big_counter(x):
    s = 0.0
    k = -2 ** 62 - 2 ** 61
    for i in range(3):  # k // 2**62: -2, -1, 0; i * 2**62 passes 2**63 on the last trip
        s += x[k // 2 ** 62 + 2] * x[i]
        k += 2 ** 62
    return s


def big_while_counter(x):
    s = 0.0
    k = -2 ** 62 - 2 ** 61
    i = 0
    while i < 3:
        s += x[k // 2 ** 62 + 2] * x[i] * x[i]
        k += 2 ** 62
        i += 1
    return s


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [big_counter, big_while_counter])
def test_recomputed_counters_are_exact_past_the_int64_range_of_intermediates(fn, backend):
    """The adjoint recomputes a counter from the trip number (init + trip * c): the product
    may pass 2**63 where every value of the counter fits, and the result is still exact."""
    x = np.array([0.5, -1.5, 2.0])
    got = ac.grad(ac.adcompile(fn, backend=backend))(x)
    (want,) = _gradients(fn, (x,), None, "python", False)
    assert _identical(got, want)
    assert "k_tape" not in ac.grad(fn).source(x)


def out_of_range(x, n):
    s = 1.0
    for i in range(n):  # (the reversed loop pops s: it stays a loop of its own)
        s = s * x[i]
    return s


def test_the_adjoint_loads_unchecked_but_the_primal_still_raises():
    x = np.array([0.5, -1.5, 2.0])
    g = ac.grad(ac.adcompile(out_of_range))
    np.testing.assert_allclose(g(x, 3), [-3.0, 1.0, -0.75])
    with pytest.raises(IndexError):
        g(x, 4)
    ir = ac.grad(ac.adcompile(out_of_range)).ir(x, 3)
    reloads = [line for line in ir.splitlines() if "load %x" in line]
    assert any("in_bounds" in line for line in reloads) and \
        any("in_bounds" not in line for line in reloads), ir
