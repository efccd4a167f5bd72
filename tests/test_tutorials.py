"""PyTorch's own autograd and nn tutorials (those that need no dataset and no GPU) print the
same under `import adcompile as torch` as under PyTorch 2.13, digit for digit.

tests/tutorials/ holds the tutorials' programs (blitz autograd, basics autogradqs, the
polynomial fits by hand, with autograd, with a custom Function, with nn, with optimizers, the
two-layer net, the dynamic net), with iteration counts cut down. All of them run in one
interpreter per library (tests/tutorials/run.py); under adcompile every `import torch...`
imports the matching `adcompile...` module, so the submodules must import as torch's do.
Object addresses are normalised; only stdout is compared.

Most tutorials print PyTorch's digits exactly (float32 sums are added in PyTorch's order,
`linspace` and `x ** 2`, `x ** 3` are computed as PyTorch computes them). Those in `DRIFTING`
go through kernels whose last bit PyTorch takes from its SIMD libraries (SLEEF's `pow` for
`x ** 4` and tensor exponents, MKL's `sqrt` inside RMSprop and Adam, SLEEF's `sin`): their text
must match exactly and every number to a relative 1e-5 (absolute 1e-6 near zero), which an ulp of drift over a few
hundred steps stays within and any real difference does not.
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
HERE = ROOT / "tests" / "tutorials"
SCRIPTS = sorted(p for p in HERE.glob("*.py") if p.name != "run.py")

DRIFTING = {"dynamic_net.py", "polynomial_custom_function.py", "polynomial_nn.py",
            "polynomial_optim.py", "two_layer_net.py"}
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch (the oracle) is not installed")


def _outputs(library):
    """{script name: its stdout} for every tutorial, run under `library`."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(HERE / "run.py"), library,
                           *map(str, SCRIPTS)], cwd=ROOT, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    text = re.sub(r"0x[0-9a-f]+", "0x?", done.stdout)
    parts = re.split(r"^=== (.*)\n", text, flags=re.M)[1:]
    found = {pathlib.Path(name).name: out for name, out in zip(parts[::2], parts[1::2])}
    return found, done.stderr


@pytest.fixture(scope="module")
def printed():
    return {lib: _outputs(lib) for lib in ("torch", "adcompile")}


@pytest.mark.parametrize("script", [pytest.param(p.name, id=p.stem) for p in SCRIPTS])
def test_tutorial_prints_what_pytorch_prints(printed, script):
    (expected, _), (actual, err) = printed["torch"], printed["adcompile"]
    assert "Traceback" not in expected[script], expected[script]
    if script in DRIFTING and _close(expected[script], actual.get(script) or ""):
        return
    if actual.get(script) != expected[script]:
        diff = "\n".join(difflib.unified_diff(expected[script].splitlines(),
                                              (actual.get(script) or "").splitlines(),
                                              "pytorch", "adcompile", lineterm=""))
        pytest.fail(f"{script} prints differently under adcompile:\n{diff}\n"
                    f"--- stderr (tail) ---\n{err[-2000:]}")


def _close(expected, actual):
    """Same text, and the same numbers up to a relative 1e-5 (absolute 1e-6 near zero,
    where fitted coefficients that should vanish are rounding noise)."""
    if _NUMBER.sub("#", expected) != _NUMBER.sub("#", actual):
        return False
    pairs = zip(_NUMBER.findall(expected), _NUMBER.findall(actual))
    return all(abs(float(a) - float(b)) <= 1e-5 * abs(float(a)) + 1e-6 for a, b in pairs)
