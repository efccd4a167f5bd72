"""Optimizers (AdamW ... RAdam) and learning-rate schedulers, differential against PyTorch 2.13:
every option in the tables trains the same small model for 50 steps in both libraries and the
parameters must agree after every step; schedules must give the same learning rates."""

import numpy as np
import pytest
import torch

import adcompile

STEPS = 50


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))


def _data(lib):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    return lib.tensor(x), lib.tensor(y)


def _loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


def _trajectory(lib, make_opt, make_sched=None, steps=STEPS):
    model = _model(lib)
    x, y = _data(lib)
    opt = make_opt(lib, model.parameters())
    sched = make_sched(lib, opt) if make_sched else None
    trace = []
    for _ in range(steps):
        opt.zero_grad()
        loss = _loss(model, x, y)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step(loss.item()) if _is_plateau(lib, sched) else sched.step()
        trace.append(([p.detach().numpy().copy() for p in model.parameters()],
                      [g["lr"] for g in opt.param_groups]))
    return trace, opt


def _is_plateau(lib, sched):
    return isinstance(sched, lib.optim.lr_scheduler.ReduceLROnPlateau)


def _o(name, **kw):
    return lambda lib, ps: getattr(lib.optim, name)(ps, **kw)


OPTIMIZERS = {
    "adamw": _o("AdamW", lr=0.01),
    "adamw_amsgrad": _o("AdamW", lr=0.01, amsgrad=True, weight_decay=0.1),
    "adamw_maximize": _o("AdamW", lr=0.001, maximize=True, betas=(0.8, 0.9), eps=1e-6),
    "rmsprop": _o("RMSprop", lr=0.01),
    "rmsprop_centered": _o("RMSprop", lr=0.002, centered=True, alpha=0.9),
    "rmsprop_momentum": _o("RMSprop", lr=0.001, momentum=0.9, weight_decay=0.01),
    "rmsprop_all": _o("RMSprop", lr=0.001, momentum=0.5, centered=True, maximize=True),
    "adagrad": _o("Adagrad", lr=0.1),
    "adagrad_decay": _o("Adagrad", lr=0.1, lr_decay=0.01, weight_decay=0.01,
                        initial_accumulator_value=0.1),
    "adagrad_maximize": _o("Adagrad", lr=0.01, maximize=True, eps=1e-6),
    "adadelta": _o("Adadelta"),
    "adadelta_options": _o("Adadelta", lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.01),
    "adadelta_maximize": _o("Adadelta", lr=0.1, maximize=True),
    "adamax": _o("Adamax", lr=0.01),
    "adamax_options": _o("Adamax", lr=0.01, betas=(0.8, 0.99), weight_decay=0.01),
    "adamax_maximize": _o("Adamax", lr=0.001, maximize=True),
    "nadam": _o("NAdam", lr=0.01),
    "nadam_options": _o("NAdam", lr=0.01, momentum_decay=0.01, weight_decay=0.01),
    "nadam_decoupled": _o("NAdam", lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    "nadam_maximize": _o("NAdam", lr=0.001, maximize=True),
    "radam": _o("RAdam", lr=0.01),
    "radam_options": _o("RAdam", lr=0.01, betas=(0.5, 0.9), weight_decay=0.01),
    "radam_decoupled": _o("RAdam", lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    "radam_maximize": _o("RAdam", lr=0.001, maximize=True),
}


def _assert_same(trace_a, trace_t):
    for step, ((pa, la), (pt, lt)) in enumerate(zip(trace_a, trace_t)):
        assert la == lt, f"learning rates differ at step {step}"
        for a, b in zip(pa, pt):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"step {step}")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_trajectory(name):
    tt, opt_t = _trajectory(torch, OPTIMIZERS[name])
    ta, opt_a = _trajectory(adcompile, OPTIMIZERS[name])
    _assert_same(ta, tt)
    sa, st = opt_a.state_dict(), opt_t.state_dict()
    assert sa["param_groups"] == st["param_groups"]
    assert sorted(sa["state"]) == sorted(st["state"])
    for k in st["state"]:
        assert sorted(sa["state"][k]) == sorted(st["state"][k])
        for key, v in st["state"][k].items():
            np.testing.assert_allclose(sa["state"][k][key].numpy(), v.numpy(), rtol=1e-4,
                                       atol=1e-5)
    assert repr(opt_a) == repr(opt_t)


def _s(name, *args, **kw):
    return lambda lib, opt: getattr(lib.optim.lr_scheduler, name)(opt, *args, **kw)


SCHEDULERS = {
    "step": _s("StepLR", 7),
    "step_gamma": _s("StepLR", step_size=3, gamma=0.5),
    "multistep": _s("MultiStepLR", [5, 10, 10, 30], gamma=0.3),
    "exponential": _s("ExponentialLR", 0.95),
    "cosine": _s("CosineAnnealingLR", 10),
    "cosine_eta": _s("CosineAnnealingLR", T_max=20, eta_min=0.001),
    "onecycle": _s("OneCycleLR", 0.1, total_steps=60),
    "onecycle_linear": _s("OneCycleLR", max_lr=0.05, epochs=10, steps_per_epoch=5,
                          anneal_strategy="linear", pct_start=0.25),
    "onecycle_three": _s("OneCycleLR", 0.1, total_steps=50, three_phase=True,
                         cycle_momentum=False),
    "lambda": _s("LambdaLR", lambda e: 0.97**e),
    "plateau": _s("ReduceLROnPlateau", patience=2, factor=0.5, threshold=0.05),
    "plateau_max_abs": _s("ReduceLROnPlateau", mode="max", threshold_mode="abs", patience=1,
                          cooldown=2, min_lr=0.002),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
@pytest.mark.parametrize("opt", ["sgd_momentum", "adam"])
def test_scheduler_trajectory(name, opt):
    make_opt = {"sgd_momentum": _o("SGD", lr=0.05, momentum=0.9),
                "adam": _o("Adam", lr=0.01)}[opt]
    tt, opt_t = _trajectory(torch, make_opt, SCHEDULERS[name])
    ta, opt_a = _trajectory(adcompile, make_opt, SCHEDULERS[name])
    _assert_same(ta, tt)
    for ga, gt in zip(opt_a.param_groups, opt_t.param_groups):
        assert {k: v for k, v in ga.items() if k != "params"}.keys() >= \
            {k for k in gt if k not in ("params", "foreach", "fused", "capturable",
                                        "differentiable", "decoupled_weight_decay")}


def test_param_groups_and_zero_grad():
    runs = []
    for lib in (torch, adcompile):
        model = _model(lib)
        x, y = _data(lib)
        first, second = model[0], model[2]
        opt = lib.optim.RMSprop([{"params": first.parameters()},
                                 {"params": second.parameters(), "lr": 0.1, "momentum": 0.5}],
                                lr=0.01)
        _loss(model, x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        zeroed = [float(p.grad.abs().sum()) for p in model.parameters()]
        opt.zero_grad()
        cleared = [p.grad is None for p in model.parameters()]
        runs.append(([p.detach().numpy().copy() for p in model.parameters()], zeroed, cleared,
                     [g["lr"] for g in opt.param_groups], repr(opt)))
    (pa, za, ca, la, ra), (pt, zt, ct, lt, rt) = runs[1], runs[0]
    for a, b in zip(pa, pt):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert (za, ca, la, ra) == (zt, ct, lt, rt)


def test_load_state_dict_resumes_identically():
    full, _ = _trajectory(adcompile, OPTIMIZERS["nadam"], steps=20)
    model = _model(adcompile)
    x, y = _data(adcompile)
    opt = OPTIMIZERS["nadam"](adcompile, model.parameters())
    for _ in range(10):
        opt.zero_grad()
        _loss(model, x, y).backward()
        opt.step()
    saved_model, saved_opt = model.state_dict(), opt.state_dict()
    model2 = _model(adcompile)
    model2.load_state_dict(saved_model)
    opt2 = OPTIMIZERS["nadam"](adcompile, model2.parameters())
    opt2.load_state_dict(saved_opt)
    for _ in range(10):
        opt2.zero_grad()
        _loss(model2, x, y).backward()
        opt2.step()
    for a, b in zip([p.detach().numpy() for p in model2.parameters()], full[-1][0]):
        np.testing.assert_array_equal(a, b)


BAD_ARGS = [
    ("AdamW", dict(lr=-1.0)),
    ("AdamW", dict(betas=(1.0, 0.9))),
    ("RMSprop", dict(alpha=-0.5)),
    ("Adagrad", dict(lr_decay=-1)),
    ("Adadelta", dict(rho=1.5)),
    ("Adamax", dict(eps=-1.0)),
    ("NAdam", dict(momentum_decay=-1.0)),
    ("RAdam", dict(betas=(0.9, -0.1))),
]


@pytest.mark.parametrize("name,kw", BAD_ARGS)
def test_invalid_hyperparameters_raise_value_error(name, kw):
    for lib in (torch, adcompile):
        with pytest.raises(ValueError):
            getattr(lib.optim, name)([lib.zeros(2, requires_grad=True)], **kw)


def test_scheduler_errors():
    for lib in (torch, adcompile):
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
        with pytest.raises(TypeError):
            lib.optim.lr_scheduler.StepLR(object(), 3)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.OneCycleLR(opt, 0.1)
        with pytest.raises(KeyError):
            lib.optim.lr_scheduler.StepLR(opt, 3, last_epoch=4)


LBFGS_OPTIONS = {
    "default": dict(max_iter=6),
    "short_history": dict(lr=0.5, max_iter=5, history_size=3),
    "tolerances": dict(lr=0.8, max_iter=8, max_eval=6, tolerance_change=1e-4),
}


@pytest.mark.parametrize("name", sorted(LBFGS_OPTIONS))
def test_lbfgs_trajectory(name):
    """Each LBFGS iteration takes float32 dot products (numpy's BLAS against PyTorch's, with
    different summation orders); the first iterations agree to rounding, and over 3 steps of
    up to 8 iterations the differences grow to ~1e-4 (over 100 iterations the two runs part
    visibly), hence the short runs and the tolerances."""
    runs = []
    for lib in (torch, adcompile):
        model = _model(lib)
        x, y = _data(lib)
        opt = lib.optim.LBFGS(model.parameters(), **LBFGS_OPTIONS[name])

        def closure():
            opt.zero_grad()
            loss = _loss(model, x, y)
            loss.backward()
            return loss

        trace = []
        for _ in range(3):
            loss = opt.step(closure)
            trace.append((float(loss.detach()), [p.detach().numpy().copy() for p in model.parameters()],
                          opt.state[next(iter(model.parameters()))]["func_evals"]))
        runs.append(trace)
    for (la, pa, ea), (lt, pt, et) in zip(runs[1], runs[0]):
        assert ea == et
        assert la == pytest.approx(lt, rel=1e-3)
        for a, b in zip(pa, pt):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def test_lbfgs_first_iterations_are_exact():
    runs = []
    for lib in (torch, adcompile):
        model = _model(lib)
        x, y = _data(lib)
        opt = lib.optim.LBFGS(model.parameters(), max_iter=2)

        def closure():
            opt.zero_grad()
            loss = _loss(model, x, y)
            loss.backward()
            return loss

        opt.step(closure)
        runs.append([p.detach().numpy().copy() for p in model.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _rosenbrock_run(lib, options, steps=STEPS):
    x = lib.tensor([-1.5, 2.0], requires_grad=True)
    opt = lib.optim.LBFGS([x], line_search_fn="strong_wolfe", **options)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    trace = []
    for _ in range(steps):
        loss = opt.step(closure)
        trace.append((float(loss.detach()), x.detach().numpy().copy(),
                      opt.state[x]["func_evals"], opt.state[x]["n_iter"]))
    return trace


STRONG_WOLFE_OPTIONS = {
    "default": {},
    "one_iteration": dict(max_iter=2),
    "short_history": dict(lr=0.5, history_size=2, max_iter=3),
    "eval_budget": dict(max_iter=4, max_eval=5),
}


@pytest.mark.parametrize("name", sorted(STRONG_WOLFE_OPTIONS))
def test_lbfgs_strong_wolfe_trajectory_is_exact(name):
    """On a 2-parameter problem every dot product is exact in both libraries, so 50 steps
    of LBFGS with the strong-Wolfe line search (brackets, cubic steps, evaluation counts)
    must agree bit for bit."""
    options = STRONG_WOLFE_OPTIONS[name]
    t, a = _rosenbrock_run(torch, options), _rosenbrock_run(adcompile, options)
    for (lt, xt, et, nt), (la, xa, ea, na) in zip(t, a):
        assert (la, ea, na) == (lt, et, nt)
        np.testing.assert_array_equal(xa, xt)


def test_lbfgs_strong_wolfe_model():
    """On the small MLP the dot products round differently (MKL against OpenBLAS), so the
    runs agree closely for a few steps only."""
    runs = []
    for lib in (torch, adcompile):
        model = _model(lib)
        x, y = _data(lib)
        opt = lib.optim.LBFGS(model.parameters(), max_iter=3, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = _loss(model, x, y)
            loss.backward()
            return loss

        runs.append([(float(opt.step(closure).detach()),
                      [p.detach().numpy().copy() for p in model.parameters()])
                     for _ in range(2)])
    for (lt, pt), (la, pa) in zip(*runs):
        assert la == pytest.approx(lt, rel=1e-4)
        for a, b in zip(pa, pt):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError):
        adcompile.optim.LBFGS(_model(adcompile).parameters(), line_search_fn="armijo")
