"""Every eager op, differential against PyTorch 2.13: forward values and dtype, grad_fn name,
next_functions, gradients (float64 to 1e-6, float32 to 1e-4), broadcasting, promotion, and
second derivatives. Each op is one table row; the same lambda runs with `lib` bound to torch
and to adcompile."""

import numpy as np
import pytest
import torch

import adcompile

POS, ANY, AWAY, DISTINCT = "pos", "any", "away", "distinct"

# name: (fn(lib, *xs), input shapes, domain)
UNARY = {
    "neg": (lambda L, x: -x, [(3, 4)], ANY),
    "neg_method": (lambda L, x: x.neg(), [(3,)], ANY),
    "abs": (lambda L, x: L.abs(x), [(5,)], AWAY),
    "exp": (lambda L, x: x.exp(), [(3, 2)], ANY),
    "log": (lambda L, x: L.log(x), [(4,)], POS),
    "log1p": (lambda L, x: x.log1p(), [(4,)], POS),
    "sqrt": (lambda L, x: x.sqrt(), [(4,)], POS),
    "rsqrt": (lambda L, x: x.rsqrt(), [(4,)], POS),
    "sin": (lambda L, x: L.sin(x), [(2, 3)], ANY),
    "cos": (lambda L, x: x.cos(), [(2, 3)], ANY),
    "tan": (lambda L, x: x.tan(), [(4,)], ANY),
    "tanh": (lambda L, x: x.tanh(), [(4,)], ANY),
    "sigmoid": (lambda L, x: L.sigmoid(x), [(4,)], ANY),
    "relu": (lambda L, x: x.relu(), [(6,)], AWAY),
    "relu_fn": (lambda L, x: L.relu(x), [(6,)], AWAY),
    "clamp_both": (lambda L, x: x.clamp(-0.5, 0.5), [(8,)], AWAY),
    "clamp_min": (lambda L, x: x.clamp(min=0.1), [(8,)], AWAY),
    "clamp_max": (lambda L, x: L.clamp(x, max=0.2), [(8,)], AWAY),
    "reciprocal": (lambda L, x: x.reciprocal(), [(4,)], AWAY),
    "sign": (lambda L, x: x.sign(), [(4,)], AWAY),
    "floor": (lambda L, x: x.floor(), [(4,)], ANY),
    "round": (lambda L, x: x.round(), [(4,)], ANY),
    "square": (lambda L, x: x.square(), [(4,)], ANY),
    "pow_2": (lambda L, x: x**2, [(3,)], ANY),
    "pow_2_5": (lambda L, x: x**2.5, [(3,)], POS),
    "pow_0": (lambda L, x: x**0, [(3,)], ANY),
    "pow_neg": (lambda L, x: L.pow(x, -1.5), [(3,)], POS),
    "rpow": (lambda L, x: 2**x, [(3,)], ANY),
    "rsub": (lambda L, x: 2 - x, [(3,)], ANY),
    "rdiv": (lambda L, x: 2 / x, [(3,)], AWAY),
    "radd": (lambda L, x: 2 + x, [(3,)], ANY),
    "rmul": (lambda L, x: 2 * x, [(3,)], ANY),
    "sub_scalar": (lambda L, x: x - 2, [(3,)], ANY),
    "div_scalar": (lambda L, x: x / 2, [(3,)], ANY),
    "sum": (lambda L, x: x.sum(), [(3, 4)], ANY),
    "sum_dim": (lambda L, x: x.sum(0), [(3, 4)], ANY),
    "sum_keepdim": (lambda L, x: x.sum(dim=1, keepdim=True), [(3, 4)], ANY),
    "sum_dims": (lambda L, x: x.sum((0, 2)), [(2, 3, 4)], ANY),
    "mean": (lambda L, x: x.mean(), [(3, 4)], ANY),
    "mean_dim": (lambda L, x: L.mean(x, 1), [(3, 4)], ANY),
    "prod": (lambda L, x: x.prod(), [(5,)], AWAY),
    "prod_dim": (lambda L, x: x.prod(1), [(3, 4)], AWAY),
    "max_all": (lambda L, x: x.max(), [(3, 4)], DISTINCT),
    "min_all": (lambda L, x: x.min(), [(3, 4)], DISTINCT),
    "max_dim": (lambda L, x: x.max(dim=0).values, [(3, 4)], DISTINCT),
    "min_dim_keepdim": (lambda L, x: x.min(1, keepdim=True)[0], [(3, 4)], DISTINCT),
    "norm": (lambda L, x: x.norm(), [(3, 4)], ANY),
    "norm_dim": (lambda L, x: x.norm(dim=1), [(3, 4)], ANY),
    "norm_p1": (lambda L, x: x.norm(p=1), [(5,)], AWAY),
    "std": (lambda L, x: x.std(), [(6,)], ANY),
    "std_dim": (lambda L, x: x.std(dim=0), [(4, 3)], ANY),
    "var": (lambda L, x: x.var(), [(6,)], ANY),
    "var_unbiased_false": (lambda L, x: x.var(1, unbiased=False), [(3, 4)], ANY),
    "view": (lambda L, x: x.view(4, 3), [(3, 4)], ANY),
    "view_infer": (lambda L, x: x.view(-1), [(3, 4)], ANY),
    "reshape": (lambda L, x: x.reshape(2, 6), [(3, 4)], ANY),
    "reshape_noncontig": (lambda L, x: x.t().reshape(12), [(3, 4)], ANY),
    "flatten": (lambda L, x: x.flatten(), [(2, 3, 2)], ANY),
    "t": (lambda L, x: x.t(), [(3, 4)], ANY),
    "T": (lambda L, x: x.T, [(3, 4)], ANY),
    "transpose": (lambda L, x: x.transpose(0, 2), [(2, 3, 4)], ANY),
    "permute": (lambda L, x: x.permute(2, 0, 1), [(2, 3, 4)], ANY),
    "squeeze": (lambda L, x: x.squeeze(), [(3, 1, 4)], ANY),
    "squeeze_dim": (lambda L, x: x.squeeze(1), [(3, 1, 4)], ANY),
    "unsqueeze": (lambda L, x: x.unsqueeze(1), [(3, 4)], ANY),
    "expand": (lambda L, x: x.expand(3, 4), [(1, 4)], ANY),
    "expand_new_dim": (lambda L, x: x.expand(2, 3, 4), [(3, 4)], ANY),
    "index_int": (lambda L, x: x[1], [(3, 4)], ANY),
    "index_col": (lambda L, x: x[:, 0], [(3, 4)], ANY),
    "index_slice": (lambda L, x: x[0:2], [(3, 4)], ANY),
    "index_step": (lambda L, x: x[::2, 1:], [(5, 4)], ANY),
    "index_negative": (lambda L, x: x[-1, -2], [(3, 4)], ANY),
    "index_none": (lambda L, x: x[None, 1], [(3, 4)], ANY),
    "index_ellipsis": (lambda L, x: x[..., 1], [(2, 3, 4)], ANY),
    "index_list_dup": (lambda L, x: x[[0, 2, 0]], [(3, 4)], ANY),
    "index_mask": (lambda L, x: x[x > 0], [(3, 4)], AWAY),
    "clone": (lambda L, x: x.clone(), [(3,)], ANY),
    "to_double": (lambda L, x: x.to(L.float64), [(3,)], ANY),
    "double": (lambda L, x: x.double() * 2, [(3,)], ANY),
    "float": (lambda L, x: x.float() * 2, [(3,)], ANY),
    "softmax": (lambda L, x: x.softmax(1), [(2, 5)], ANY),
    "log_softmax": (lambda L, x: L.log_softmax(x, dim=0), [(4, 3)], ANY),
    "cumsum": (lambda L, x: x.cumsum(1), [(2, 5)], ANY),
    "logsumexp": (lambda L, x: x.logsumexp(1), [(2, 5)], ANY),
    "split": (lambda L, x: x.split(2)[1], [(5, 2)], ANY),
    "split_sizes": (lambda L, x: x.split([1, 4])[1], [(5, 2)], ANY),
    "chunk_sum": (lambda L, x: sum(c.sum() for c in x.chunk(3)), [(6,)], ANY),
    "unbind": (lambda L, x: x.unbind(1)[2], [(2, 3)], ANY),
    "masked_fill": (lambda L, x: x.masked_fill(x > 0, 0.5), [(6,)], AWAY),
    "diag": (lambda L, x: L.diag(x), [(3, 3)], ANY),
}

BINARY = {
    "add": (lambda L, x, y: x + y, [(3, 4), (3, 4)], ANY),
    "add_alpha": (lambda L, x, y: x.add(y, alpha=2), [(3,), (3,)], ANY),
    "sub": (lambda L, x, y: L.sub(x, y), [(3,), (3,)], ANY),
    "mul": (lambda L, x, y: x * y, [(3,), (3,)], ANY),
    "div": (lambda L, x, y: x / y, [(3,), (3,)], AWAY),
    "pow_tensor": (lambda L, x, y: x**y, [(3,), (3,)], POS),
    "maximum": (lambda L, x, y: L.maximum(x, y), [(5,), (5,)], DISTINCT),
    "minimum": (lambda L, x, y: L.minimum(x, y), [(5,), (5,)], DISTINCT),
    "where": (lambda L, x, y: L.where(x > y, x, y), [(5,), (5,)], DISTINCT),
    "dot": (lambda L, x, y: L.dot(x, y), [(4,), (4,)], ANY),
    "mm": (lambda L, x, y: x.mm(y), [(3, 4), (4, 2)], ANY),
    "mv": (lambda L, x, y: L.mv(x, y), [(3, 4), (4,)], ANY),
    "matmul_1d_1d": (lambda L, x, y: x @ y, [(4,), (4,)], ANY),
    "matmul_2d_1d": (lambda L, x, y: x @ y, [(3, 4), (4,)], ANY),
    "matmul_1d_2d": (lambda L, x, y: x @ y, [(4,), (4, 2)], ANY),
    "matmul_3d_3d": (lambda L, x, y: x @ y, [(2, 3, 4), (2, 4, 5)], ANY),
    "matmul_3d_2d": (lambda L, x, y: L.matmul(x, y), [(2, 3, 4), (4, 5)], ANY),
    "matmul_broadcast": (lambda L, x, y: x @ y, [(2, 1, 3, 4), (3, 4, 2)], ANY),
    "outer": (lambda L, x, y: L.outer(x, y), [(3,), (4,)], ANY),
    "cat": (lambda L, x, y: L.cat([x, y], 1), [(2, 3), (2, 2)], ANY),
    "stack": (lambda L, x, y: L.stack([x, y], dim=1), [(2, 3), (2, 3)], ANY),
    "broadcast_col_row": (lambda L, x, y: x * y, [(3, 1), (1, 4)], ANY),
    "broadcast_vec_mat": (lambda L, x, y: x - y, [(4,), (3, 4)], ANY),
    "broadcast_scalar": (lambda L, x, y: x + y, [(), (3,)], ANY),
    "broadcast_3d": (lambda L, x, y: x / y, [(2, 1, 3), (4, 1)], AWAY),
}

TERNARY = {
    "addmm": (lambda L, b, x, y: L.addmm(b, x, y), [(2,), (3, 4), (4, 2)], ANY),
    "addmm_scaled": (lambda L, b, x, y: L.addmm(b, x, y, beta=0.5, alpha=2), [(3, 2), (3, 4),
                                                                             (4, 2)], ANY),
}

ALL = {**UNARY, **BINARY, **TERNARY}


def _draw(shape, domain, rng):
    n = int(np.prod(shape)) if shape else 1
    if domain == POS:
        v = rng.uniform(0.3, 2.0, n)
    elif domain == AWAY:
        v = rng.uniform(0.3, 2.0, n) * rng.choice([-1, 1], n)
    elif domain == DISTINCT:
        v = rng.permutation(n) * 0.37 - n * 0.1
    else:
        v = rng.standard_normal(n)
    return v.reshape(shape)


def _edges(t):
    return [(type(n).__name__ if n is not None else None, i)
            for n, i in t.grad_fn.next_functions]


def _run(lib, fn, arrays, dtype, cotangent_seed=1):
    dt = getattr(lib, dtype)
    xs = [lib.tensor(a, dtype=dt, requires_grad=True) for a in arrays]
    out = fn(lib, *xs)
    facts = dict(value=out.detach().numpy().copy(), dtype=str(out.dtype), shape=tuple(out.shape),
                 node=type(out.grad_fn).__name__ if out.grad_fn is not None else None,
                 edges=_edges(out) if out.grad_fn is not None else None)
    if out.requires_grad:
        cot = np.random.default_rng(cotangent_seed).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(cot, dtype=out.dtype))
    facts["grads"] = [None if x.grad is None else (x.grad.numpy().copy(), str(x.grad.dtype))
                      for x in xs]
    return facts


def _compare(ours, theirs, rtol):
    for key in ("dtype", "shape", "node", "edges"):
        assert ours[key] == theirs[key], key
    np.testing.assert_allclose(ours["value"], theirs["value"], rtol=rtol, atol=rtol)
    for a, b in zip(ours["grads"], theirs["grads"]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a[1] == b[1]
            np.testing.assert_allclose(a[0], b[0], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float64", 1e-6), ("float32", 1e-4)])
@pytest.mark.parametrize("name", sorted(ALL))
def test_op_matches_torch(name, dtype, rtol):
    fn, shapes, domain = ALL[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = [_draw(s, domain, rng) for s in shapes]
    _compare(_run(adcompile, fn, arrays, dtype), _run(torch, fn, arrays, dtype), rtol)


SECOND_ORDER = [n for n in ALL if n not in {
    "sign", "floor", "round", "index_mask", "max_all", "min_all", "max_dim", "min_dim_keepdim",
    "relu", "relu_fn", "clamp_both", "clamp_min", "clamp_max", "maximum", "minimum", "where",
    "pow_0", "masked_fill", "norm_p1", "abs"}]


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_derivative_matches_torch(name):
    fn, shapes, domain = ALL[name]
    rng = np.random.default_rng(7)
    arrays = [_draw(s, domain, rng) for s in shapes]
    results = []
    for lib in (torch, adcompile):
        xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        v = lib.tensor(np.random.default_rng(2).standard_normal(tuple(out.shape)))
        grads = lib.autograd.grad((out * v).sum(), xs, create_graph=True, allow_unused=True)
        live = [g for g in grads if g is not None and g.requires_grad]
        if not live:
            results.append(None)
            continue
        w = [lib.tensor(np.random.default_rng(3).standard_normal(tuple(g.shape))) for g in live]
        total = sum((g * wi).sum() for g, wi in zip(live, w))
        second = lib.autograd.grad(total, xs, allow_unused=True)
        results.append([None if s is None else s.numpy() for s in second])
    theirs, ours = results
    assert (theirs is None) == (ours is None)
    if theirs is not None:
        for a, b in zip(ours, theirs):
            assert (a is None) == (b is None) or np.allclose(a if a is not None else b, 0)
            if a is not None and b is not None:
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


PROMOTION = {
    "f32_x_f64": (lambda L: L.ones(2) * L.ones(2, dtype=L.float64)),
    "f16_x_f32": (lambda L: L.ones(2, dtype=L.float16) + L.ones(2)),
    "1d_f32_x_0d_f64": (lambda L: L.ones(2) * L.tensor(2.0, dtype=L.float64)),
    "1d_f16_x_0d_f64": (lambda L: L.ones(2, dtype=L.float16) * L.tensor(2.0, dtype=L.float64)),
    "0d_x_0d": (lambda L: L.tensor(1.0) * L.tensor(2.0, dtype=L.float64)),
    "int_x_0d_f64": (lambda L: L.tensor([1, 2]) + L.tensor(0.5, dtype=L.float64)),
    "int_plus_int": (lambda L: L.tensor([1, 2]) + 1),
    "int_plus_float": (lambda L: L.tensor([1, 2]) + 1.5),
    "int_div_int": (lambda L: L.tensor([1, 2]) / L.tensor([2, 2])),
    "int_div_scalar": (lambda L: L.tensor([1, 3]) / 2),
    "int_pow_2": (lambda L: L.tensor([1, 3]) ** 2),
    "int_pow_half": (lambda L: L.tensor([1, 4]) ** 0.5),
    "int_floordiv": (lambda L: L.tensor(-7) // 2),
    "int32_plus_int64": (lambda L: L.tensor([1], dtype=L.int32) + L.tensor([1])),
    "int32_plus_scalar": (lambda L: L.tensor([1], dtype=L.int32) + 1),
    "uint8_plus_int8": (lambda L: L.tensor([1], dtype=L.uint8) + L.tensor([1], dtype=L.int8)),
    "bool_plus_int": (lambda L: L.tensor([True, False]) + 1),
    "bool_times_true": (lambda L: L.tensor([True, False]) * True),
    "bool_plus_float": (lambda L: L.tensor([True]) + 1.5),
    "f16_times_scalar": (lambda L: L.tensor([1.0, 2.0], dtype=L.float16) * 3.5),
    "compare_mixed": (lambda L: L.tensor([1, 2]) < L.tensor([1.5, 1.5])),
    "sum_int": (lambda L: L.tensor([1, 2], dtype=L.int32).sum()),
    "sum_bool": (lambda L: L.tensor([True, True]).sum()),
}


@pytest.mark.parametrize("name", sorted(PROMOTION))
def test_promotion_matches_torch(name):
    ours, theirs = PROMOTION[name](adcompile), PROMOTION[name](torch)
    assert str(ours.dtype) == str(theirs.dtype)
    assert ours.tolist() == theirs.tolist()


def test_mixed_dtype_gradients_keep_leaf_dtypes():
    seen = []
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor(2.5, dtype=lib.float64, requires_grad=True)
        h = lib.tensor([1.0, 2.0], dtype=lib.float16, requires_grad=True)
        out = (x * w).sum() + (h * x).sum()
        out.backward()
        seen.append([str(out.dtype), str(x.grad.dtype), str(w.grad.dtype), str(h.grad.dtype),
                     x.grad.tolist(), w.grad.item(), h.grad.tolist()])
    assert seen[0] == seen[1]


def test_comparisons_are_not_differentiable():
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        for out in (x > 0, x == 1, x.argmax(), (x * 2).long()):
            assert not out.requires_grad and out.grad_fn is None
        assert type(x.round().grad_fn).__name__ == "RoundBackward0"


def test_max_dim_returns_values_and_indices():
    ours = adcompile.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    theirs = torch.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    assert ours.values.tolist() == theirs.values.tolist()
    assert ours.indices.tolist() == theirs.indices.tolist()
    assert str(ours.indices.dtype) == str(theirs.indices.dtype)


def test_ties_share_the_gradient():
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
        x.max().backward()
        assert np.allclose(x.grad.numpy(), [1 / 3, 0, 1 / 3, 0, 1 / 3, 0])


def test_pow_zero_exponent_gradient_at_zero():
    for lib in (torch, adcompile):
        x = lib.tensor([0.0, 2.0], requires_grad=True)
        (x**0).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0]
