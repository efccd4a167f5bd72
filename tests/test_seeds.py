"""The seed tutorials print the same with adcompile standing in for torch as with PyTorch.

Each tests/seeds/seed_NNN.py holds one tutorial's code, unchanged apart from printing only
the type of expected exceptions. It runs in a subprocess twice: with the real torch
(PyTorch 2.13, the oracle) and with adcompile installed as `torch` (plus the submodules
adcompile has: nn, nn.functional, optim, autograd). Only stdout is compared, after object
addresses (`0x7f...`) are normalised to `0x?`; warnings on stderr are not compared.
"""

import difflib
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEEDS = sorted((ROOT / "tests" / "seeds").glob("seed_*.py"))

STAND_IN = """
import runpy, sys, adcompile
sys.modules["torch"] = adcompile
for name in ("nn", "nn.functional", "optim", "autograd"):
    module = adcompile
    for part in name.split("."):
        module = getattr(module, part, None)
    if module is not None:
        sys.modules["torch." + name] = module
runpy.run_path(sys.argv[1], run_name="__main__")
"""

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch (the oracle) is not installed")


def _run(*args):
    """Run python with args from the repo root; return (normalised stdout, stderr, rc)."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=120)
    return re.sub(r"0x[0-9a-f]+", "0x?", done.stdout), done.stderr, done.returncode


@pytest.mark.parametrize("script", [pytest.param(p, id=p.stem) for p in SEEDS])
def test_seed_prints_what_pytorch_prints(script):
    expected, err, rc = _run(str(script))
    assert rc == 0, f"{script.name} fails under PyTorch itself:\n{err[-3000:]}"
    actual, err, rc = _run("-c", STAND_IN, str(script))
    if actual != expected or rc != 0:
        diff = "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(),
                                              "pytorch", "adcompile", lineterm=""))
        pytest.fail(f"{script.name} prints differently under adcompile (exit code {rc}):\n"
                    f"{diff}\n--- stderr (tail) ---\n{err[-3000:]}")
