"""tensordot, inner, ger, vdot, kron, chain_matmul and linalg.multi_dot, differential against
PyTorch 2.13.

One row per use, in `tests/test_ops.py`'s format (its machinery is reused): each row runs with
`L = torch` and `L = adcompile` on identical inputs, in float64 and float32, comparing values,
dtypes, shapes, flags, grad_fn names, the whole backward graph and the leaves' gradients; a
`Const` shape is an input that does not require grad. Rows flagged D2 also compare second
derivatives. ERRORS compares exception classes of bad calls (messages are our own).
"""

import warnings

import numpy as np
import pytest
import torch

import adcompile
from difftools import assert_same_error
from test_ops import D2, TOL, Const, _assert_same, _draw, _run, _seed, compare_second_order, op

TENSORDOT = {
    "tensordot_default": op(lambda L, a, b: L.tensordot(a, b), [(3, 4, 5), (4, 5, 6)], "any", D2),
    "tensordot_int1": op(lambda L, a, b: L.tensordot(a, b, 1), [(3, 4), (4, 5)]),
    "tensordot_int0": op(lambda L, a, b: L.tensordot(a, b, 0), [(3, 2), (4,)]),
    "tensordot_0d": op(lambda L, a, b: L.tensordot(a, b, 0), [(), (3,)]),
    "tensordot_matrix_vector": op(lambda L, a, b: L.tensordot(a, b, 1), [(3, 4), (4,)]),
    "tensordot_vector_matrix": op(lambda L, a, b: L.tensordot(a, b, 1), [(4,), (4, 5)]),
    "tensordot_pair_of_lists": op(lambda L, a, b: L.tensordot(a, b, ([1, 0], [0, 1])),
                                  [(3, 4, 5), (4, 3, 2)]),
    "tensordot_list_of_lists": op(lambda L, a, b: L.tensordot(a, b, [[2, 1, 3], [1, 2, 0]]),
                                  [(3, 5, 4, 6), (6, 4, 5, 3)]),
    "tensordot_list_of_pairs": op(lambda L, a, b: L.tensordot(a, b, [(1, 0), (0, 1)]),
                                  [(3, 4), (4, 3)], "any", D2),
    "tensordot_scalar_dims": op(lambda L, a, b: L.tensordot(a, b, ([1], [0])), [(3, 4), (4, 2)]),
    "tensordot_negative_dims": op(lambda L, a, b: L.tensordot(a, b, ([-1], [-2])),
                                  [(3, 4), (4, 2)]),
    "tensordot_full_contiguous": op(lambda L, a, b: L.tensordot(a, b, 2), [(3, 4), (3, 4)], "any",
                                    D2),
    "tensordot_full_vectors": op(lambda L, a, b: L.tensordot(a, b, 1), [(4,), (4,)]),
    "tensordot_full_strided": op(lambda L, a, b: L.tensordot(a.t(), b, 2), [(4, 3), (3, 4)]),
    "tensordot_broadcast_left": op(lambda L, a, b: L.tensordot(a, b, ([1], [0])),
                                   [(3, 1), (4, 5)]),
    "tensordot_broadcast_right": op(lambda L, a, b: L.tensordot(a, b, ([1], [0])),
                                    [(3, 4), (1, 5)]),
    "tensordot_const_left": op(lambda L, a, b: L.tensordot(a, b, 1), [Const((3, 4)), (4, 5)]),
    "tensordot_const_right": op(lambda L, a, b: L.tensordot(a, b, 1), [(3, 4), Const((4, 5))]),
    "tensordot_strided_input": op(lambda L, a, b: L.tensordot(a.transpose(0, 2), b, 2),
                                  [(5, 4, 3), (4, 5, 2)]),
    "tensordot_dims_tensor_int": op(lambda L, a, b: L.tensordot(a, b, L.tensor(1)),
                                    [(3, 4), (4, 5)]),
    "tensordot_dims_bool": op(lambda L, a, b: L.tensordot(a, b, True), [(3, 4), (4, 5)]),
    "tensordot_dims_tensor_one": op(lambda L, a, b: L.tensordot(a, b, L.tensor([1])),
                                    [(3, 4), (4, 5)]),
    "tensordot_dims_tensor_pairs": op(lambda L, a, b: L.tensordot(a, b, L.tensor([[1], [0]])),
                                      [(3, 4), (4, 5)]),
}

INNER = {
    "inner_vectors": op(lambda L, a, b: L.inner(a, b), [(4,), (4,)], "any", D2),
    "inner_matrices": op(lambda L, a, b: L.inner(a, b), [(2, 3), (4, 3)], "any", D2),
    "inner_3d": op(lambda L, a, b: L.inner(a, b), [(2, 5, 3), (4, 3)]),
    "inner_vector_matrix": op(lambda L, a, b: L.inner(a, b), [(3,), (4, 3)]),
    "inner_matrix_vector": op(lambda L, a, b: L.inner(a, b), [(4, 3), (3,)]),
    "inner_scalar_left": op(lambda L, a, b: L.inner(a, b), [(), (4, 3)]),
    "inner_scalar_right": op(lambda L, a, b: L.inner(a, b), [(4, 3), ()]),
    "inner_transposed": op(lambda L, a, b: L.inner(a.t(), b), [(3, 2), (4, 3)]),
    "inner_method": op(lambda L, a, b: a.inner(b), [(2, 3), (3,)]),
    "inner_const": op(lambda L, a, b: L.inner(a, b), [Const((2, 3)), (4, 3)]),
}

OUTER = {
    "ger": op(lambda L, a, b: L.ger(a, b), [(3,), (4,)], "any", D2),
    "ger_method": op(lambda L, a, b: a.ger(b), [(3,), Const((4,))]),
    "vdot": op(lambda L, a, b: L.vdot(a, b), [(5,), (5,)], "any", D2),
    "vdot_method": op(lambda L, a, b: a.vdot(b), [(5,), (5,)]),
    "vdot_const": op(lambda L, a, b: L.vdot(a, b), [Const((5,)), (5,)]),
    "vdot_strided": op(lambda L, a, b: L.vdot(a[::2], b), [(6,), (3,)]),
    "kron_matrices": op(lambda L, a, b: L.kron(a, b), [(2, 3), (4, 5)], "any", D2),
    "kron_vectors": op(lambda L, a, b: L.kron(a, b), [(3,), (4,)]),
    "kron_mixed_ndim": op(lambda L, a, b: L.kron(a, b), [(2, 3), (4,)]),
    "kron_3d": op(lambda L, a, b: L.kron(a, b), [(2, 1, 3), (2, 2)]),
    "kron_0d": op(lambda L, a, b: L.kron(a, b), [(), (4,)]),
    "kron_method": op(lambda L, a, b: a.kron(b), [(2, 2), Const((2, 3))]),
    "kron_strided_unit": op(lambda L, a, b: L.kron(a.t(), b), [(3, 2), (1,)]),
    "kron_strided_vector": op(lambda L, a, b: L.kron(a[::2], b), [(6,), (4,)]),
}


def _chain_matmul(L, *ms, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return L.chain_matmul(*ms, **kwargs)


CHAINS = {
    "multi_dot_two": op(lambda L, a, b: L.linalg.multi_dot([a, b]), [(2, 3), (3, 4)], "any", D2),
    "multi_dot_tuple": op(lambda L, a, b: L.linalg.multi_dot((a, b)), [(2, 3), (3, 4)]),
    "multi_dot_three_bc_first": op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                               [(10, 3), (3, 40), (40, 2)], "any", D2),
    "multi_dot_three_ab_first": op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                                [(2, 40), (40, 3), (3, 10)]),
    "multi_dot_four": op(lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
                         [(10, 3), (3, 40), (40, 2), (2, 7)]),
    "multi_dot_five": op(lambda L, *ms: L.linalg.multi_dot(ms),
                         [(5, 9), (9, 2), (2, 8), (8, 3), (3, 6)]),
    "multi_dot_square_ties": op(lambda L, *ms: L.linalg.multi_dot(ms), [(3, 3)] * 4),
    "multi_dot_vectors": op(lambda L, a, b: L.linalg.multi_dot([a, b]), [(3,), (3,)]),
    "multi_dot_row_first": op(lambda L, a, b: L.linalg.multi_dot([a, b]), [(3,), (3, 4)]),
    "multi_dot_column_last": op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                                [(2, 3), (3, 4), (4,)]),
    "multi_dot_both_1d": op(lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
                            [(3,), (3, 4), (4, 5), (5,)]),
    "multi_dot_const": op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                          [(2, 3), Const((3, 4)), (4, 2)]),
    "chain_matmul_three": op(lambda L, a, b, c: _chain_matmul(L, a, b, c),
                             [(2, 3), (3, 4), (4, 5)], "any", D2),
    "chain_matmul_four": op(lambda L, *ms: _chain_matmul(L, *ms),
                            [(10, 3), (3, 40), (40, 2), (2, 7)]),
    "chain_matmul_one": op(lambda L, a: _chain_matmul(L, a), [(2, 3)]),
    "chain_matmul_one_strided": op(lambda L, a: _chain_matmul(L, a.t()), [(2, 3)]),
    "chain_matmul_empty": op(lambda L, a, b: _chain_matmul(L, a, b), [(2, 0), (0, 3)]),
}

EDGES = {
    "tensordot_empty_contracted": op(lambda L, a, b: L.tensordot(a, b, 1), [(3, 0), (0, 4)]),
    "tensordot_empty_free": op(lambda L, a, b: L.tensordot(a, b, 1), [(0, 3), (3, 4)]),
    "tensordot_empty_full": op(lambda L, a, b: L.tensordot(a, b, 1), [(0,), (0,)]),
    "tensordot_4d": op(lambda L, a, b: L.tensordot(a, b, ([3, 0], [0, 2])),
                       [(2, 3, 4, 5), (5, 3, 2)]),
    "tensordot_unit_both_sides": op(lambda L, a, b: L.tensordot(a, b, ([1], [0])),
                                    [(3, 1), (1, 5)]),
    "tensordot_unit_full": op(lambda L, a, b: L.tensordot(a, b, 2), [(3, 1), (1, 4)]),
    "inner_empty": op(lambda L, a, b: L.inner(a, b), [(2, 0), (3, 0)]),
    "vdot_empty": op(lambda L, a, b: L.vdot(a, b), [(0,), (0,)]),
    "kron_empty": op(lambda L, a, b: L.kron(a, b), [(2, 0), (3, 2)]),
    "kron_both_transposed": op(lambda L, a, b: L.kron(a.t(), b.t()), [(2, 2), (3, 2)]),
    "multi_dot_empty": op(lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                          [(2, 0), (0, 3), (3, 2)]),
    "multi_dot_empty_four": op(lambda L, *ms: L.linalg.multi_dot(ms),
                               [(2, 0), (0, 3), (3, 2), (2, 2)]),
}

CASES = {**TENSORDOT, **INNER, **OUTER, **CHAINS, **EDGES}


def _inputs(shapes, domain, dtype, seed):
    arrays = _draw(shapes, domain, np.random.default_rng(seed))
    return [(a, dtype, not isinstance(s, Const)) for a, s in zip(arrays, shapes)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_op(name, dtype):
    case = CASES[name]
    seed = _seed(name)
    inputs = _inputs(case.shapes, case.domain, dtype, seed)
    theirs = _run(torch, case.fn, inputs, seed)
    ours = _run(adcompile, case.fn, inputs, seed)
    _assert_same(ours, theirs, TOL[dtype])


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if D2 in case.flags])
def test_second_derivative(name):
    case = CASES[name]
    compare_second_order(case, _draw(case.shapes, case.domain,
                                     np.random.default_rng(_seed(name, "d2"))))


# ------------------------------------------------------------------------------------------
# integer operands (forward only), out=, the deprecation warning
# ------------------------------------------------------------------------------------------
INTEGER = {
    "tensordot": lambda L: L.tensordot(L.arange(12).reshape(3, 4), L.arange(8).reshape(4, 2), 1),
    "inner": lambda L: L.inner(L.arange(6).reshape(2, 3), L.arange(3)),
    "vdot": lambda L: L.vdot(L.arange(4), L.arange(4)),
    "kron_int_float": lambda L: L.kron(L.arange(3), L.ones(2)),
    "kron_float64_float32": lambda L: L.kron(L.ones(2, dtype=L.float64), L.ones(2)),
    "ger": lambda L: L.ger(L.arange(3), L.arange(2)),
    "multi_dot": lambda L: L.linalg.multi_dot([L.arange(6).reshape(2, 3),
                                               L.arange(6).reshape(3, 2)]),
}


@pytest.mark.parametrize("name", list(INTEGER))
def test_integer_operands(name):
    theirs, ours = INTEGER[name](torch), INTEGER[name](adcompile)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


OUT = {
    "tensordot": lambda L, o: L.tensordot(L.ones(2, 3), L.ones(3, 4), 1, out=o),
    "inner": lambda L, o: L.inner(L.ones(2, 3), L.ones(4, 3), out=o),
    "ger": lambda L, o: L.ger(L.ones(2), L.arange(4.0), out=o),
    "vdot": lambda L, o: L.vdot(L.ones(3), L.arange(3.0), out=o),
    "kron": lambda L, o: L.kron(L.ones(2, 2), L.arange(2.0), out=o),
    "multi_dot": lambda L, o: L.linalg.multi_dot([L.ones(2, 3), L.arange(6.0).view(3, 2)], out=o),
    "chain_matmul": lambda L, o: _chain_matmul(L, L.ones(2, 3), L.arange(6.0).view(3, 2), out=o),
}


@pytest.mark.parametrize("name", list(OUT))
def test_out_keyword(name):
    results = []
    for L in (torch, adcompile):
        out = L.empty(0)
        assert OUT[name](L, out) is out
        results.append(out.numpy().copy())
    np.testing.assert_array_equal(results[1], results[0])


@pytest.mark.parametrize("name", ["tensordot", "inner"])
def test_out_keyword_joins_the_graph(name):
    """Their out= copies a recorded result into `out`: out gets CopyBackwards and gradients."""
    facts = []
    for L in (torch, adcompile):
        x = L.arange(6.0).view(2, 3).requires_grad_()
        out = L.empty(0)
        call = {"tensordot": lambda: L.tensordot(x, L.ones(3, 4), 1, out=out),
                "inner": lambda: L.inner(x, L.ones(4, 3), out=out)}[name]
        assert call() is out
        (out * out).sum().backward()
        facts.append((type(out.grad_fn).__name__, out.is_leaf, x.grad.numpy().copy()))
    assert facts[1][:2] == facts[0][:2]
    np.testing.assert_allclose(facts[1][2], facts[0][2])


def test_chain_matmul_warns_deprecation_once():
    from runtime.ops import contractions

    contractions._warned_chain_matmul.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adcompile.chain_matmul(adcompile.ones(2, 2), adcompile.ones(2, 2))
        adcompile.chain_matmul(adcompile.ones(2, 2), adcompile.ones(2, 2))
    assert [w.category for w in caught] == [UserWarning]


def test_chain_matmul_of_one_matrix_is_a_contiguous_copy():
    x = adcompile.ones(3, 2).t()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = adcompile.chain_matmul(x)
    assert y.is_contiguous() and y.data_ptr() != x.data_ptr()


# ------------------------------------------------------------------------------------------
# error classes (messages deliberately differ)
# ------------------------------------------------------------------------------------------
def _o(L, *shape, dtype=None):
    return L.ones(*shape, dtype=dtype or L.float32)


ERRORS = {
    "tensordot_size_mismatch": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 5, 5), 1),
    "tensordot_negative_count": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 5), -1),
    "tensordot_count_too_large": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 5), 3),
    "tensordot_list_lengths": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 5), ([1], [0, 1])),
    "tensordot_three_lists": lambda L: L.tensordot(_o(L, 3, 3), _o(L, 3, 3),
                                                   [(1, 0), (0, 1), (0, 0)]),
    "tensordot_dtype": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 5, dtype=L.float64), 1),
    "tensordot_repeated_dim": lambda L: L.tensordot(_o(L, 3, 3), _o(L, 3, 3), ([0, 0], [0, 1])),
    "tensordot_dim_out_of_range": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 3), ([2], [0])),
    "tensordot_bare_ints": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 2), (1, 0)),
    "tensordot_dims_tensor_three_rows": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 3),
                                                              L.tensor([1, 0, 1])),
    "tensordot_dims_numpy_int": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 3), np.int64(1)),
    "tensordot_dims_string": lambda L: L.tensordot(_o(L, 3, 4), _o(L, 4, 3), "a"),
    "inner_last_dims": lambda L: L.inner(_o(L, 2, 3), _o(L, 4, 2)),
    "inner_dtype": lambda L: L.inner(_o(L, 2, 3), _o(L, 4, 3, dtype=L.float64)),
    "ger_2d": lambda L: L.ger(_o(L, 3, 1), _o(L, 4)),
    "vdot_2d": lambda L: L.vdot(_o(L, 3, 1), _o(L, 3)),
    "vdot_lengths": lambda L: L.vdot(_o(L, 3), _o(L, 4)),
    "vdot_dtype": lambda L: L.vdot(_o(L, 3), _o(L, 3, dtype=L.float64)),
    "kron_strided_result": lambda L: L.kron(_o(L, 3, 2).t(), _o(L, 4)),
    "multi_dot_one": lambda L: L.linalg.multi_dot([_o(L, 2, 3)]),
    "multi_dot_none": lambda L: L.linalg.multi_dot([]),
    "multi_dot_3d_first": lambda L: L.linalg.multi_dot([_o(L, 2, 3, 3), _o(L, 3, 3)]),
    "multi_dot_3d_last": lambda L: L.linalg.multi_dot([_o(L, 3, 3), _o(L, 3, 3, 3)]),
    "multi_dot_1d_middle": lambda L: L.linalg.multi_dot([_o(L, 2, 3), _o(L, 3), _o(L, 3, 3)]),
    "multi_dot_shapes": lambda L: L.linalg.multi_dot([_o(L, 2, 3), _o(L, 4, 3)]),
    "multi_dot_dtype": lambda L: L.linalg.multi_dot([_o(L, 2, 3), _o(L, 3, 3, dtype=L.float64)]),
    "chain_matmul_none": lambda L: _chain_matmul(L),
    "chain_matmul_1d": lambda L: _chain_matmul(L, _o(L, 3), _o(L, 3, 4)),
    "chain_matmul_shapes": lambda L: _chain_matmul(L, _o(L, 2, 3), _o(L, 4, 3)),
    "tensordot_out_dtype": lambda L: L.tensordot(_o(L, 2, 3), _o(L, 3, 2), 1,
                                                 out=L.empty(0, dtype=L.float64)),
    "inner_out_leaf_requires_grad": lambda L: L.inner(_o(L, 2, 3), _o(L, 2, 3),
                                                      out=L.empty(2, 2, requires_grad=True)),
    "vdot_out_with_grad": lambda L: L.vdot(L.ones(3, requires_grad=True), L.ones(3),
                                           out=L.empty(0)),
    "multi_dot_out_with_grad": lambda L: L.linalg.multi_dot(
        [L.ones(2, 3, requires_grad=True), L.ones(3, 2)], out=L.empty(0)),
    "kron_out_with_grad": lambda L: L.kron(L.ones(3, requires_grad=True), L.ones(3),
                                           out=L.empty(0)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_type(name):
    assert_same_error(ERRORS[name])


def test_vdot_conjugates_the_first_vector_of_complex_operands():
    rng = np.random.default_rng(_seed("vdot_complex"))
    a, b = (rng.standard_normal(4) + 1j * rng.standard_normal(4) for _ in range(2))
    results = []
    for L in (torch, adcompile):
        x, y = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        out = L.vdot(x, y)
        out.abs().backward()
        results.append((out.detach().numpy(), x.grad.numpy(), y.grad.numpy()))
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


VMAPPED = {
    "inner": lambda L, x, y: L.inner(x, y),
    "vdot": lambda L, x, y: L.vdot(x, y),
    "ger": lambda L, x, y: L.ger(x, y),
    "kron": lambda L, x, y: L.kron(x, y),
    "tensordot": lambda L, x, y: L.tensordot(x, y, 1),
    "multi_dot": lambda L, x, y: L.linalg.multi_dot([x, y]),
}


@pytest.mark.parametrize("name", list(VMAPPED))
def test_vmap_over_vectors(name):
    rng = np.random.default_rng(_seed("vmap", name))
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    theirs, ours = (L.func.vmap(lambda x, y, L=L: VMAPPED[name](L, x, y))(L.tensor(a), L.tensor(b))
                    for L in (torch, adcompile))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
