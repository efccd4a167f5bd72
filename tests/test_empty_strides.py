"""Strides of empty tensors against PyTorch 2.13: numpy sets every stride of an empty array to
0, PyTorch gives an empty tensor C-order strides with a size-0 dimension counting as 1 (so
(2, 0, 3) has strides (3, 3, 1)), and views permute them as for any tensor
(`runtime.ops._core.with_contiguous_strides`)."""

import pytest
import torch

import adcompile


def _grad_of_empty(L):
    x = L.zeros(2, 0, requires_grad=True)
    x.sum().backward()
    return x.grad


EMPTY = {
    "empty": lambda L: L.empty(0),
    "zeros_trailing": lambda L: L.zeros(2, 0),
    "zeros_leading": lambda L: L.zeros(0, 2),
    "zeros_middle": lambda L: L.zeros(2, 0, 3),
    "tensor_of_empty_list": lambda L: L.tensor([]),
    "tensor_of_empty_rows": lambda L: L.tensor([[], []]),
    "transpose": lambda L: L.zeros(2, 0).t(),
    "transpose_contiguous": lambda L: L.zeros(2, 0).t().contiguous(),
    "permute": lambda L: L.zeros(2, 0, 3).permute(2, 0, 1),
    "expand": lambda L: L.zeros(1, 0).expand(3, 0),
    "unsqueeze": lambda L: L.zeros(0).unsqueeze(0),
    "reshape": lambda L: L.zeros(0, 6).reshape(0, 2, 3),
    "view": lambda L: L.zeros(0, 6).view(2, 0, 3),
    "flatten": lambda L: L.zeros(2, 0, 3).flatten(),
    "narrow": lambda L: L.zeros(3, 4).narrow(1, 0, 0),
    "slice": lambda L: L.zeros(3, 4)[:, 2:2],
    "index": lambda L: L.zeros(3, 4)[L.tensor([], dtype=L.int64)],
    "ones_like_transposed": lambda L: L.ones_like(L.zeros(3, 0).t()),
    "clone_transposed": lambda L: L.zeros(3, 0).t().clone(),
    "empty_like_permuted": lambda L: L.empty_like(L.zeros(2, 0, 3).permute(2, 0, 1)),
    "sum_over_nonempty": lambda L: L.zeros(2, 0, 3).sum(2),
    "broadcast_mul": lambda L: L.zeros(0, 1) * L.zeros(1, 3),
    "cat": lambda L: L.cat([L.zeros(0, 3), L.zeros(0, 3)]),
    "stack": lambda L: L.stack([L.zeros(0), L.zeros(0)], 1),
    "mm_empty_rows": lambda L: L.mm(L.zeros(0, 2), L.zeros(2, 3)),
    "bmm_empty_batch": lambda L: L.bmm(L.zeros(0, 2, 3), L.zeros(0, 3, 4)),
    "grad_of_empty_leaf": _grad_of_empty,
}


@pytest.mark.parametrize("name", list(EMPTY))
def test_empty_tensor_strides(name):
    theirs, ours = EMPTY[name](torch), EMPTY[name](adcompile)
    assert ours.shape == theirs.shape
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
