"""torch.func.vmap: values equal PyTorch 2.13's, and the ops with a batching rule run as one
vectorised call (runtime.batching.FALLBACKS counts the ops that took the per-entry loop)."""

import numpy as np
import pytest
import torch

import adcompile
from runtime import batching

LIBS = (torch, adcompile)


def FN(L):
    return L.func


def _w(L, shape, seed=0):
    return L.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=L.float64)


# name -> (function of the library, argument shapes, in_dims, out_dims); every op used has a
# batching rule, so no fallback loop may run
CASES = {
    "unary_binary": (lambda L: lambda x: x.sin() * x + 2 - x.exp() / 3, [(4, 3)], 0, 0),
    "broadcast_plain": (lambda L: lambda x: x + _w(L, (2, 3)), [(4, 3)], 0, 0),
    "broadcast_scalar_row": (lambda L: lambda x, y: x * y, [(4,), (4, 2)], 0, 0),
    "where_clamp": (lambda L: lambda x: L.where(x > 0, x, -x).clamp(0.1, 1.0), [(4, 3)], 0, 0),
    "sum_all": (lambda L: lambda x: x.sum(), [(4, 3, 2)], 0, 0),
    "sum_dims": (lambda L: lambda x: x.sum(-1) + x.mean(0, keepdim=True).sum(), [(4, 3, 2)],
                 0, 0),
    "max_argmax": (lambda L: lambda x: (x.max(1).values, x.argmax(), x.max()), [(4, 3, 2)],
                   0, 0),
    "var_std_norm": (lambda L: lambda x: (x.var(0), x.std(), L.linalg.vector_norm(x)),
                     [(4, 3)], 0, 0),
    "logsumexp_softmax": (lambda L: lambda x: (x.logsumexp(-1), L.softmax(x, -1),
                                               L.log_softmax(x, 0)), [(4, 3, 2)], 0, 0),
    "vec_mat_plain": (lambda L: lambda x: x @ _w(L, (3, 5)), [(4, 3)], 0, 0),
    "mat_vec_plain": (lambda L: lambda x: _w(L, (5, 3)) @ x, [(4, 3)], 0, 0),
    "dot_batched": (lambda L: lambda x, y: x.dot(y), [(4, 3), (4, 3)], 0, 0),
    "mm_bmm": (lambda L: lambda a, b: (a.mm(b), L.bmm(a[None], b[None])),
               [(4, 2, 3), (4, 3, 2)], 0, 0),
    "matmul_ranks": (lambda L: lambda a, b: a @ b, [(4, 2, 2, 3), (4, 3, 5)], 0, 0),
    "mv_outer": (lambda L: lambda m, v: (L.mv(m, v), L.outer(v, v)), [(4, 2, 3), (4, 3)],
                 0, 0),
    "linear": (lambda L: lambda x: L.nn.functional.linear(x, _w(L, (5, 3)), _w(L, (5,))),
               [(4, 3)], 0, 0),
    "indexing": (lambda L: lambda x: (x[0], x[:, 1:], x[..., None], x[L.tensor([1, 0, 1])],
                                      x[1, L.tensor([0, 1])]), [(4, 3, 2)], 0, 0),
    "views": (lambda L: lambda x: (x.reshape(-1), x.view(2, 3), x.t(), x.T, x.transpose(0, 1),
                                   x.permute(1, 0), x.flatten(), x.unsqueeze(0).squeeze(0),
                                   x.unsqueeze(-1), x.expand(2, 3, 2)), [(4, 3, 2)], 0, 0),
    "cat_stack_plain": (lambda L: lambda x: (L.cat([x, _w(L, (2,))]), L.stack([x, x * 2], 1)),
                        [(4, 2)], 0, 0),
    "split_unbind": (lambda L: lambda x: (x.split(1, 1)[1], x.unbind(0)[1], x.chunk(2)[0]),
                     [(4, 2, 3)], 0, 0),
    "cumsum_sort": (lambda L: lambda x: (x.cumsum(0), x.sort().values, x.topk(2).indices),
                    [(4, 5)], 0, 0),
    "in_dims_1_none": (lambda L: lambda x, y: x * y, [(3, 4), (3,)], (1, None), 0),
    "out_dims_1": (lambda L: lambda x: x.exp(), [(4, 3)], 0, 1),
    "out_dims_negative": (lambda L: lambda x: x.reshape(3, 1), [(4, 3)], 0, -1),
    "tuple_in_out": (lambda L: lambda p: (p[0] + p[1], p[0]), [((4, 2), (4, 2))], 0, (0, 1)),
    "unbatched_output": (lambda L: lambda x: (x.sum(), _w(L, (2,))), [(4, 3)], 0, 0),
    "mse_loss": (lambda L: lambda x, y: L.nn.functional.mse_loss(x, y), [(4, 3), (4, 3)],
                 0, 0),
    "einsum": (lambda L: lambda a, b: (L.einsum("ij,jk->ik", a, b), L.einsum("ij,j", a, b[:, 0]),
                                       L.einsum("...j,jk", a, _w(L, (3, 2)))),
               [(4, 2, 3), (4, 3, 5)], 0, 0),
    "cross_entropy": (lambda L: lambda x: (
        L.nn.functional.cross_entropy(x, L.tensor([1, 0])),
        L.nn.functional.cross_entropy(x[0], L.tensor(2), reduction="sum")), [(4, 2, 3)], 0, 0),
    # namespace functions and methods passed by value, read before vmap swaps them
    "function_itself": (lambda L: L.dot, [(4, 3), (4, 3)], 0, 0),
    "method_itself": (lambda L: L.Tensor.mm, [(4, 2, 3), (4, 3, 2)], 0, 0),
    "functional_itself": (lambda L: L.nn.functional.silu, [(4, 3)], 0, 0),
    "linalg_itself": (lambda L: L.linalg.vector_norm, [(4, 3)], 0, 0),
    "nested_function_itself": (lambda L: L.func.vmap(L.mul), [(4, 2, 3), (4, 2, 3)], 0, 0),
}


def _args(L, shapes):
    rng = np.random.default_rng(7)

    def make(s):
        if isinstance(s[0], tuple):
            return tuple(make(x) for x in s)
        return L.tensor(rng.standard_normal(s), dtype=L.float64)

    return [make(s) for s in shapes]


def _numpy(tree):
    if isinstance(tree, (tuple, list)):
        return [_numpy(t) for t in tree]
    return tree.detach().numpy()


def _check_same(got, want):
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check_same(g, w)
    else:
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap_equals_torch_without_fallback(name):
    make, shapes, in_dims, out_dims = CASES[name]
    results = []
    batching.FALLBACKS.clear()
    for L in LIBS:
        out = FN(L).vmap(make(L), in_dims=in_dims, out_dims=out_dims)(*_args(L, shapes))
        results.append(_numpy(out))
    _check_same(results[1], results[0])
    assert not batching.FALLBACKS, f"ops without a batching rule: {dict(batching.FALLBACKS)}"


def test_vmap_runs_one_vectorised_call():
    """A ruled function sees one batched tensor: it is called once, whatever the batch."""
    calls = []

    def f(x):
        calls.append(x.shape)
        return (x * x).sum()

    out = adcompile.func.vmap(f)(adcompile.ones(50, 3))
    assert calls == [adcompile.Size([3])] and out.shape == adcompile.Size([50])


def test_vmap_fallback_loop_for_ops_without_a_rule():
    batching.FALLBACKS.clear()
    results = []
    for L in LIBS:
        x = L.tensor(np.random.default_rng(1).standard_normal((3, 4, 4)))
        results.append(_numpy(FN(L).vmap(lambda m: L.linalg.det(m) + m.trace())(x)))
    _check_same(results[1], results[0])
    assert batching.FALLBACKS["det"] >= 1


def test_vmap_nested_and_in_dims():
    results = []
    for L in LIBS:
        x, y = _args(L, [(2, 3, 4), (4, 3)])
        inner = FN(L).vmap(lambda a, b: a * b + a.sum(), in_dims=(0, 1))
        results.append(_numpy(FN(L).vmap(inner, in_dims=(0, None))(x, y)))
    _check_same(results[1], results[0])


def test_vmap_of_grad_per_sample_gradients():
    """The per-sample-gradient recipe: grad over the weights, vmap over the samples."""
    results = []
    for L in LIBS:
        w, b = _w(L, (3,), 1), _w(L, (), 2)
        x, y = _w(L, (6, 3), 3), _w(L, (6,), 4)

        def loss(w, b, xi, yi):
            return ((xi @ w + b - yi) ** 2).mean()

        grads = FN(L).vmap(FN(L).grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(
            w, b, x, y)
        results.append(_numpy(grads))
    _check_same(results[1], results[0])


def test_vmap_of_grad_with_functional_call():
    results = []
    for L in LIBS:
        L.manual_seed(0)
        model = L.nn.Linear(3, 2).double()
        params = {k: v.detach() for k, v in model.named_parameters()}
        x, y = _w(L, (5, 3), 5), _w(L, (5, 2), 6)

        def loss(p, xi, yi):
            out = FN(L).functional_call(model, p, (xi[None],))
            return L.nn.functional.mse_loss(out, yi[None])

        grads = FN(L).vmap(FN(L).grad(loss), in_dims=(None, 0, 0))(params, x, y)
        results.append([_numpy(grads[k]) for k in sorted(grads)])
    _check_same(results[1], results[0])


def test_grad_of_vmap_and_graph_through_vmap():
    results = []
    for L in LIBS:
        x = _w(L, (4, 3), 8).requires_grad_()
        out = FN(L).vmap(lambda r: (r.sin() * r).sum())(x)
        (g,) = L.autograd.grad(out.sum(), x)
        results.append([_numpy(out), _numpy(g)])
    _check_same(results[1], results[0])


def test_vmap_data_dependent_python_value_raises():
    for L in LIBS:
        with pytest.raises(RuntimeError):
            FN(L).vmap(lambda x: x.sum().item())(L.ones(3, 2))


def test_vmap_leaves_namespaces_unpatched():
    before = adcompile.sin
    adcompile.func.vmap(lambda x: adcompile.sin(x))(adcompile.ones(2, 2))
    assert adcompile.sin is before
    assert adcompile.Tensor.sum is batching.original_methods()["sum"]


TRANSFORMS_IN_VMAP = {
    "jacrev": lambda L: L.func.vmap(L.func.jacrev(lambda v: v.sin() * v.sum())),
    "hessian": lambda L: L.func.vmap(L.func.hessian(lambda v: (v ** 3).sum() * v[0])),
    "jvp": lambda L: L.func.vmap(lambda p: L.func.jvp(lambda v: v.exp() * v[1],
                                                      (p,), (L.ones_like(p),))[1]),
    "vjp": lambda L: L.func.vmap(lambda p: L.func.vjp(lambda v: v.tanh(), p)[1](p)[0]),
}


@pytest.mark.parametrize("name", list(TRANSFORMS_IN_VMAP))
def test_function_transforms_inside_vmap(name):
    results = []
    for L in LIBS:
        x = _w(L, (4, 3), 9)
        results.append(_numpy(TRANSFORMS_IN_VMAP[name](L)(x)))
    _check_same(results[1], results[0])


def test_vmap_randomness_modes():
    for L in LIBS:
        x = L.ones(4, 3)
        with pytest.raises(RuntimeError):
            FN(L).vmap(lambda r: r + L.randn(3))(x)
        with pytest.raises(RuntimeError):
            FN(L).vmap(lambda r: L.nn.functional.dropout(r, 0.5))(x)
        for fn in (lambda r: r + L.randn(3), lambda r: L.rand_like(r),
                   lambda r: L.nn.functional.dropout(r, 0.5)):
            same = FN(L).vmap(fn, randomness="same")(x)
            assert (same == same[0]).all()
            different = FN(L).vmap(fn, randomness="different")(L.ones(50, 3))
            assert not (different == different[0]).all()


def test_per_sample_gradients_of_an_mlp_are_vectorised():
    """The classic recipe (functional_call + grad + vmap over a classifier): torch's values,
    and every op of the model and the loss has a batching rule."""
    results = []
    batching.FALLBACKS.clear()
    for L in LIBS:
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.ReLU(), L.nn.Linear(8, 3)).double()
        params = {k: v.detach() for k, v in model.named_parameters()}
        x, y = _w(L, (6, 4), 10), L.tensor([0, 2, 1, 1, 0, 2])

        def loss(p, xi, yi):
            logits = FN(L).functional_call(model, p, (xi[None],))
            return L.nn.functional.cross_entropy(logits, yi[None])

        grads = FN(L).vmap(FN(L).grad(loss), in_dims=(None, 0, 0))(params, x, y)
        results.append([_numpy(grads[k]) for k in sorted(grads)])
    _check_same(results[1], results[0])
    assert not batching.FALLBACKS, dict(batching.FALLBACKS)


def test_modules_inside_vmap_batch_or_loop():
    """Modules whose forward only uses batchable ops run vectorised; others (a conv here) run
    per entry; both give torch's values."""
    results = []
    batching.FALLBACKS.clear()
    for L in LIBS:
        L.manual_seed(0)
        net = L.nn.Sequential(L.nn.Conv1d(2, 3, 2), L.nn.Flatten(0), L.nn.GELU(),
                              L.nn.Linear(9, 2), L.nn.Tanh()).double()
        results.append(_numpy(FN(L).vmap(net)(_w(L, (5, 2, 4), 11))))
    _check_same(results[1], results[0])
    assert set(batching.FALLBACKS) == {"Conv1d"}
