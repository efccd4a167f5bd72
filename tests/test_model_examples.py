"""The three model examples train with the same loss curves as PyTorch running the same
scripts (same manual_seed, so the same initial weights, data and shuffled batches).

Losses are float32 results of different summation orders (numpy's BLAS against PyTorch's
kernels). The LSTM and transformer agree to ~1e-6 over all 50 steps. In the CNN both
convolutions (forward, weight and bias gradients, the second one's input gradient) are
bit-equal to PyTorch's with one thread; the first value that differs at step 0 is batch norm's
output (an ulp in ~10 % of elements). Max-pooling and ReLU route a gradient by comparisons, so
now and then an ulp decides which element gets it and the curves jump apart by ~1e-5, growing
to ~1e-3 by step 50 on some seeds — as PyTorch's own curves do between 1 and 2 threads, whose
first convolution's weight gradient is summed per thread; so each script has two tolerances,
one for the first 25 steps and one for all 50. Printed learning rates must agree exactly.
"""

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# runs each script given on the command line, separating their outputs with a marker line;
# with "torch" first, real PyTorch stands in for adcompile
DRIVER = """
import runpy, sys
if sys.argv[1] == "torch":
    import torch
    sys.modules["adcompile"] = torch
for script in sys.argv[2:]:
    print("=== " + script)
    runpy.run_path(script, run_name="__main__")
"""

# script: (relative tolerance over the first 25 steps, over all 50)
EXAMPLES = {
    "cnn_train": (1e-6, 1e-3),
    "char_lstm": (1e-5, 1e-5),
    "transformer_block": (1e-5, 1e-5),
}


def _curves(lib):
    """{script name: (printed learning rates, losses)}, all scripts in one process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    scripts = [str(ROOT / "examples" / f"{name}.py") for name in sorted(EXAMPLES)]
    done = subprocess.run([sys.executable, "-c", DRIVER, lib, *scripts], capture_output=True,
                          text=True, timeout=600, env=env, cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    out = {}
    for chunk in done.stdout.split("=== ")[1:]:
        name = pathlib.Path(chunk.split("\n", 1)[0]).stem
        losses = np.array([float(v) for v in re.findall(r"loss ([0-9.]+)", chunk)])
        out[name] = (re.findall(r"lr ([0-9.]+)", chunk), losses)
    return out


@pytest.fixture(scope="module")
def curves():
    return _curves("adcompile"), _curves("torch")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_loss_curve_matches_torch(name, curves):
    (lrs, ours), (lrs_t, theirs) = curves[0][name], curves[1][name]
    early, full = EXAMPLES[name]
    assert len(ours) == len(theirs) == 50
    assert lrs == lrs_t
    np.testing.assert_allclose(ours[:25], theirs[:25], rtol=early)
    np.testing.assert_allclose(ours, theirs, rtol=full)
    assert ours[-1] < ours[0]
