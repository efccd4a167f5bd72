"""Random-program fuzzer: whole generated modules (fuzzgen.py) run as plain Python, on the
reference interpreter, the Python backend and the LLVM backend, must agree exactly.

Agreement: the same result (floats bit for bit, NaN equal to NaN, -0.0 apart from 0.0, the
same Python/numpy scalar types, arrays with equal dtype, shape and elements), the same
contents of the array arguments afterwards (functions write into them), or the same exception
type. The oracle is the program run by CPython, except where compiled code is specified to
raise instead: a Python int leaving int64 (OverflowError; returning CPython's big int is fine
too) and a float power with a complex result (ValueError). A located CompileError is a refusal,
recorded but not a failure; an unlocated one, an InternalError or any other exception type is.
One allowance: the LLVM backend calls libm where numpy has its own SIMD transcendental
functions, so programs using np.sin/np.exp/np.tanh... may differ there by a few ulps (noted).

Array programs (fuzzgen.ArrayGen, issue 12) are held to the same rules, arrays compared by
dtype, shape and every element, bit for bit, and numpy's ValueError for shapes that do not
broadcast or multiply is an exception type like any other. Sums are where the same operations
need not run in the same order: BLAS orders a product's terms its own way, np.dot and
np.matmul may differ from each other, and the LLVM backend's @ adds in order, while its
np.sum and np.mean add in numpy's order (adcompile/backends/llvm/pairwise.py) over the array
it holds, which is C-ordered where it computed an elementwise result into memory (numpy lays
one out in its operands' order). Rather than a tolerance, which a later comparison, floor()
or int() turns into a different result, each order has its own exact oracle: the interpreter
and the Python backend may also give the program with np.dot / .dot spelled np.matmul
(render(checked="matmul"): the compiler reads them as np.matmul), and the LLVM backend may
also give the program in its order (render(checked="seq"): @ and np.dot adding k = 0, 1, ...
from 0, np.sum and np.mean in numpy's order over a C-ordered copy of an array that is not a
view of an argument), and with np.tanh, np.sin... computed by the C library's functions as
LLVM does (numpy has SIMD code of its own, and a sum of elements that cancel turns their last
bits into a large relative difference). So a result
agrees if it is bit for bit one of the outcomes of some order of additions, and some library,
that backend is specified to use (the ulp allowance above still applies otherwise).
Gradients of array programs are compared between backends (and LLVM's value_and_grad and vjp
with the interpreter's grad) to 1e-12 of each element plus 1e-12 of the largest element of
that argument's gradient (terms that cancel leave rounding that depends on the order of
additions) plus 1e-14 of the largest argument value (where the whole gradient is terms that
cancel, BLAS's fused multiply-adds leave a product's rounding: _cancellation_floor); 1e-5
where float32 values are summed (in float32, in another order on each backend) or computed
by numpy's own float32 transcendental functions, an ulp from libm's (_gradient_rtol).

Programs returning one finite float are also differentiated: `grad` on all three backends
(equal to 1e-12), one of value_and_grad/jvp/vjp on LLVM (its value equal to numpy's or to the
LLVM function's own), and central finite differences of the Python function (checked with two
steps first, so kinks are skipped).

    python -m pytest tests/compiler/test_fuzz.py              # the fixed slice of seeds (CI: 200)
    python -m pytest tests/compiler/test_fuzz.py --full       # all 300 fixed seeds
    python -m pytest tests/compiler/test_fuzz.py --time 300   # fresh seeds for 300 s
    python -m pytest tests/compiler/test_fuzz.py --fuzz-seed 123 -s   # replay one seed

A failure prints the seed, the program (minimized by deleting statements while the failure
persists) and its arguments. Compiled code that crashes the process leaves the program it was
running in $TMPDIR/adcompile-fuzz-current.py; one that never returns is stopped by a watchdog
that prints the program and ends the process. Seeds failing through compiler bugs already
triaged (/tmp/fuzz_report.md, by class name) are listed in KNOWN and xfail strictly.
"""

import collections
import copy
import importlib.util
import itertools
import math
import os
import re
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import adcompile as ac
from adcompile.errors import CompileError, InternalError
from adcompile.ir import types as ir_types
from adcompile.ir.nodes import walk
from tests.compiler import fuzzgen
from tests.compiler.fuzzgen import F64, FLOAT, ArrayType
from tests.slices import FULL_ONLY

BACKENDS = ("interp", "python", "llvm")
SLICE = range(300)  # the fixed seeds; --time runs fresh ones
CI_SEEDS = 200  # CI runs the first 200 (~17 s on 2 cores); --full all 300
# seeds of fixed bugs and oracle allowances, replayed in CI too: det's gradient at a singular
# matrix, np.prod's order, float32 transcendental ulps in gradients (_gradient_rtol), a jvp's
# value summed in C order (_check_mode), ravel() of a strided array (a copy), the adjoint of
# tanh reading its result after an in-place write into it (a copy taken first; two seeds), an
# infinite value written into an argument the result never reads (no adjoint: was nan),
# atan2's rule squaring an integer operand near 2**62 (int64 overflow), forward mode's zero
# tangent of an np.zeros element times inf (nan where reverse mode gives 0), a reshape of an
# empty array (numpy's no-copy algorithm read past its arrays: a crash), 0 + x folded into x
# while another view of x's memory is written, numpy's order of an overlapping 1-d assignment,
# an array only compared inside a branch (its zero adjoint met arcsin's nan partial), a view
# of an array a reversed loop carries the shadow of (it had no shadow: KeyError), a folded
# int constant no float holds (the Python backend printed it through a float), a gradient of
# subnormal size finite differences read as 0 (the check's fault: it has a floor now), an
# array filled with constants in a loop (forward mode gave it a tangent of zeros, which met
# arctan2's nan partial)
FIXED = (863270560412, 863270561288, 863270560493, 863270560934, 34812473035, 34812473249,
         3806226678438, 3806226678055, 2267316895463, 2665137667466, 2619663773223,
         1270583723507, 1440600711258, 1673084427444, 3411244320428, 3411244320685,
         4217498127749, 2634214510371, 589792254069)
# seed -> the open bug class (/tmp/fuzz_report.md) that makes it fail; strict: a fix XPASSes
KNOWN = {}
# numpy's own (SIMD) transcendental functions may differ from libm's in the last bits; that
# includes ** with any exponent but an integer literal (numpy's vector pow of float32 differs
# from powf in ~20 % of elements by an ulp)
NUMPY_ULP = re.compile(r"np\.(sin|cos|tan|exp|log|log1p|expm1|tanh|sinh|cosh|log2|log10|"
                       r"arcsin|arccos|arctan|arctan2|hypot|power)\(|"
                       r"\*\*(?! *\(?-?[0-9]+\)?(?![0-9.]))")
_files = itertools.count()


# -- pytest wiring ----------------------------------------------------------------------------

def pytest_generate_tests(metafunc):
    config = metafunc.config
    if "fuzz_seed" in metafunc.fixturenames:
        replay = config.getoption("--fuzz-seed")
        if replay is not None:
            params = [replay]
        elif config.getoption("--time"):
            params = []
        else:
            params = [pytest.param(s, marks=_marks(s)) for s in (*SLICE, *FIXED)]
        metafunc.parametrize("fuzz_seed", params, ids=str)
    if "fuzz_time" in metafunc.fixturenames:
        seconds = config.getoption("--time")
        metafunc.parametrize("fuzz_time", [seconds] if seconds else [], ids=str)


def _marks(seed):
    return ([pytest.mark.xfail(strict=True, reason=KNOWN[seed])] if seed in KNOWN else []) + \
        ([FULL_ONLY] if CI_SEEDS <= seed < len(SLICE) else [])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


_minimizations_left = [3]  # per session: a regression failing many seeds stays quick


def test_fuzz_seed(fuzz_seed, workdir, request):
    replay = request.config.getoption("--fuzz-seed") is not None
    program = fuzzgen.generate(fuzz_seed)
    result = check_program(program, workdir, thorough=replay)
    if replay:
        print(program.render())
        print(result.summary())
    if result.findings:
        small = program
        if replay or (fuzz_seed not in KNOWN and _minimizations_left[0] > 0):
            _minimizations_left[0] -= 1
            small = minimize(program, result.findings[0], workdir)
        pytest.fail(describe(program, result, small), pytrace=False)


def test_fuzz_for_time(fuzz_time, workdir, capsys):
    """--time SECONDS: fresh random seeds until the time is spent; every failing seed is
    printed as found, one program per kind of failure is minimized at the end."""
    start, tried, failed, refusals = time.monotonic(), 0, [], collections.Counter()
    base = int.from_bytes(os.urandom(4), "little") * 1000
    while time.monotonic() - start < fuzz_time:
        seed = base + tried
        tried += 1
        program = fuzzgen.generate(seed)
        result = check_program(program, workdir)
        refusals.update(r.split(": ", 2)[-1][:100] for r in result.refusals)  # no file:line
        if result.findings:
            failed.append((program, result))
            with capsys.disabled():
                print(("\n" if len(failed) == 1 else "") +
                      f"fuzz seed {seed}: {result.findings[0].headline()}", flush=True)
    with capsys.disabled():
        print(f"\nfuzzed {tried} programs in {time.monotonic() - start:.0f} s: "
              f"{len(failed)} failed; refusals (located CompileErrors): "
              f"{sum(refusals.values())}" + "".join(f"\n    {n} x {text}"
                                                    for text, n in refusals.most_common(10)))
    if failed:
        pytest.fail(_time_report(failed, tried, workdir), pytrace=False)


def _time_report(failed, tried, workdir):
    """One minimized program per distinct set of failure kinds (at most 5), then the seeds."""
    kinds = {}
    for program, result in failed:
        key = frozenset(f.signature() for f in result.findings)
        kinds.setdefault(key, []).append((program, result))
    reports = [describe(p, r, minimize(p, r.findings[0], workdir, budget=30.0))
               for (p, r), *_ in list(kinds.values())[:5]]
    seeds = "\n".join(f"  {p.seed}: {r.findings[0].headline()}" for p, r in failed)
    return f"{len(failed)} of {tried} programs failed\n{seeds}\n\n" + "\n\n".join(reports)


# -- running programs -------------------------------------------------------------------------

@dataclass
class Outcome:
    value: object = None
    exc: BaseException = None
    arrays: list = field(default_factory=list)  # the array arguments after the call
    exc_type: type = None  # the exception type expected (oracle outcomes)
    why: str = "python"  # oracle outcomes: "python", "int64 overflow" or "complex power"

    def describe(self):
        if self.exc is not None or self.exc_type is not None:
            name = (self.exc_type or type(self.exc)).__name__
            text = str(self.exc).split("\n")[0][:200] if self.exc is not None else self.why
            return f"raises {name}" + (f" ({text})" if text else "")
        return f"returns {show(self.value)}"


@dataclass
class Finding:
    kind: str  # what went wrong, without values: the minimizer keeps it
    backend: str
    arg_index: int
    detail: str

    def signature(self):
        return self.kind, self.backend

    def headline(self):
        return f"{self.backend}: {self.kind} (argument set {self.arg_index})"


@dataclass
class Result:
    findings: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # accepted differences (numpy's last bits...)
    invalid: str = None  # the oracle itself failed (a minimizer candidate that broke)
    stats: collections.Counter = field(default_factory=collections.Counter)

    def summary(self):
        lines = [f.headline() + "\n    " + f.detail for f in self.findings]
        lines += ["refusal: " + r for r in self.refusals] + ["note: " + n for n in self.notes]
        return "\n".join(lines) or "all agree"


def show(value):
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)} {np.array2string(value, threshold=20)}"
    if isinstance(value, tuple):
        return "(" + ", ".join(show(v) for v in value) + ")"
    return repr(value)


def load(source, workdir, stem):
    """Write `source` to a real file (the compiler reads its functions' source) and import."""
    path = workdir / f"{stem}_{next(_files)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(*args)
        except Exception as e:  # noqa: BLE001 - every exception is an outcome to compare
            return Outcome(exc=e, arrays=_arrays(args))
    return Outcome(value=value, arrays=_arrays(args))


def _arrays(args):
    return [a for a in args if isinstance(a, np.ndarray)]


def fresh(arg_set):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fuzzgen.make_args(arg_set)


def oracle(plain, checked, arg_set):
    """The acceptable outcomes: CPython's, an OverflowError wherever a Python int left int64
    (with the array arguments as they were there), and ValueError instead of a complex power.
    `checked` is the checked rendering's module; without `plain`, its outcome is CPython's
    (they differ only where a power is complex)."""
    clean = run(plain, fresh(arg_set)) if plain is not None else None
    args = fresh(arg_set)
    checked._ARRAYS[:] = _arrays(args)
    checked._OVERFLOWS.clear()
    strict = run(checked.program, args)
    outcomes = [Outcome(exc_type=OverflowError, arrays=arrays, why="int64 overflow")
                for arrays in checked._OVERFLOWS]
    if type(strict.exc).__name__ == "ComplexResult":
        return outcomes + [Outcome(exc_type=ValueError, arrays=strict.arrays,
                                   why="complex power")]
    return [_expect(clean or strict)] + outcomes


def _expect(outcome):
    if outcome.exc is not None:
        outcome.exc_type = type(outcome.exc)
    return outcome


# -- comparing --------------------------------------------------------------------------------

def same(got, expected, rel=0.0):
    """Equal results: same types all the way down, floats equal bit for bit (NaNs equal to
    each other) or, with rel > 0, within that relative difference."""
    if type(got) is not type(expected):
        return False
    if isinstance(expected, tuple):
        return len(got) == len(expected) and all(same(g, e, rel) for g, e in zip(got,
                                                                                   expected))
    if isinstance(expected, np.ndarray):
        return got.dtype == expected.dtype and got.shape == expected.shape and \
            _equal_elements(got, expected, rel)
    if isinstance(expected, (float, np.floating)):
        return _equal_elements(np.asarray(got), np.asarray(expected), rel)
    return got == expected


def _equal_elements(got, expected, rel):
    if got.dtype.kind != "f":
        return bool(np.array_equal(got, expected))
    nan = np.isnan(expected)
    if not np.array_equal(np.isnan(got), nan):
        return False
    g, e = got[~nan], expected[~nan]
    if rel:
        with np.errstate(all="ignore"):
            return bool(np.all((g == e) | (np.abs(g - e) <= rel * np.abs(e))))
    return bool(np.array_equal(g, e) and np.array_equal(np.signbit(g), np.signbit(e)))


def agrees(got, expected, rel=0.0):
    if expected.exc_type is not None:
        if type(got.exc) is not expected.exc_type:
            return False
    elif got.exc is not None or not same(got.value, expected.value, rel):
        return False
    return len(got.arrays) == len(expected.arrays) and all(
        same(g, e, rel) for g, e in zip(got.arrays, expected.arrays))


def classify(got, expected):
    """What kind of disagreement (the minimizer keeps the kind while it deletes)."""
    exp = next((e for e in expected if e.exc_type is None), expected[0])
    if got.exc is not None and any(type(got.exc) is e.exc_type for e in expected):
        exp = next(e for e in expected if type(got.exc) is e.exc_type)
    if isinstance(got.exc, InternalError):
        return "InternalError"
    if got.exc is not None and exp.exc_type is None:
        return f"raises {type(got.exc).__name__}, Python returns"
    if got.exc is None and exp.exc_type is not None:
        return f"returns, Python raises {exp.exc_type.__name__}"
    if got.exc is not None:
        return f"raises {type(got.exc).__name__}, Python raises {exp.exc_type.__name__}"
    if not same(got.value, exp.value):
        if _types(got.value) != _types(exp.value):
            return "wrong result type"
        return "wrong result value"
    return "array arguments differ afterwards"


def _types(value):
    if isinstance(value, tuple):
        return tuple(_types(v) for v in value)
    return type(value), getattr(value, "dtype", None)


# -- checking one program ---------------------------------------------------------------------

CURRENT = Path(tempfile.gettempdir()) / "adcompile-fuzz-current.py"


def check_program(program, workdir, backends=BACKENDS, grads=True, thorough=True):
    """Run `program` everywhere on each of its argument sets and collect the disagreements:
    results, then (grads) gradients and one of value_and_grad/jvp/vjp. Each derivative is a
    compilation: unless `thorough` (the fixed slice, to keep its time), the second is checked
    for every third seed only (every ninth array program: an array kernel takes about twice
    as long to compile), and programs of more than GRAD_IR_LIMIT IR ops (an operation on
    arrays counting ARRAY_OP_SIZE) get no derivatives.
    The program is also written to CURRENT first: if compiled code crashes the process, that
    file says which program it was."""
    CURRENT.write_text(f"# fuzz seed {program.seed}: the program test_fuzz.py was running\n"
                       + program.render() + "\nARG_SETS = [\n" + "".join(
                           "    [" + ", ".join(a.source() for a in args) + "],\n"
                           for args in program.arg_sets) + "]\n")
    with Watchdog(program):
        return _check_program(program, workdir, backends, grads, thorough)


class Watchdog:
    """Compiled code cannot be interrupted (it runs without the GIL): a program still running
    after `seconds` prints its seed and source and ends the process."""

    def __init__(self, program, seconds=120.0):
        self.program = program
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True

    def __enter__(self):
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()

    def _expire(self):
        sys.__stderr__.write(f"\nfuzz seed {self.program.seed} still runs after "
                             f"{self.timer.interval:.0f} s (an endless loop?); ending the "
                             f"process. The program:\n{self.program.render()}\n")
        sys.__stderr__.flush()
        os._exit(3)


def _check_program(program, workdir, backends, grads, thorough):
    result = Result()
    try:
        plain = load(program.render(), workdir, f"fz{program.seed}").program
        checked = load(program.render(checked=True), workdir, f"fzc{program.seed}")
        sequential = load(program.render(checked="seq"), workdir, f"fzs{program.seed}") \
            if program.reorders() or fuzzgen.LIBM_CALL.search(program.render()) else None
        matmul = load(program.render(checked="matmul"), workdir, f"fzm{program.seed}") \
            if program.respells() else None
    except SyntaxError as e:
        result.invalid = f"SyntaxError: {e}"
        return result
    compiled = {}
    for backend in backends:
        try:
            compiled[backend] = ac.adcompile(plain, backend=backend,
                                             verify=backend == "interp")
        except Exception as e:  # noqa: BLE001
            _compile_failure(result, backend, e)
    # numpy's own transcendental functions may differ from libm's in the last bits
    ulp_tolerance = 0.0 if not NUMPY_ULP.search(program.render()) else \
        4 * float(np.finfo(np.float32 if program.uses_float32() else np.float64).eps)
    for k, arg_set in enumerate(program.arg_sets):
        expected = oracle(plain, checked, arg_set)
        if isinstance(expected[0].exc, (NameError, SyntaxError)):
            result.invalid = f"Python raises {expected[0].exc!r}"
            return result
        first = expected[0]
        result.stats["Python " + (f"raises {first.exc_type.__name__}" if first.exc_type
                                  else "returns")] += 1
        llvm_values = []  # the values a derivative program on LLVM may compute
        for backend, fn in list(compiled.items()):
            got = run(fn, fresh(arg_set))
            accepted = expected
            if backend != "llvm" and matmul is not None:  # np.dot read as np.matmul
                accepted = expected + oracle(None, matmul, arg_set)
            if backend == "llvm" and sequential is not None:  # sums in LLVM's order
                accepted = expected + oracle(None, sequential, arg_set)
                if not any(agrees(got, e) for e in expected) and \
                        any(agrees(got, e) for e in accepted):
                    result.stats["llvm agrees with its order of sums only"] += 1
            _compare(result, backend, k, got, accepted, ulp_tolerance)
            if backend == "llvm":  # its own, and its oracles' (sums in its order)
                llvm_values = [got.value] + [e.value for e in accepted if e.exc_type is None]
            if isinstance(got.exc, (CompileError, InternalError)):
                del compiled[backend]  # the other sets have the same types: the same error
        if grads and len(compiled) == len(BACKENDS):
            check_gradients(result, program, checked, compiled, k, expected, thorough,
                            (llvm_values, ulp_tolerance))
    return result


def _compile_failure(result, backend, e):
    if isinstance(e, CompileError) and e.line is not None:
        result.refusals.append(f"{backend}: {str(e).splitlines()[0]}")
    else:
        result.findings.append(Finding(f"decoration raises {type(e).__name__}", backend, -1,
                                       repr(e)))


def _compare(result, backend, k, got, expected, ulp_tolerance):
    if isinstance(got.exc, CompileError) and got.exc.line is not None:
        result.refusals.append(f"{backend}: {str(got.exc).splitlines()[0]}")
        return
    if any(agrees(got, e) for e in expected):
        return
    if backend == "llvm" and ulp_tolerance and any(agrees(got, e, ulp_tolerance)
                                                   for e in expected):
        result.notes.append(f"llvm: last-bit difference from numpy's functions (set {k})")
        return
    detail = f"Python {' or '.join(e.describe() for e in expected)}; {backend} " \
             f"{got.describe()}"
    if got.exc is None and expected[0].exc_type is None and same(got.value, expected[0].value):
        detail += "; arrays after: " + ", ".join(show(a) for a in got.arrays) + " vs " + \
            ", ".join(show(a) for a in expected[0].arrays)
    result.findings.append(Finding(classify(got, expected), backend, k, detail))


# -- gradients --------------------------------------------------------------------------------

def differentiable(program):
    """Indices of the arguments to differentiate: float64 scalars and float64 arrays that the
    program does not write into."""
    def wanted(i, t):
        if isinstance(t, ArrayType):
            return t.dtype == F64 and i not in program.main.writes
        return t in (FLOAT, F64)

    return tuple(i for i, t in enumerate(program.param_types()) if wanted(i, t))


def check_gradients(result, program, checked, compiled, k, expected, thorough=True,
                    llvm_values=((), 0.0)):
    argnums = differentiable(program)
    value = expected[0].value
    if not argnums or len(expected) != 1 or expected[0].exc_type is not None or \
            type(value) not in (float, np.float64) or not math.isfinite(value):
        return
    if not thorough and _ir_size(compiled["interp"], program.arg_sets[k]) > GRAD_IR_LIMIT:
        return
    arg_set = program.arg_sets[k]
    result.stats["gradients checked"] += 1
    grads = {}
    for backend, fn in compiled.items():
        got = run(_grad(fn, argnums), fresh(arg_set))
        if got.exc is not None:
            _grad_failure(result, backend, k, got.exc, "grad")
            return
        grads[backend] = got.value
    reference = grads["interp"]
    rtol = _gradient_rtol(program)
    floor = _cancellation_floor(program, arg_set)
    for backend in ("python", "llvm"):
        if not _close(grads[backend], reference, rtol, program.arrays, floor):
            result.findings.append(Finding("grad differs between backends", backend, k,
                                           f"interp {show(reference)}; {backend} "
                                           f"{show(grads[backend])}"))
    if thorough or program.seed % (9 if program.arrays else 3) == 0:
        _check_mode(result, program, compiled["llvm"], k, argnums, value, reference,
                    llvm_values, rtol, floor)
    _check_finite_differences(result, program, checked, k, argnums, value, reference)


GRAD_IR_LIMIT = 200  # IR ops; the slice differentiates smaller programs only (time)
ARRAY_OP_SIZE = 8  # an operation on arrays counts as this many (its loops take long to compile)
_GRADS = {}


def _ir_size(fn, arg_set):
    return sum(ARRAY_OP_SIZE if _on_arrays(op) else 1
               for op in walk(fn.specialize(*fresh(arg_set)).ir.body))


def _on_arrays(op):
    if op.prim in ("load", "store"):
        return False
    return any(isinstance(v.type, ir_types.Array) for v in list(op.results) + list(op.operands))


def _grad(fn, argnums):
    """One grad object per compiled function (its programs are cached on it)."""
    key = (id(fn), argnums)
    if key not in _GRADS or _GRADS[key][0] is not fn:
        _GRADS.clear()  # only the program being checked is kept alive
        _GRADS[key] = (fn, ac.grad(fn, argnums=argnums))
    return _GRADS[key][1]


def _grad_failure(result, backend, k, exc, what):
    if isinstance(exc, CompileError) and exc.line is not None:
        result.refusals.append(f"{backend} {what}: {str(exc).splitlines()[0]}")
    else:
        result.findings.append(Finding(f"{what} raises {type(exc).__name__}", backend, k,
                                       f"{what} raises {exc!r} where the function returns"))


def _gradient_rtol(program):
    """How closely the backends' gradients agree: 1e-12, but 1e-5 where float32 values are
    rounded differently on LLVM and carried into the gradient: float32 sums in another order
    (LLVM's @ adds in order, numpy's BLAS does not), and numpy's own float32 transcendental
    functions (NUMPY_ULP: np.sinh, and np.log in np.power's derivative) where LLVM calls
    libm's, an ulp (6e-8) apart (seeds 863270560493, 863270560934)."""
    if program.uses_float32() and (program.reorders() or NUMPY_ULP.search(program.render())):
        return 1e-5
    return 1e-12


def _cancellation_floor(program, arg_set):
    """Array programs: an absolute difference the backends' gradients may show where every
    term cancels. d det(v v^T)/dv is 0, and the cofactor matrix times v is 0 in exact
    arithmetic; numpy's BLAS computes such a small product with fused multiply-adds (leaving
    one product's rounding, 1e-16 of its size) where the LLVM backend's loops round each
    product and cancel exactly, and no element of the gradient is large enough for the
    `scaled` bound. The terms are products of the arguments' values: the floor is 1e-14 of
    the largest argument value (at least 1), a few ulps of such a product."""
    if not program.arrays:
        return 0.0
    largest = 1.0
    for a in fresh(arg_set):
        v = np.abs(np.asarray(a)).ravel() if np.asarray(a).dtype.kind == "f" else np.zeros(0)
        v = v[np.isfinite(v)]
        largest = max(largest, float(v.max()) if v.size else 0.0)
    return 1e-14 * largest


def _close(got, expected, rtol, scaled=False, floor=0.0):
    """Equal to rtol; `scaled` (array programs): an array's elements to rtol of its largest
    finite element too, for the terms that cancel (d/dx of x[::-1] / x in the middle) in
    another order of additions; and to `floor` (_cancellation_floor)."""
    if isinstance(expected, tuple):
        return isinstance(got, tuple) and len(got) == len(expected) and all(
            _close(g, e, rtol, scaled, floor) for g, e in zip(got, expected))
    g, e = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if g.shape != e.shape or not np.array_equal(np.isnan(g), np.isnan(e)):
        return False
    ok = ~np.isnan(e)
    with np.errstate(all="ignore"):
        bound = rtol * np.abs(e[ok]) + floor
        finite = np.abs(e[ok & np.isfinite(e)])
        if scaled and finite.size:
            bound = bound + rtol * finite.max()
        return bool(np.all((g[ok] == e[ok]) | (np.abs(g[ok] - e[ok]) <= bound)))


def _check_mode(result, program, fn, k, argnums, value, grads, llvm_values=((), 0.0),
                rtol=1e-12, floor=0.0):
    """One of value_and_grad / jvp / vjp (by seed) on LLVM against grad (the interpreter's:
    to the tolerance of grad on LLVM) and the value: numpy's, the LLVM function's own, or
    one its oracles allow (llvm_values: those values and the ulp tolerance of numpy's
    functions; the derivative program may compute into memory, so sum in C order, what the
    function fused: seed 34812473035)."""
    mode = ("value_and_grad", "jvp", "vjp")[program.seed // 3 % 3]
    args = fresh(program.arg_sets[k])
    if mode == "vjp" and program.main.writes:
        mode = "value_and_grad"  # vjp differentiates every float argument, written ones too
    try:
        with np.errstate(all="ignore"):
            if mode == "value_and_grad":
                out, derivative = ac.value_and_grad(fn, argnums=argnums)(*args)
                ok = _close(derivative, grads, rtol, program.arrays, floor)
            elif mode == "vjp":
                out, pullback = ac.vjp(fn, *args)
                cotangents = pullback(1.0)
                ok = _close(tuple(cotangents[i] for i in argnums), grads, rtol,
                            program.arrays, floor)
            else:
                out, ok = _check_jvp(fn, program, args, argnums, grads)
    except Exception as e:  # noqa: BLE001
        _grad_failure(result, "llvm", k, e, mode)
        return
    values, rel = llvm_values
    if not same(out, value) and not any(same(out, v) or (rel and same(out, v, rel))
                                        for v in values):
        result.findings.append(Finding(f"{mode} value differs from the function's", "llvm", k,
                                       f"{show(out)} vs {show(value)}"))
    elif not ok:
        result.findings.append(Finding(f"{mode} differs from grad", "llvm", k,
                                       f"grad {show(grads)}"))


def _check_jvp(fn, program, args, argnums, grads):
    rng = np.random.default_rng(program.seed)
    tangents = [None] * len(args)
    expected = 0.0
    scale = 0.0
    for i, g in zip(argnums, grads):
        t = rng.uniform(-1, 1, np.shape(args[i]))
        tangents[i] = t if isinstance(args[i], np.ndarray) else type(args[i])(t)
        expected += float(np.sum(np.asarray(g) * t))
        scale += float(np.sum(np.abs(np.asarray(g) * t)))
    out, tangent = ac.jvp(fn, args, tangents)
    if not math.isfinite(scale):
        return out, True
    if math.isnan(float(tangent)) and not all(np.all(np.isfinite(a)) for a in args
                                              if isinstance(a, (float, np.ndarray))):
        return out, True  # forward mode's 0 * inf (a zero tangent through an infinite
        # partial) is nan where reverse mode adds nothing; JAX does the same
    if program.uses_float32():  # float32 values carry float32 tangents: rounded terms
        return out, abs(float(tangent) - expected) <= 1e-5 * (scale + 1 + abs(float(out)))
    # terms that cancel (d/dx of -x / x) leave rounding: a floor relative to the tangents
    floor = 1e-12 * sum(float(np.sum(np.abs(tangents[i]))) for i in argnums) * (
        1 + abs(float(out)))
    return out, abs(float(tangent) - expected) <= 1e-10 * scale + floor + 1e-300


def _check_finite_differences(result, program, checked, k, argnums, value, grads):
    """Central differences of the Python function against the gradient. Where float values
    are rounded (floor, //, int(), float32...) a disagreement is only a note: steps finer than
    the difference's (x * (1e20 // x)) make the gradient right and the difference wrong."""
    rng = np.random.default_rng(program.seed * 7 + k)
    rounds = program.rounds_floats()
    for i, g in zip(argnums, grads):
        arg = program.arg_sets[k][i]
        coordinates = [None] if not isinstance(arg.ty, ArrayType) else \
            [tuple(c) for c in rng.permutation(list(np.ndindex(*arg.value[0])))[:4]]
        for c in coordinates:
            ad = float(g if c is None else np.asarray(g)[c])
            fd = _finite_difference(checked, program.arg_sets[k], i, c)
            if fd is None:
                continue
            estimate, noise = fd
            result.stats["finite differences compared"] += 1
            # (1e-300: differences cannot see a derivative of subnormal size, 5e-324 * x)
            if abs(ad - estimate) <= 1e-4 * max(abs(ad), abs(estimate)) + 1e3 * noise + 1e-300:
                continue
            where = f"argument {i}" + (f" element {c}" if c is not None else "")
            text = f"{where}: grad {ad!r}, finite differences {estimate!r}"
            if rounds:
                result.notes.append("inconclusive finite differences (rounding): " + text)
            elif math.isnan(ad) and _non_finite_inside(checked, program.arg_sets[k]):
                # a zero cotangent times an infinite or NaN partial (0 * nan): the chain rule
                # gives NaN there, as JAX and PyTorch do, where the function is smooth
                result.notes.append("NaN gradient from a non-finite partial: " + text)
            else:
                result.findings.append(Finding("grad disagrees with finite differences",
                                               "llvm", k, text))


def _finite_difference(checked, arg_set, i, c):
    """A central difference whose two step sizes agree, with its rounding noise; None where the
    function is not smooth (or not finite) near the point."""
    x0 = float(_coordinate(fresh(arg_set)[i], c))
    if not math.isfinite(x0) or abs(x0) > 1e8:
        return None
    h = 1e-4 * max(1.0, abs(x0))
    estimates = []
    for step in (h, h / 8):
        values = [_evaluate(checked, arg_set, i, c, x0 + s) for s in (step, -step)]
        if None in values:
            return None
        noise = 1e-15 * max(abs(v) for v in values) / step
        estimates.append(((values[0] - values[1]) / (2 * step), noise))
    (coarse, _), (fine, noise) = estimates
    if not math.isfinite(coarse - fine) or \
            abs(coarse - fine) > 1e-4 * max(abs(coarse), abs(fine)) + 1e2 * noise:
        return None
    return fine, noise


def _coordinate(arg, c):
    return arg if c is None else arg[c]


def _non_finite_inside(checked, arg_set):
    """Whether the function reads or computes an infinity or a NaN on the way (an argument
    holding one, or numpy's invalid, divide-by-zero or overflow flags) at these arguments:
    np.prod of [0.5, inf] is inf without a flag, and its partial for 0.5 is infinite. A
    subnormal argument counts too: x / x is 1 at x = 5e-324, but its partials 1/x and x/x**2
    overflow (inf - inf is NaN, in JAX and PyTorch as here)."""
    args = fresh(arg_set)
    floats = [np.asarray(a) for a in args if np.asarray(a).dtype.kind == "f"]
    if any(not np.all(np.isfinite(a)) for a in floats):
        return True
    if any(np.any((a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)) for a in floats):
        return True
    checked._ARRAYS[:] = _arrays(args)
    with np.errstate(invalid="raise", divide="raise", over="raise"):
        try:
            checked.program(*args)
        except FloatingPointError:
            return True
        except Exception:  # noqa: BLE001 (its outcome was compared already)
            return False
    return False


def _evaluate(checked, arg_set, i, c, x):
    args = fresh(arg_set)
    if c is None:
        args[i] = type(args[i])(x)
    else:
        args[i][c] = x
    checked._ARRAYS[:] = _arrays(args)
    out = run(checked.program, args)
    if out.exc is not None or type(out.value) not in (float, np.float64) or \
            not math.isfinite(out.value):
        return None
    return float(out.value)


# -- minimizing and reporting -----------------------------------------------------------------

def minimize(program, finding, workdir, budget=40.0):
    """Delete statements (and unwrap ifs) while a finding of the same kind and backend stays;
    only the failing argument set is kept."""
    small = copy.deepcopy(program)
    if finding.arg_index >= 0:
        small.arg_sets = [program.arg_sets[finding.arg_index]]
    deadline = time.monotonic() + budget
    changed = True
    while changed and time.monotonic() < deadline:
        changed = False
        for path in reversed(small.locations()):
            if time.monotonic() > deadline:
                break
            for candidate in _candidates(small, path):
                if _reproduces(candidate, finding, workdir):
                    small, changed = candidate, True
                    break
        for h in reversed(range(len(small.helpers))):
            candidate = copy.deepcopy(small)
            del candidate.helpers[h]
            if _reproduces(candidate, finding, workdir):
                small, changed = candidate, True
    return small


def _candidates(program, path):
    yield program.without(path)
    stmts, index = program._resolve(path)
    if isinstance(stmts[index], fuzzgen.If):
        for b, block in enumerate(stmts[index].blocks()):
            if block:
                yield program.unwrapped(path, b)


def _reproduces(candidate, finding, workdir):
    kind, backend = finding.signature()
    cross = "grad" in kind or "jvp" in kind or "vjp" in kind
    try:
        result = check_program(candidate, workdir, BACKENDS if cross else (backend,),
                               grads=cross)
    except Exception:  # noqa: BLE001 - a broken candidate is just not a reproducer
        return False
    return result.invalid is None and any(f.signature() == finding.signature()
                                          for f in result.findings)


def describe(program, result, small):
    """The failure message: each kind of finding once, the (minimized) program, its
    arguments and how to replay it."""
    lines = [f"fuzz seed {program.seed}: " + result.findings[0].headline()]
    seen = {}
    for f in result.findings:
        seen.setdefault(f.signature(), []).append(f)
    for group in seen.values():
        f = group[0]
        also = sorted({g.arg_index for g in group[1:]} - {f.arg_index})
        lines.append("  " + f.headline() + (f" (also sets {also})" if also else "") +
                     "\n      " + f.detail)
    minimized = small is not program
    title = "minimized program" if minimized else "program (not minimized: replay the seed)"
    lines += ["", f"{title} ({small.statement_count()} of {program.statement_count()} "
                  f"statements):", small.render()]
    k = 0 if minimized else max(result.findings[0].arg_index, 0)
    lines += ["arguments:", "    args = ["] + \
        [f"        {a.source()}," for a in small.arg_sets[k]] + ["    ]"]
    lines += [f"replay: python -m pytest {__file__} --fuzz-seed {program.seed} -s"]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tests.compiler.test_fuzz SEED: print one program
    print(fuzzgen.generate(int(sys.argv[1])).render())
