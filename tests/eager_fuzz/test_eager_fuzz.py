"""The eager differential fuzzer in pytest: a fixed slice of seeds in CI, fresh seeds with
`--time SECONDS`, one seed with `--fuzz-seed N` (printed, shrunk; use -s).

    python -m pytest tests/eager_fuzz                  # the fixed slice (~300 programs)
    python -m pytest tests/eager_fuzz --time 600       # fresh seeds for ten minutes
"""

import os

import pytest

from tests.eager_fuzz import check, gen, worker
from tests.eager_fuzz.__main__ import fuzz, report

SLICE = range(300)
CHUNK = 50  # seeds per test: one test per chunk keeps the report short and the slice quick
# first seed of a chunk -> the open class that makes it fail (strict: a fix XPASSes)
KNOWN = {}


def pytest_generate_tests(metafunc):
    config = metafunc.config
    seconds = config.getoption("--time")
    replay = config.getoption("--fuzz-seed")
    if "eager_chunk" in metafunc.fixturenames:
        chunks = [] if seconds or replay is not None else \
            [range(s, min(s + CHUNK, SLICE.stop)) for s in SLICE[::CHUNK]]
        params = [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=KNOWN[c.start]))
                  if c.start in KNOWN else c for c in chunks]
        metafunc.parametrize("eager_chunk", params, ids=lambda c: f"{c.start}-{c.stop - 1}")
    if "eager_seed" in metafunc.fixturenames:
        metafunc.parametrize("eager_seed", [] if replay is None else [replay], ids=str)
    if "eager_time" in metafunc.fixturenames:
        metafunc.parametrize("eager_time", [seconds] if seconds else [], ids=str)


def test_fixed_seeds(eager_chunk):
    failed = []
    for seed in eager_chunk:
        program = gen.generate(seed)
        finding = check.check(program)
        if finding is not None:
            failed.append(check.describe(program, finding, check.shrink(program, finding, 20)))
    if failed:
        pytest.fail(f"{len(failed)} of {len(eager_chunk)} programs differ from PyTorch:\n\n"
                    + "\n\n".join(failed[:3]), pytrace=False)


def test_replay_seed(eager_seed):
    program = gen.generate(eager_seed)
    print(program.render())
    finding = check.check(program)
    if finding is not None:
        pytest.fail(check.describe(program, finding, check.shrink(program, finding)),
                    pytrace=False)


def test_fresh_seeds_for_time(eager_time, capsys):
    base = int.from_bytes(os.urandom(4), "little") * 1000
    tried, failed, crashed = fuzz(base, None, eager_time)
    with capsys.disabled():
        report(tried, failed, crashed=crashed)
    if failed or "ours" in crashed.values():
        pytest.fail(f"{len(failed)} of {tried} programs differ from PyTorch", pytrace=False)


def test_generator_is_deterministic():
    assert gen.generate(12345).render() == gen.generate(12345).render()


def test_an_oracle_crash_ends_a_worker_not_the_run():
    """PyTorch 2.13 segfaults on this seed's program: the run records it as PyTorch's crash
    and goes on with the next seed in a new worker."""
    crashing = 4234724539747
    results = dict(worker.runner(crashing, crashing + 2))
    assert results == {crashing: ("crash", "oracle"), crashing + 1: None}


def _program(*lines, tag="binary.%"):
    stmts = [gen.Stmt("finding", line, line.split(" = ")[0]) for line in lines[:-1]]
    return gen.Program(0, stmts + [gen.Stmt(tag, lines[-1], lines[-1].split(" = ")[0])])


AMPLIFIED = (  # seed 519310418743: a float32 softmax one ulp off PyTorch's, then a remainder
    "v1 = torch.tensor([[1.83, 1.37, 1.98], [-1.0, 2.18, -0.24]], dtype=torch.float64)",
    "v2 = torch.tensor([[1.54], [0.56], [-2.5]])",
    "v3 = torch.stack([v2.softmax(-2)], -1)",
    "v9 = v1 % v3",
)


def test_a_remainder_amplifying_its_operands_difference_is_allowed():
    program = _program(*AMPLIFIED)
    finding = check.compare(program, check.run(program, check.torch),
                            check.run(program, check.adcompile))
    assert finding is not None and finding.signature() == "binary.%: values"
    assert check.check(program) is None


def test_a_remainder_of_its_own_wrong_values_is_not_allowed(monkeypatch):
    """The allowance re-runs PyTorch on our operands: a wrong remainder of ours still fails."""
    from runtime.ops import special

    wrong = (lambda a, b: a - b,) + special._MODULO["remainder"][1:]
    monkeypatch.setitem(special._MODULO, "remainder", wrong)
    program = _program("x = torch.tensor([2.5, -1.0])", "y = x % 1.5")
    assert check.check(program) is not None


def test_a_comparison_near_a_tie_of_amplified_operands_is_allowed():
    """Seed 728073807325: a remainder of log_softmax results within the tolerance, then a
    comparison that flips where they sit on a tie."""
    program = _program(
        "v1 = torch.tensor([[-2.02, -1.84, -2.36], [-1.0, 2.82, 2.2]])",
        "v3 = torch.add(v1.log_softmax(-2), 2.6, alpha=-1)",
        "v7 = (v1 + v3) % v3",
        "v8 = v7 > v1", tag="compare.>")
    finding = check.compare(program, check.run(program, check.torch),
                            check.run(program, check.adcompile))
    assert finding is not None and finding.signature() == "compare.>: values"
    assert check.check(program) is None
