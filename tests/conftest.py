"""Test-session settings: compiled code is cached in a directory of this session only, so the
tests neither depend on nor fill the user's compile cache."""

import gc
import os
import tempfile

import pytest

from tests import slices

os.environ.setdefault("ADCOMPILE_CACHE_DIR",
                      tempfile.mkdtemp(prefix="adcompile-test-cache-"))


def pytest_addoption(parser):
    group = parser.getgroup("fuzz", "random-program fuzzers (tests/compiler/test_fuzz.py, "
                                    "tests/eager_fuzz)")
    group.addoption("--time", type=float, default=None, metavar="SECONDS",
                    help="fuzz with fresh random seeds for SECONDS instead of running the "
                         "fixed slice of seeds (each fuzzer selected)")
    group.addoption("--full", action="store_true",
                    help="also run the cases CI leaves out of the large tables (tests/slices.py)")
    group.addoption("--fuzz-seed", type=int, default=None, metavar="N",
                    help="replay the fuzzer's program of seed N (prints it; use -s)")


def pytest_configure(config):
    config.addinivalue_line("markers", "full_only: a case CI skips; --full (or --time) runs it")


def pytest_collection_modifyitems(config, items):
    if slices.full(config):
        return
    skip = pytest.mark.skip(reason="CI leaves this case out (tests/slices.py); run with --full")
    for item in items:
        if item.get_closest_marker("full_only"):
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _young_heap():
    """Each test module starts with the objects earlier modules left frozen (gc.freeze), so
    the tests that call gc.collect() (every PyTorch-comparison snippet does) scan only what
    this module made, not thousands of compiled functions from before: a full collection of
    the session's heap costs about a second."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def torch_one_thread():
    """PyTorch single-threaded (the order its bit-exact kernels are followed in; MKL and
    oneDNN split work between threads otherwise), restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
