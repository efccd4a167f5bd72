"""cumsum and cumprod against PyTorch 2.13 bit for bit: PyTorch's CPU scans accumulate float32
and complex64 in double precision (float16 in float32) and round each output once, which
numpy's float32 scan does not (about 80 % of the elements of a 50 x 300 float32 cumsum
differed by an ulp); complex inputs keep their dtype (they became int64); integer and bool
inputs scan in int64. Values, dtypes and gradients, along each axis."""

import numpy as np
import pytest
import torch

import adcompile as ac

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128, torch.float16,
          torch.int32, torch.bool]


def _input(dtype, shape=(7, 40)):
    x = torch.from_numpy(np.random.default_rng(3).standard_normal(shape)) * 0.3 + 1.0
    return x.to(dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scan_bits(dtype, op, dim):
    x = _input(dtype)
    grad = dtype.is_floating_point and dtype != torch.float16 or dtype.is_complex
    xt = x.clone().requires_grad_(grad)
    xa = ac.tensor(x.numpy().copy(), requires_grad=grad)
    yt, ya = getattr(torch, op)(xt, dim), getattr(ac, op)(xa, dim)
    assert str(ya.dtype) == str(yt.dtype)
    np.testing.assert_array_equal(ya.detach().numpy(), yt.detach().numpy())
    if grad:
        g = torch.from_numpy(np.random.default_rng(4).standard_normal(tuple(x.shape))).to(dtype)
        (gt,) = torch.autograd.grad(yt, xt, g)
        (ga,) = ac.autograd.grad(ya, xa, ac.tensor(g.numpy()))
        np.testing.assert_array_equal(ga.numpy(), gt.numpy())


def test_the_fuzzers_program():
    """Eager fuzz seed 2414041590432: a float32 cumprod squared in place, then sin."""
    data = [[-1.63, -1.53, 2.95], [2.39, 2.9, 2.2]]
    out = []
    for lib in (torch, ac):
        v1 = lib.tensor(data, requires_grad=True)
        v3 = v1.cumprod(1)
        v3.mul_(v3)  # (cumprod saved its result: a backward now raises, in both)
        out.append(lib.sin(v3).detach().numpy())
    np.testing.assert_array_equal(out[1], out[0])
