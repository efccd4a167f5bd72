"""`x[index] = v` and `x.index_put_` where v is a view of x's own memory, against PyTorch 2.13.

PyTorch refuses a value that overlaps the target when both are dense; a strided (not dense)
view of the target passes, and its CPU index kernel then writes element by element in its
TensorIterator's order, so a value element read after the kernel wrote its memory holds the
new value (numpy's assignment reads a snapshot). The eager fuzzer found it with a permuted
view of the target as the value (`runtime.inplace_order._ordered_put`)."""

import pytest
import torch

import adcompile as ac


def _grid(L, *shape):
    n = 1
    for s in shape:
        n *= s
    return L.arange(float(n)).reshape(shape)


CASES = {
    "rows_from_transpose": lambda L, x: x.__setitem__(L.tensor([0, 2]), x.t()[:2]),
    "rows_reversed": lambda L, x: x.__setitem__(L.tensor([2, 0]), x.t()[:2]),
    "mask_rows": lambda L, x: x.__setitem__(L.tensor([True, False, True]), x.t()[1:]),
    "columns": lambda L, x: x.__setitem__((slice(None), L.tensor([1, 2])), x.t()[:, :2]),
    "list_index": lambda L, x: x.__setitem__([0, 1], x.t()[1:]),
    "broadcast_row": lambda L, x: x.__setitem__(L.tensor([1, 2, 0]), x[:, 0]),
    "strided_row": lambda L, x: x.__setitem__(L.tensor([2, 1]), x[0, ::2]),
    "two_indices": lambda L, x: x.__setitem__((L.tensor([0, 1, 2]), L.tensor([1, 2, 0])),
                                              x.t()[0]),
    "index_put_": lambda L, x: x.index_put_((L.tensor([0, 2]),), x.t()[:2]),
    "index_put_accumulate": lambda L, x: x.index_put_((L.tensor([0, 2]),), x.t()[:2],
                                                      accumulate=True),
    "accumulate_repeated": lambda L, x: x.index_put_((L.tensor([2, 2, 0]),), x.t(),
                                                     accumulate=True),
    "3d_permuted": lambda L, x: x.view(3, 3, 1).__setitem__(
        L.tensor([1, 0]), x.view(3, 3, 1).permute(1, 0, 2)[:2]),
    "non_adjacent": lambda L, x: x.view(3, 1, 3).__setitem__(
        (L.tensor([0, 2]), slice(None), L.tensor([1, 0])), x.t()[:2, :1]),
    "base_of_view": lambda L, x: x[1:].__setitem__(L.tensor([1, 0]), x.t()[:2, :3:2].t()),
    "dense_overlap_refused": lambda L, x: x.__setitem__(L.tensor([1, 0, 2]), x.t()),
}


def _outcome(L, name):
    x = _grid(L, 3, 3)
    try:
        CASES[name](L, x)
    except RuntimeError:
        return "RuntimeError"
    return x.tolist()


@pytest.mark.parametrize("name", sorted(CASES))
def test_index_put_from_a_view_of_the_target_matches_torch(name):
    assert _outcome(ac, name) == _outcome(torch, name)


def test_index_put_from_its_own_view_keeps_the_gradient_graph():
    outcomes = []
    for L in (torch, ac):
        w = _grid(L, 3, 3).requires_grad_()
        x = w * 1
        x[L.tensor([0, 2])] = x.t()[:2]
        x.pow(2).sum().backward()
        outcomes.append((x.tolist(), w.grad.tolist(), type(x.grad_fn).__name__))
    assert outcomes[0] == outcomes[1]
