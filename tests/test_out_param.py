"""The out= keyword (runtime/out_param.py), differential against PyTorch 2.13.

Each op of OPS is called with each kind of `out` of OUTS: an empty one (resized silently), one
of the wrong shape (resized with a UserWarning), one of the right shape (no warning), and ones
of another dtype (cast into when the result's dtype can be, refused by the ops that need the
exact dtype, whatever the shape). We compare the returned object's identity, out's dtype,
shape and values, whether a UserWarning came, or the exception class.
"""

import warnings

import numpy as np
import pytest
import torch

import adcompile


def _ops(L):
    a, b, v = L.arange(6.0).view(2, 3), L.ones(3, 2), L.tensor([0.5, -1.0, 2.0])
    return {
        "add": lambda o: L.add(v, v, out=o),
        "exp": lambda o: L.exp(v, out=o),
        "mul_scalar": lambda o: L.mul(v, 2, out=o),
        "eq": lambda o: L.eq(v, v, out=o),
        "sum": lambda o: L.sum(a, 1, out=o),
        "mean": lambda o: L.mean(a, 1, out=o),
        "prod": lambda o: L.prod(a, 1, out=o),
        "cumsum": lambda o: L.cumsum(v, 0, out=o),
        "nansum": lambda o: L.nansum(a, 1, out=o),
        "nanmean": lambda o: L.nanmean(a, 1, out=o),
        "logsumexp": lambda o: L.logsumexp(a, 1, out=o),
        "var": lambda o: L.var(a, 1, out=o),
        "amax": lambda o: L.amax(a, 1, out=o),
        "norm": lambda o: L.norm(a, dim=1, out=o),
        "abs": lambda o: L.abs(v, out=o),
        "clamp": lambda o: L.clamp(v, 0, 1, out=o),
        "where": lambda o: L.where(v > 0, v, v, out=o),
        "softmax": lambda o: L.softmax(v, 0, out=o),
        "cat": lambda o: L.cat([v, v], out=o),
        "stack": lambda o: L.stack([v, v], out=o),
        "index_select": lambda o: L.index_select(v, 0, L.tensor([0, 2]), out=o),
        "lerp": lambda o: L.lerp(v, v * 2, 0.5, out=o),
        "mm": lambda o: L.mm(a, b, out=o),
        "matmul": lambda o: L.matmul(a, b, out=o),
        "dot": lambda o: L.dot(v, v, out=o),
        "vdot": lambda o: L.vdot(v, v, out=o),
        "mv": lambda o: L.mv(a, v, out=o),
        "bmm": lambda o: L.bmm(a[None], b[None], out=o),
        "addmm": lambda o: L.addmm(L.ones(2, 2), a, b, out=o),
        "addmv": lambda o: L.addmv(L.ones(2), a, v, out=o),
        "baddbmm": lambda o: L.baddbmm(L.ones(1, 2, 2), a[None], b[None], out=o),
        "addbmm": lambda o: L.addbmm(L.ones(2, 2), a[None], b[None], out=o),
        "outer": lambda o: L.outer(v, v, out=o),
        "kron": lambda o: L.kron(v, v, out=o),
        "inner": lambda o: L.inner(v, v, out=o),
        "tensordot": lambda o: L.tensordot(a, b, 1, out=o),
        "multi_dot": lambda o: L.linalg.multi_dot([a, b], out=o),
        "logcumsumexp": lambda o: L.logcumsumexp(v, 0, out=o),
        "gather": lambda o: L.gather(a, 1, L.zeros(2, 1, dtype=L.int64), out=o),
        "zeros": lambda o: L.zeros(2, 2, out=o),
        "ones": lambda o: L.ones(3, out=o),
        "zeros_dtype": lambda o: L.zeros(2, dtype=L.float64, out=o),
        "full": lambda o: L.full((2,), 1.5, out=o),
        "full_int": lambda o: L.full((2,), 3, out=o),
        "arange": lambda o: L.arange(5, out=o),
        "arange_float": lambda o: L.arange(0.5, 3, 0.75, out=o),
        "arange_long": lambda o: L.arange(0.5, 5.7, 1.5, dtype=L.int64, out=o),
        "linspace": lambda o: L.linspace(0, 1, 5, out=o),
        "eye": lambda o: L.eye(2, 3, out=o),
        "linalg_cross": lambda o: L.linalg.cross(v, L.ones(2, 3), out=o),
        "cross": lambda o: L.cross(b.T, a, dim=1, out=o),
    }


OUTS = {
    "empty": lambda L: L.empty(0),
    "wrong_shape": lambda L: L.empty(5),
    "wrong_rank": lambda L: L.empty(1, 1, 1, 1),
    "float64_empty": lambda L: L.empty(0, dtype=L.float64),
    "float64_wrong_shape": lambda L: L.empty(7, dtype=L.float64),
    "int64_empty": lambda L: L.empty(0, dtype=L.int64),
    "float16_empty": lambda L: L.empty(0, dtype=L.float16),
}
# torch's integer out of these computes in integers or raises NotImplementedError: not ours
_SKIP = {("nansum", "int64_empty"), ("nanmean", "int64_empty"), ("cat", "int64_empty"),
         ("stack", "int64_empty")}


def _call(fn, out):
    """(what fn(out) returned, whether it warned of a resize), or the class name of what it
    raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            returned = fn(out)
        except Exception as e:  # noqa: BLE001 - the class is what we compare
            return type(e).__name__
    return returned, any(issubclass(w.category, UserWarning) for w in caught
                         if "deprecated" not in str(w.message) or "resiz" in str(w.message))


def _outcome(L, op, kind):
    out = OUTS[kind](L)
    called = _call(_ops(L)[op], out)
    if isinstance(called, str):
        return called
    returned, warned = called
    return (returned is out, str(out.dtype), tuple(out.shape), warned,
            np.asarray(out.tolist(), dtype=np.float64))


@pytest.mark.parametrize("kind", list(OUTS))
@pytest.mark.parametrize("op", list(_ops(torch)))
def test_out_argument(op, kind):
    if (op, kind) in _SKIP:
        pytest.skip("integer out of a floating op: torch computes in integers")
    theirs, ours = _outcome(torch, op, kind), _outcome(adcompile, op, kind)
    if isinstance(theirs, str) or isinstance(ours, str):
        assert ours == theirs
        return
    assert ours[:4] == theirs[:4], "(returned out, out dtype, out shape, warned)"
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-3)


def _pair_ops(L):
    a = L.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]])
    return {
        "max": lambda o: L.max(a, 1, out=o),
        "min": lambda o: L.min(a, 0, keepdim=True, out=o),
        "sort": lambda o: L.sort(a, 1, descending=True, out=o),
        "topk": lambda o: L.topk(a, 2, out=o),
        "kthvalue": lambda o: L.kthvalue(a, 2, 1, out=o),
        "median": lambda o: L.median(a, 1, out=o),
        "mode": lambda o: L.mode(a, 0, out=o),
        "cummax": lambda o: L.cummax(a, 1, out=o),
        "cummin": lambda o: L.cummin(a, 0, out=o),
    }


PAIR_OUTS = {
    "empty": lambda L: (L.empty(0), L.empty(0, dtype=L.int64)),
    "list": lambda L: [L.empty(0), L.empty(0, dtype=L.int64)],
    "wrong_shape": lambda L: (L.empty(5), L.empty(5, dtype=L.int64)),
    "float64_values": lambda L: (L.empty(0, dtype=L.float64), L.empty(0, dtype=L.int64)),
    "float_indices": lambda L: (L.empty(0), L.empty(0)),
    "one": lambda L: (L.empty(0),),
    "requires_grad": lambda L: (L.empty(0, requires_grad=True), L.empty(0, dtype=L.int64)),
}


def _pair_outcome(L, op, kind):
    outs = PAIR_OUTS[kind](L)
    called = _call(_pair_ops(L)[op], outs)
    if isinstance(called, str):
        return called
    returned, warned = called
    return (type(returned).__name__, repr(type(returned)).split("'")[1],
            [returned.values is outs[0], returned.indices is outs[1]], warned,
            [(str(o.dtype), tuple(o.shape), o.tolist()) for o in outs])


@pytest.mark.parametrize("kind", list(PAIR_OUTS))
@pytest.mark.parametrize("op", list(_pair_ops(torch)))
def test_pair_out_argument(op, kind):
    """(values, indices) ops take a pair of tensors as out= and return them as
    torch.return_types.<op>_out."""
    assert _pair_outcome(adcompile, op, kind) == _pair_outcome(torch, op, kind)


@pytest.mark.parametrize("args", [((0.5, 5, 1.5), "int64"), ((0.5, 5.7, 1), "int64"),
                                  ((-3.2, 2, 1.1), "int64"), ((5, 0, -1.5), "int64"),
                                  ((0, 1, 0.3), "int64"), ((0, 5, -1), None), ((5, 0, 1), None),
                                  ((0, 5, 0), None), ((0.0, 1.0, 0.0), None), ((0, 0, 1), None),
                                  ((1.0, 1.0, -1.0), None), ((0, 10, 3), None),
                                  ((10, 0, -3), None), ((0.0, 1.0, 0.1), None)])
def test_arange_bounds_and_steps(args):
    """An integer arange truncates its bounds and step first; a zero step or one pointing
    away from the end is refused."""
    bounds, dtype = args

    def outcome(L):
        try:
            r = L.arange(*bounds, **({"dtype": getattr(L, dtype)} if dtype else {}))
        except Exception as e:  # noqa: BLE001 - the class is what we compare
            return type(e).__name__
        return str(r.dtype), r.tolist()

    assert outcome(adcompile) == outcome(torch)


def _cross_cases(L):
    rng = np.random.default_rng(0)
    a, b, c = (L.tensor(rng.standard_normal(s)) for s in ((4, 3), (1, 3), (3, 2, 3)))
    za, zb = (L.tensor(rng.standard_normal(s) + 1j * rng.standard_normal(s)) for s in ((4, 3), (1, 3)))
    return {
        "rows_broadcast": (lambda x, y: L.linalg.cross(x, y), (a, b)),
        "dim0": (lambda x, y: L.linalg.cross(x, y, dim=0), (c, c.flip(1))),
        "method": (lambda x, y: x.cross(y, dim=-1), (a, a.flip(0))),
        "torch_cross_default_dim": (lambda x, y: L.cross(x, y), (c[:, 0].T, c[:, 1].T)),
        "complex": (lambda x, y: L.linalg.cross(x, y), (za, zb)),
    }


@pytest.mark.parametrize("case", list(_cross_cases(torch)))
def test_cross_values_gradients_and_graph(case):
    def run(L):
        fn, args = _cross_cases(L)[case]
        args = [x.detach().requires_grad_() for x in args]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
        loss = (out * out.conj()).real.sum() if out.is_complex() else (out * out).sum()
        grads = L.autograd.grad(loss, args, create_graph=True)
        second = L.autograd.grad(sum((g * g).sum().real if g.is_complex() else (g * g).sum()
                                     for g in grads), args)
        return (type(out.grad_fn).__name__, [out.detach().numpy()]
                + [g.detach().numpy() for g in grads] + [g.numpy() for g in second])

    ours, theirs = run(adcompile), run(torch)
    assert ours[0] == theirs[0]
    for o, t in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes,dim", [(((2, 4), (2, 4)), -1), (((3, 2), (3, 2)), -1),
                                        (((2, 3), (3,)), -1), (((2, 3), (4, 3)), -1),
                                        (((3,), (3,)), 1)])
def test_cross_refusals(shapes, dim):
    def kind(L):
        try:
            L.linalg.cross(L.ones(*shapes[0]), L.ones(*shapes[1]), dim=dim)
        except Exception as e:  # noqa: BLE001 - the class is what we compare
            return type(e).__name__

    assert kind(adcompile) == kind(torch)


def test_right_shape_keeps_the_storage_and_warns_nothing():
    out = adcompile.empty(3)
    data = out._data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        adcompile.exp(adcompile.zeros(3), out=out)
    assert out._data is data and out.tolist() == [1.0, 1.0, 1.0]


def test_resize_warning_names_the_call_site():
    with pytest.warns(UserWarning) as caught:
        adcompile.add(adcompile.ones(2), 1, out=adcompile.empty(3))
    assert caught[0].filename == __file__
