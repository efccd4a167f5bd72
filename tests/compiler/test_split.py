"""The split vjp program (adcompile/ad/split.py), over the corpora: for every differentiable
case of tests/compiler/array_corpus.py and tests/compiler/corpus.py, the augmented forward
half returns the primal's value, and the reverse half run on its residuals — twice, as a
backward with retain_graph does — gives exactly the pullback program's gradients (bit for
bit) for a random cotangent, on the interpreter and the Python backend, and on LLVM for the
cases that hand shadow memory over and a few others (the bridge's other LLVM programs run
in tests/test_bridge.py). Every case splits (NO_SPLIT is empty; a case added to it must say
why), and the cases whose loops keep shadow arrays on tapes are exactly SHADOW_MEMORY: their
reverse half makes that memory again as strided views (ad/split.py's _ShadowMemory)."""

import copy

import numpy as np
import pytest

import adcompile as ac
from adcompile.ad.reverse import vjp_function
from adcompile.bridge import Derived
from adcompile.ir.nodes import walk
from tests.compiler import array_corpus
from tests.compiler.test_jvp import PARAMS
from tests.slices import FULL_ONLY

NO_SPLIT = frozenset()
# loops whose reverse sweep accumulates into arrays kept on a tape (in-place writes in a
# loop, a while loop carrying an array), and views of written arrays that a branch merges or
# a loop carries: the forward hands over where their shadows lie
SHADOW_MEMORY = {"rk4_energy", "rk4_energy-strided", "oscillator_euler", "normalize_rows_loop",
                 "accumulate_rows", "rows_plus_equal", "carry_with_while",
                 "rows_updated_in_place", "rows_updated_from_copy", "gmm_by_component",
                 "chain_ode", "chain_ode-strided", "view_carried_across_writes",
                 "view_merged_by_branch", "view_merged_by_branch-else", "view_read_in_loop",
                 "filled_in_a_loop"}
# on LLVM too (compiling three programs per case costs seconds): one of each kind of those
# (a column stored per trip, rows added into in place, a while loop carrying an array, a
# callee's slice stores inside a loop carrying an array); with --time, every case
# (test_every_case_on_llvm)
ON_LLVM = {"rk4_energy", "gmm_by_component", "carry_with_while", "rows_plus_equal",
           "accumulate_rows"}


def _float(a):
    return isinstance(a, float) or isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _cases():
    for name, fn, make, diff in array_corpus.CASES:
        if diff is not None:
            n = len(make())
            yield name, fn, make, tuple(i in diff for i in range(n))
    for fn, i, args in PARAMS:
        active = tuple(_float(a) for a in args)
        if any(active):
            yield f"{fn.__name__}-{i}", fn, lambda args=args: copy.deepcopy(args), active


CASES = list(_cases())


def _leaves(v):
    return v if isinstance(v, tuple) else (v,)


def _backends(name):
    return ("interp", "python", "llvm") if name in ON_LLVM else ("interp", "python")


RUNS = [(backend,) + case for case in CASES for backend in _backends(case[0])]


@pytest.mark.parametrize("backend,name,fn,make,active", RUNS,
                         ids=[f"{r[1]}-{r[0]}" for r in RUNS])
def test_split_matches_the_pullback(backend, name, fn, make, active):
    _check(backend, name, fn, make, active)


@FULL_ONLY
def test_every_case_on_llvm():
    """By hand (minutes): pytest tests/compiler/test_split.py --full."""
    for name, fn, make, active in CASES:
        _check("llvm", name, fn, make, active)


def _check(backend, name, fn, make, active):
    cf = ac.adcompile(fn, backend=backend)
    programs = vjp_function(cf.specialize(*make()).ir, active, "split")
    assert (programs is not None) == (name not in NO_SPLIT)
    if programs is None:
        return
    rebuilds = any(op.prim == "strided" for op in walk(programs[1].body))
    assert rebuilds == (name in SHADOW_MEMORY)
    result, residuals = Derived(cf, active, "forward")(*make())
    for got, want in zip(_leaves(result), _leaves(cf(*make()))):
        np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(0)
    cot = [rng.normal(size=np.shape(r)).astype(r.dtype) if isinstance(r, np.ndarray) else 0.7
           for r in _leaves(result)]
    want = Derived(cf, active, "pullback")(*make(), *cot)
    reverse = Derived(cf, active, "reverse")
    for _ in range(2):  # the residuals are left as the forward made them
        got = reverse(*make(), *residuals, *cot)
        for g, w in zip(_leaves(got), _leaves(want)):
            np.testing.assert_array_equal(g, w)


def test_the_llvm_cases_exist():
    names = {case[0] for case in CASES}
    assert ON_LLVM <= names and SHADOW_MEMORY <= names


@pytest.mark.parametrize("backend", ["interp", "python", "llvm"])
def test_float32_shadow_memory_numbered_in_digits(backend):
    """float32 holds integers exactly only to 2^24: its shadow memory is numbered in three
    passes of 16-bit digits. A while loop carrying 70001 float32 elements (700160 numbered
    with the alignment: two nonzero digits) checks they are put together again, bit for
    bit."""
    x = np.linspace(-1.0, 1.0, 70001).astype(np.float32)
    cf = ac.adcompile(array_corpus.carry_with_while, backend=backend)
    result, residuals = Derived(cf, (True,), "forward")(x)
    assert max(r for r in residuals if np.ndim(r) == 0) > 2**16  # (the memory's size)
    want = Derived(cf, (True,), "pullback")(x, 0.7)
    got = Derived(cf, (True,), "reverse")(x, *residuals, 0.7)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_shadow_memory_must_come_from_shadow_allocations():
    """The guard of ad/split.py: a crossing shadow whose memory an op other than a recorded
    shadow allocation made (or a parameter) could not be numbered, so the cut is refused."""
    from adcompile.ad.split import _made_in
    from adcompile.ir import types as T
    from adcompile.ir.builder import IRBuilder
    from adcompile.ir.nodes import Block, Value

    b = IRBuilder(Block())
    n = b.const(4)
    a = b.value("alloc", [n], {"dtype": "f64", "ndim": 1, "fill": 0})
    row = b.value("slice", [a, b.const(1)], {"index": (("slice", True, False, False),)})
    copied = b.value("copy", [a])
    p = Value(T.Array("f64", 1), "p")
    ops = b.block.ops
    assert _made_in(ops, [p], [row], {a.owner})
    assert not _made_in(ops, [p], [row], set())
    assert not _made_in(ops, [p], [copied], {a.owner})
    view_of_p = IRBuilder(Block()).value("transpose", [p], {"perm": (0,)})
    assert not _made_in(ops + [view_of_p.owner], [p], [view_of_p], {a.owner})
