"""Kernels whose float32 bits depend on the CPU PyTorch runs on agree with PyTorch 2.13 on this
host: runtime/cpu_capability.py names the build of its vectorized kernels that PyTorch's
dispatch picks (its AVX-512 build on an AVX-512 CPU, its AVX2 one on an AVX2 CPU, or the one
ATEN_CPU_CAPABILITY names), and softmax / log_softmax rows of lengths around one, two and four
vectors of lanes, tanh's derivative and dot products follow it. The same checks run again in
a child process under ATEN_CPU_CAPABILITY=avx2 (PyTorch's AVX2 build on an AVX-512 CPU)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import adcompile
from runtime import cpu_capability

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/conftest.py

# around 8, 16, 32 and 64 lanes, and one or two elements
ROW_LENGTHS = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100]


def test_capability_is_pytorchs():
    assert cpu_capability.capability() == torch.backends.cpu.get_cpu_capability().lower()


def _softmaxes(lib, x, g, name):
    t = lib.tensor(x, requires_grad=True)
    y = getattr(lib, name)(t, -1)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("n", ROW_LENGTHS)
def test_softmax_rows_bits(name, n):
    """Each row's exp summed in the lanes of one vector (16 or 8), the tail added into the
    first lanes, the lanes folded; rows with a -inf among finite values included."""
    if not cpu_capability.has_fma():
        pytest.skip("PyTorch's build without vector instructions: not followed")
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((6, 5, n)) * 3).astype(np.float32)
    if n > 1:
        x[0, 0, n // 2] = -np.inf
    g = rng.standard_normal(x.shape).astype(np.float32)
    if name == "log_softmax":  # its -inf output is not a finite cotangent's partner
        x[0, 0, n // 2] = 0
    for ours, want in zip(_softmaxes(adcompile, x, g, name), _softmaxes(torch, x, g, name)):
        np.testing.assert_array_equal(ours.view(np.int32), want.view(np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_derivative_bits(dtype):
    """tanh_backward's g * (1 - t * t), 1 - t * t one fused multiply-add in PyTorch's FMA
    builds: the eager rule against PyTorch's kernel on the same t (tanh itself is MKL's)."""
    from runtime.rules import RULES, numpy_ops

    rng = np.random.default_rng(3)
    t = np.tanh(rng.standard_normal(2000) * 2).astype(dtype)
    g = rng.standard_normal(2000).astype(dtype)
    (ours,) = RULES["tanh"](numpy_ops, g, (True,), t)
    want = torch.ops.aten.tanh_backward(torch.tensor(g), torch.tensor(t)).numpy()
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 26, 1000])
def test_dot_bits(dtype, n):
    """dot is BLAS's (MKL's sdot / ddot as PyTorch calls them, strided vectors included)."""
    from runtime import mkl

    if not mkl.available():
        pytest.skip("MKL not installed: numpy's dot sums in another order")
    rng = np.random.default_rng(n)
    a = rng.standard_normal(2 * n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    ours = adcompile.dot(adcompile.tensor(a)[::2], adcompile.tensor(b)).numpy()
    want = torch.dot(torch.tensor(a)[::2], torch.tensor(b)).numpy()
    np.testing.assert_array_equal(ours, want)


_CHILD = textwrap.dedent("""
    import numpy as np, torch, adcompile
    from runtime import cpu_capability
    torch.set_num_threads(1)
    assert cpu_capability.capability() == "avx2" == torch.backends.cpu.get_cpu_capability().lower()
    from runtime.rules import flash_attention_cpu
    rng = np.random.default_rng(0)
    for n in %r:
        x = (rng.standard_normal((6, 5, n)) * 3).astype(np.float32)
        g = rng.standard_normal(x.shape).astype(np.float32)
        for name in ("softmax", "log_softmax"):
            found = []
            for lib in (adcompile, torch):
                t = lib.tensor(x, requires_grad=True)
                y = getattr(lib, name)(t, -1)
                y.backward(lib.tensor(g))
                found.append((y.detach().numpy(), t.grad.numpy()))
            for ours, want in zip(*found):
                assert (ours == want).all(), (name, n)
        p = np.abs(x) + 0.5
        ours, want = (lib.tensor(p) ** lib.tensor(x) for lib in (adcompile, torch))
        assert (ours.numpy() == want.numpy()).all(), ("pow", n)
    for keys in (7, 8, 9, 16, 17):
        q, k, v = (rng.standard_normal(s).astype(np.float32)
                   for s in ((2, 2, 9, 4), (2, 2, keys, 4), (2, 2, keys, 4)))
        if not flash_attention_cpu.applies(q, k, v, None):
            continue
        outs = [lib.nn.functional.scaled_dot_product_attention(*map(lib.tensor, (q, k, v)))
                for lib in (adcompile, torch)]
        assert (outs[0].numpy() == outs[1].numpy()).all(), ("sdpa", keys)
    print("ok")
""") % (ROW_LENGTHS,)


def test_avx2_build_bits_in_a_child_process():
    """PyTorch's AVX2 build (ATEN_CPU_CAPABILITY=avx2, which it honours on an AVX-512 CPU):
    8 lanes for softmax, log_softmax and flash attention's exp, pairs of 8 for pow."""
    if cpu_capability.capability() not in ("avx2", "avx512") or \
            os.environ.get("ATEN_CPU_CAPABILITY") not in (None, "avx2"):
        pytest.skip("PyTorch's AVX2 build cannot run here")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    run = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
