"""nn, optim and custom Functions, differential against PyTorch 2.13.

Same initial weights and data in both libraries (our manual_seed reproduces PyTorch's
generator, and weights are also copied explicitly), then values, gradients, graph shapes and
optimizer trajectories are compared."""

import numpy as np
import pytest
import torch

import adcompile


def _chain(t):
    names, node = [], t.grad_fn
    while node is not None:
        names.append(type(node).__name__)
        nxt = [n for n, _ in node.next_functions if n is not None]
        node = nxt[0] if nxt else None
    return names


def _edges(t):
    return [(type(n).__name__ if n else None, i) for n, i in t.grad_fn.next_functions]


def _pair(seed=0, shape=(4, 3)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("in_shape", [(4, 3), (3,), (2, 4, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(in_shape, bias):
    results = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        lin = lib.nn.Linear(3, 5, bias=bias)
        x = lib.tensor(_pair(1, in_shape))
        y = lin(x)
        (y * y).sum().backward()
        grads = [p.grad.numpy().copy() for p in lin.parameters()]
        results.append((y.detach().numpy(), grads, _edges(y), type(y.grad_fn).__name__))
    (yt, gt, et, nt), (ya, ga, ea, na) = results
    np.testing.assert_allclose(ya, yt, rtol=1e-5, atol=1e-6)
    for a, b in zip(ga, gt):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert (na, ea) == (nt, et)


LOSSES = {
    "mse": lambda lib, x, t, c, p: lib.nn.MSELoss()(x, t),
    "mse_sum": lambda lib, x, t, c, p: lib.nn.MSELoss(reduction="sum")(x, t),
    "mse_none": lambda lib, x, t, c, p: lib.nn.MSELoss(reduction="none")(x, t).sum(),
    "l1": lambda lib, x, t, c, p: lib.nn.L1Loss()(x, t),
    "cross_entropy": lambda lib, x, t, c, p: lib.nn.CrossEntropyLoss()(x, c),
    "cross_entropy_sum": lambda lib, x, t, c, p: lib.nn.CrossEntropyLoss(reduction="sum")(x, c),
    "nll": lambda lib, x, t, c, p: lib.nn.functional.nll_loss(x.log_softmax(1), c),
    # nll_loss's weights per row: no row ignored (its fast path), an ignored row, an
    # ignore_index inside the targets' range that no row has
    "nll_ignored_row": lambda lib, x, t, c, p: lib.nn.functional.nll_loss(x, c, ignore_index=3),
    "nll_ignore_absent": lambda lib, x, t, c, p: lib.nn.functional.nll_loss(x, c, ignore_index=2),
    "nll_ignore_negative": lambda lib, x, t, c, p: lib.nn.functional.nll_loss(
        x, c - 1, ignore_index=-1),
    "bce": lambda lib, x, t, c, p: lib.nn.BCELoss()(x.sigmoid(), p),
    "softmax": lambda lib, x, t, c, p: (lib.nn.functional.softmax(x, dim=1) * t).sum(),
    "log_softmax": lambda lib, x, t, c, p: (lib.nn.functional.log_softmax(x, dim=1) * t).sum(),
    "relu_tanh_sigmoid": lambda lib, x, t, c, p: lib.nn.Sequential(
        lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid())(x).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_match_torch(name):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    t = rng.standard_normal((4, 5)).astype(np.float32)
    c = np.array([0, 3, 4, 1])
    p = rng.uniform(0, 1, (4, 5)).astype(np.float32)
    out = []
    for lib in (torch, adcompile):
        xt = lib.tensor(x, requires_grad=True)
        loss = LOSSES[name](lib, xt, lib.tensor(t), lib.tensor(c), lib.tensor(p))
        loss.backward()
        out.append((loss.item(), xt.grad.numpy(), _chain(loss)))
    (lt, gt, ct), (la, ga, ca) = out
    assert la == pytest.approx(lt, rel=1e-5)
    np.testing.assert_allclose(ga, gt, rtol=1e-4, atol=1e-6)
    assert ca == ct


def _train(lib, make_opt, steps=50):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))
    opt = make_opt(lib, model.parameters())
    data = lib.tensor(_pair(7, (16, 4)))
    target = lib.tensor(_pair(8, (16, 2)))
    loss_fn = lib.nn.MSELoss()
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(data), target)
        loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()], loss.item()


OPTIMIZERS = {
    "sgd": lambda lib, ps: lib.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9),
    "sgd_dampening": lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.3),
    "sgd_nesterov": lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda lib, ps: lib.optim.SGD(ps, lr=0.1, weight_decay=0.01),
    "sgd_maximize": lambda lib, ps: lib.optim.SGD(ps, lr=0.001, maximize=True),
    "adam": lambda lib, ps: lib.optim.Adam(ps, lr=0.01),
    "adam_amsgrad": lambda lib, ps: lib.optim.Adam(ps, lr=0.01, amsgrad=True),
    "adam_weight_decay": lambda lib, ps: lib.optim.Adam(ps, lr=0.01, weight_decay=0.1,
                                                        betas=(0.8, 0.99)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_trajectory_matches_torch(name):
    pt, lt = _train(torch, OPTIMIZERS[name])
    pa, la = _train(adcompile, OPTIMIZERS[name])
    for a, b in zip(pa, pt):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert la == pytest.approx(lt, rel=1e-4)


def test_seed_minimisation_trajectory():
    """Seed 002: SGD with momentum 0.5 on x[0]**2 + (x[1]-1)**2, 20 steps."""
    runs = []
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, -1.0], requires_grad=True)
        opt = lib.optim.SGD([x], lr=1, momentum=0.5)
        trace = []
        for _ in range(20):
            opt.zero_grad()
            y = x[0] ** 2 + (x[1] - 1) ** 2
            y.backward()
            opt.step()
            trace.append((y.item(), x.detach().numpy().tolist()))
        runs.append((trace, x._version, x.grad.tolist()))
    assert runs[0] == runs[1]


def test_zero_grad_modes():
    for lib in (torch, adcompile):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([x], lr=0.1)
        (x * x).sum().backward()
        first = x.grad
        opt.zero_grad(set_to_none=False)
        assert x.grad is first and x.grad.tolist() == [0.0, 0.0]
        opt.zero_grad()
        assert x.grad is None


def test_module_registration_and_state_dict():
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
        names = [n for n, _ in model.named_parameters()]
        assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
        assert len(list(model.children())) == 3 and len(list(model.modules())) == 4
        state = model.state_dict()
        assert list(state) == names and not state["0.weight"].requires_grad
        other = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
        other.load_state_dict(state)
        assert all((a == b).all() for a, b in zip(other.parameters(), model.parameters()))
        model.eval()
        assert not model[0].training
        x = lib.ones(1, 2)
        assert model(x).requires_grad
        with lib.no_grad():
            assert not model(x).requires_grad
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        assert type(p).__name__ == "Parameter" and p.is_leaf and p.requires_grad
        assert type(p * 1).__name__ == "Tensor" and isinstance(p, lib.Tensor)


def _custom_functions(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x**3 * scale

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x**2 * ctx.scale, None

    class SplitSign(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            pos, idx = x.clamp(min=0), (x > 0).long()
            ctx.mark_non_differentiable(idx)
            return pos, idx

        @staticmethod
        def backward(ctx, g_pos, g_idx):
            (x,) = ctx.saved_tensors
            return g_pos * (x > 0).to(g_pos.dtype)

    return Cube, SplitSign


def test_custom_function_matches_torch():
    seen = []
    for lib in (torch, adcompile):
        Cube, SplitSign = _custom_functions(lib)
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = Cube.apply(x, 2.0)
        node = y.grad_fn
        obs = [type(node).__name__, _edges(y), node.needs_input_grad]
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        obs += [g.tolist(), gg.tolist(), g.requires_grad]
        pos, idx = SplitSign.apply(x)
        obs += [pos.requires_grad, idx.requires_grad, type(pos.grad_fn).__name__]
        pos.sum().backward()
        obs.append(x.grad.tolist())
        z = Cube.apply(x, 1.0)
        z.sum().backward()
        try:
            z.sum().backward()
            obs.append("second backward ok")
        except RuntimeError:
            obs.append("second backward raises")
        log = []
        w = Cube.apply(x, 1.0)
        w.grad_fn.register_prehook(lambda go: log.append("pre"))
        w.grad_fn.register_hook(lambda gi, go: log.append("post"))
        w.sum().backward()
        obs.append(log)
        seen.append(obs)
    assert seen[0] == seen[1]
