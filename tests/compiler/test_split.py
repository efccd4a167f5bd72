"""The split vjp program (adcompile/ad/split.py), over the corpora: for every differentiable
case of tests/compiler/array_corpus.py and tests/compiler/corpus.py, the augmented forward
half returns the primal's value, and the reverse half run on its residuals — twice, as a
backward with retain_graph does — gives the pullback program's gradients for a random
cotangent. The cases that do not split are exactly NO_SPLIT (ad/split.py's documented
exception: a loop keeping shadow arrays on its tape), so the list has to shrink as the split
grows. Python backend (the bridge's LLVM programs run in tests/test_bridge.py)."""

import copy

import numpy as np
import pytest

import adcompile as ac
from adcompile.ad.reverse import vjp_function
from adcompile.bridge import Derived
from tests.compiler import array_corpus
from tests.compiler.test_jvp import PARAMS

# loops whose reverse sweep accumulates into arrays kept on a tape (in-place writes in a
# loop, a while loop carrying an array): the bridge runs the pullback for these
NO_SPLIT = {"rk4_energy", "rk4_energy-strided", "oscillator_euler", "normalize_rows_loop",
            "accumulate_rows", "rows_plus_equal", "carry_with_while", "rows_updated_in_place",
            "rows_updated_from_copy", "gmm_by_component", "chain_ode", "chain_ode-strided"}


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


@pytest.mark.parametrize("name,fn,make,active", CASES, ids=[c[0] for c in CASES])
def test_split_matches_the_pullback(name, fn, make, active):
    cf = ac.adcompile(fn, backend="python")
    splits = vjp_function(cf.specialize(*make()).ir, active, "split") is not None
    assert splits == (name not in NO_SPLIT)
    if not splits:
        return
    result, residuals = Derived(cf, active, "forward")(*make())
    for got, want in zip(_leaves(result), _leaves(cf(*make()))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(0)
    cot = [rng.normal(size=np.shape(r)) if isinstance(r, np.ndarray) else 0.7
           for r in _leaves(result)]
    want = Derived(cf, active, "pullback")(*make(), *cot)
    reverse = Derived(cf, active, "reverse")
    for _ in range(2):  # the residuals are left as the forward made them
        got = reverse(*make(), *residuals, *cot)
        for g, w in zip(_leaves(got), _leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
