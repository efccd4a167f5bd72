"""Reductions allocate their results C-contiguous as PyTorch does, whatever the input's layout
(numpy keeps the input's order): strides, is_contiguous and a later `view` against torch 2.13.
Found by the eager fuzzer (nansum and logsumexp of a permuted tensor, then view_as)."""

import numpy as np
import pytest
import torch

import adcompile as ac

REDUCTIONS = {
    "sum": lambda t, x: x.sum(-2), "sum_keepdim": lambda t, x: x.sum(1, keepdim=True),
    "nansum": lambda t, x: x.nansum(0), "mean": lambda t, x: x.mean(1),
    "prod": lambda t, x: x.prod(1), "amax": lambda t, x: x.amax(1), "amin": lambda t, x: x.amin(1),
    "max_values": lambda t, x: x.max(1)[0], "min_indices": lambda t, x: x.min(1)[1],
    "argmax": lambda t, x: x.argmax(1), "logsumexp": lambda t, x: x.logsumexp(-2),
    "logsumexp_keepdim": lambda t, x: x.logsumexp(1, keepdim=True),
    "var": lambda t, x: x.var(1), "std": lambda t, x: x.std(1), "norm": lambda t, x: x.norm(dim=1),
    "norm_p3": lambda t, x: x.norm(p=3, dim=0), "all": lambda t, x: (x > 0).all(1),
    "any": lambda t, x: (x > 0).any(1), "count_nonzero": lambda t, x: t.count_nonzero(x, 1),
    "var_mean": lambda t, x: t.var_mean(x, 1)[0], "std_mean": lambda t, x: t.std_mean(x, 1)[1],
    "vector_norm": lambda t, x: t.linalg.vector_norm(x, dim=1),
    "logcumsumexp": lambda t, x: x.logcumsumexp(1),
    "nanmean": lambda t, x: x.nanmean(1), "nanmean_all": lambda t, x: x.nanmean(),
}
PERMUTATIONS = [(2, 0, 1), (1, 2, 0), (2, 1, 0)]


@pytest.mark.parametrize("perm", PERMUTATIONS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_results_are_laid_out_as_torch(name, perm):
    data = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    fn = REDUCTIONS[name]
    want = fn(torch, torch.tensor(data, requires_grad=True).permute(*perm))
    got = fn(ac, ac.tensor(data, requires_grad=True).permute(*perm))
    assert got.stride() == want.stride() and got.is_contiguous() == want.is_contiguous()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
    assert got.view(-1).shape == want.view(-1).shape  # torch's view works, so must ours
