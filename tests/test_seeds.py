"""The five seed tutorials (tests/seeds/seed_NNN.py, their code as users wrote it) print the
same with adcompile standing in for torch as with PyTorch 2.13 itself.

Each script runs in a subprocess twice; stdout is compared after object addresses are
normalised. Warnings go to stderr and are not compared; exceptions are printed by type only,
since our messages are our own words.
"""

import difflib
import pathlib
import re
import subprocess
import sys

import pytest

SEEDS = sorted((pathlib.Path(__file__).parent / "seeds").glob("seed_*.py"))
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


def _run(args):
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return re.sub(r"0x[0-9a-fA-F]+", "0x?", done.stdout)


@pytest.mark.parametrize("script", SEEDS, ids=lambda p: p.stem)
def test_seed_prints_what_pytorch_prints(script):
    theirs = _run([str(script)])
    ours = _run(["-c", STAND_IN, str(script)])
    if ours != theirs:
        diff = "\n".join(difflib.unified_diff(theirs.splitlines(), ours.splitlines(),
                                              "pytorch", "adcompile", lineterm=""))
        pytest.fail(f"output differs from PyTorch:\n{diff}")
