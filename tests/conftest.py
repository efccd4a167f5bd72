"""Test-session settings: compiled code is cached in a directory of this session only, so the
tests neither depend on nor fill the user's compile cache."""

import os
import tempfile

os.environ.setdefault("ADCOMPILE_CACHE_DIR",
                      tempfile.mkdtemp(prefix="adcompile-test-cache-"))


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "random-program fuzzer (tests/compiler/test_fuzz.py)")
    group.addoption("--time", type=float, default=None, metavar="SECONDS",
                    help="fuzz the compiler with fresh random seeds for SECONDS instead of "
                         "running the fixed slice of seeds")
    group.addoption("--fuzz-seed", type=int, default=None, metavar="N",
                    help="replay the fuzzer's program of seed N (prints it; use -s)")
