"""CI's slice of the large case tables.

CI runs the suite on two cores in under ten minutes, so a few tables whose cases cost LLVM
compilations run every `every`-th case there; the others are collected and skipped with the
reason, and `--full` runs them (as does `--time`, the fuzzers' long mode). A case in `keep` is
always run. The slice is fixed (by position), so a failure in CI replays exactly."""

import pytest

FULL_ONLY = pytest.mark.full_only


def full(config):
    """Whether this run takes the whole tables (--full or --time)."""
    return bool(config.getoption("--full") or config.getoption("--time"))


def sliced(cases, every, keep=lambda case: False):
    """`cases` with all but every `every`-th marked to run only with --full."""
    return [case if k % every == 0 or keep(case)
            else pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=FULL_ONLY)
            for k, case in enumerate(cases)]
