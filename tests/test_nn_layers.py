"""nn layers, losses and functional forms, differential against PyTorch 2.13, from tables.

For every layer: parameters initialised from the same manual_seed, output, gradients of the
input and of every parameter, grad_fn name, state_dict keys and shapes, buffers after the
forward pass, and repr must agree with PyTorch's."""

import warnings

import numpy as np
import pytest
import torch

import adcompile


def _x(shape, seed=0, kind="normal"):
    rng = np.random.default_rng(seed)
    if kind == "index":
        return rng.integers(0, 5, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


# name: (constructor, input shape, input kind, check grad_fn name)
LAYERS = {
    "conv1d": (lambda nn: nn.Conv1d(4, 6, 3), (2, 4, 9), "normal", True),
    "conv1d_options": (lambda nn: nn.Conv1d(4, 6, 3, stride=2, padding=2, dilation=2,
                                            groups=2), (2, 4, 11), "normal", True),
    "conv2d": (lambda nn: nn.Conv2d(3, 5, 3), (2, 3, 7, 6), "normal", True),
    "conv2d_options": (lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2),
                                            dilation=(1, 2), groups=2, bias=False),
                       (2, 4, 8, 7), "normal", True),
    "conv2d_same": (lambda nn: nn.Conv2d(2, 3, 3, padding="same"), (1, 2, 5, 5), "normal",
                    True),
    "conv2d_depthwise": (lambda nn: nn.Conv2d(3, 6, 3, groups=3, padding=1),
                         (2, 3, 5, 5), "normal", True),
    "conv_transpose2d": (lambda nn: nn.ConvTranspose2d(3, 5, 3), (2, 3, 4, 5), "normal", True),
    "conv_transpose2d_options": (lambda nn: nn.ConvTranspose2d(
        4, 6, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
        dilation=(1, 2)), (2, 4, 5, 4), "normal", True),
    "conv_transpose2d_nobias": (lambda nn: nn.ConvTranspose2d(2, 3, 2, stride=2, bias=False),
                                (1, 2, 3, 3), "normal", True),
    "conv_transpose1d": (lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1,
                                                       output_padding=1), (2, 4, 6), "normal",
                         True),
    "maxpool1d": (lambda nn: nn.MaxPool1d(3, 2, 1), (2, 3, 9), "normal", True),
    "maxpool2d": (lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6), "normal", True),
    "maxpool2d_options": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1, dilation=1),
                          (2, 3, 7, 6), "normal", True),
    "maxpool2d_dilation": (lambda nn: nn.MaxPool2d(2, stride=1, dilation=2), (1, 2, 6, 6),
                           "normal", True),
    "avgpool1d": (lambda nn: nn.AvgPool1d(3, 2, 1), (2, 3, 9), "normal", True),
    "avgpool2d": (lambda nn: nn.AvgPool2d(2), (2, 3, 6, 6), "normal", True),
    "avgpool2d_options": (lambda nn: nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 7, 6),
                          "normal", True),
    "adaptive_avgpool2d": (lambda nn: nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5), "normal",
                           False),
    "adaptive_avgpool2d_even": (lambda nn: nn.AdaptiveAvgPool2d(3), (2, 3, 6, 6), "normal",
                                False),
    "batchnorm1d": (lambda nn: nn.BatchNorm1d(3), (5, 3), "normal", True),
    "batchnorm1d_3d": (lambda nn: nn.BatchNorm1d(3, momentum=None), (4, 3, 5), "normal",
                       True),
    "batchnorm2d": (lambda nn: nn.BatchNorm2d(3), (4, 3, 5, 5), "normal", True),
    "batchnorm2d_eval": (lambda nn: nn.BatchNorm2d(3).eval(), (4, 3, 5, 5), "normal", True),
    "batchnorm2d_noaffine": (lambda nn: nn.BatchNorm2d(3, affine=False, eps=1e-3,
                                                       momentum=0.3), (4, 3, 2, 2), "normal",
                             True),
    "batchnorm2d_nostats": (lambda nn: nn.BatchNorm2d(3, track_running_stats=False),
                            (4, 3, 2, 2), "normal", True),
    "layernorm": (lambda nn: nn.LayerNorm(6), (3, 4, 6), "normal", True),
    "layernorm_2d": (lambda nn: nn.LayerNorm((4, 6), eps=1e-3, bias=False), (3, 4, 6),
                     "normal", True),
    "groupnorm": (lambda nn: nn.GroupNorm(2, 4), (3, 4, 5), "normal", True),
    "groupnorm_2d": (lambda nn: nn.GroupNorm(1, 4, affine=False), (3, 4, 2, 3), "normal",
                     True),
    "embedding": (lambda nn: nn.Embedding(5, 3), (4, 2), "index", True),
    "embedding_padding": (lambda nn: nn.Embedding(5, 3, padding_idx=1), (6,), "index", True),
    "dropout_eval": (lambda nn: nn.Dropout(0.3).eval(), (3, 4), "normal", False),
    "flatten": (lambda nn: nn.Flatten(), (2, 3, 4), "normal", True),
    "identity": (lambda nn: nn.Identity(), (2, 3), "normal", False),
    "gelu": (lambda nn: nn.GELU(), (3, 4), "normal", True),
    "gelu_tanh": (lambda nn: nn.GELU(approximate="tanh"), (3, 4), "normal", True),
    "silu": (lambda nn: nn.SiLU(), (3, 4), "normal", True),
    "leaky_relu": (lambda nn: nn.LeakyReLU(0.2), (3, 4), "normal", True),
    "elu": (lambda nn: nn.ELU(alpha=0.7), (3, 4), "normal", True),
    "softplus": (lambda nn: nn.Softplus(beta=2.0, threshold=1.0), (3, 4), "normal", True),
    "softmax": (lambda nn: nn.Softmax(dim=1), (3, 4), "normal", True),
    "log_softmax": (lambda nn: nn.LogSoftmax(dim=-1), (3, 4), "normal", True),
    "linear": (lambda nn: nn.Linear(4, 3), (2, 4), "normal", True),
    "sequential_cnn": (lambda nn: nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4),
                                                nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                                nn.Linear(36, 3)), (2, 1, 8, 8), "normal",
                       True),
}


def _run_layer(lib, name):
    make, shape, kind, _ = LAYERS[name]
    lib.manual_seed(0)
    layer = make(lib.nn)
    init = {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}
    x = lib.tensor(_x(shape, 1, kind), requires_grad=kind != "index")
    y = layer(x)
    w = lib.tensor(_x(tuple(y.shape), 2))
    (y * w).sum().backward()
    return dict(
        init=init, y=y.detach().numpy(), fn=_node_names(y.grad_fn) if y.grad_fn else None,
        gx=None if kind == "index" else x.grad.numpy(),
        grads={k: p.grad.numpy() for k, p in layer.named_parameters()},
        after={k: v.detach().numpy() for k, v in layer.state_dict().items()},
        repr=repr(layer))


def _close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name):
    t, a = _run_layer(torch, name), _run_layer(adcompile, name)
    assert a["repr"] == t["repr"]
    for key in ("init", "after", "grads"):
        assert list(a[key]) == list(t[key]), key
        for k in t[key]:
            assert a[key][k].shape == t[key][k].shape
            _close(a[key][k], t[key][k], f"{key} {k}")
    _close(a["y"], t["y"], "output")
    if t["gx"] is not None:
        _close(a["gx"], t["gx"], "input gradient")
    if LAYERS[name][3]:
        assert a["fn"] == t["fn"]


def _ce(**kw):
    return lambda lib, x, c, p: lib.nn.CrossEntropyLoss(**kw)(x, c)


# name: loss(lib, logits (6, 4), class targets (6,), probabilities (6, 4))
LOSSES = {
    "ce_weight": lambda lib, x, c, p: lib.nn.CrossEntropyLoss(
        weight=lib.tensor([1.0, 2.0, 0.5, 1.5]))(x, c),
    "ce_ignore": _ce(ignore_index=2),
    "ce_smoothing": _ce(label_smoothing=0.2),
    "ce_smoothing_weight_ignore": lambda lib, x, c, p: lib.nn.CrossEntropyLoss(
        weight=lib.tensor([1.0, 2.0, 0.5, 1.5]), ignore_index=1, label_smoothing=0.1)(x, c),
    "ce_smoothing_sum": _ce(label_smoothing=0.3, reduction="sum"),
    "ce_smoothing_none": lambda lib, x, c, p: (_ce(label_smoothing=0.3, reduction="none")(
        lib, x, c, p) * lib.arange(6.0)).sum(),
    "ce_probs": lambda lib, x, c, p: lib.nn.CrossEntropyLoss()(x, p),
    "ce_probs_smoothing": _ce(label_smoothing=0.25),
    "ce_kdim": lambda lib, x, c, p: lib.nn.CrossEntropyLoss(label_smoothing=0.1)(
        x.reshape(2, 3, 4).permute(0, 2, 1), c.reshape(2, 3)),
    "nll_weight": lambda lib, x, c, p: lib.nn.NLLLoss(weight=lib.tensor([1.0, 2.0, 0.5, 1.5]))(
        x.log_softmax(1), c),
    "bce_weight": lambda lib, x, c, p: lib.nn.BCELoss(weight=lib.tensor([1.0, 2.0, 0.5, 1.5]))(
        x.sigmoid(), p),
    "bce_logits": lambda lib, x, c, p: lib.nn.BCEWithLogitsLoss()(x, p),
    "bce_logits_weights": lambda lib, x, c, p: lib.nn.BCEWithLogitsLoss(
        weight=lib.tensor([1.0, 2.0, 0.5, 1.5]), pos_weight=lib.tensor([3.0, 1.0, 0.5, 2.0]))(
        x * 3, p),
    "smooth_l1": lambda lib, x, c, p: lib.nn.SmoothL1Loss()(x, p * 2),
    "smooth_l1_beta": lambda lib, x, c, p: lib.nn.SmoothL1Loss(beta=0.3, reduction="sum")(
        x, p),
    "huber": lambda lib, x, c, p: lib.nn.HuberLoss(delta=0.5)(x, p * 2),
    "kl_div": lambda lib, x, c, p: lib.nn.KLDivLoss(reduction="batchmean")(
        x.log_softmax(1), p),
    "kl_div_log_target": lambda lib, x, c, p: lib.nn.KLDivLoss(reduction="sum",
                                                               log_target=True)(
        x.log_softmax(1), p.log()),
    "cosine_embedding": lambda lib, x, c, p: lib.nn.CosineEmbeddingLoss(margin=0.1)(
        x, p, lib.tensor([1, -1, 1, -1, -1, 1])),
    "pad_constant": lambda lib, x, c, p: (lib.nn.functional.pad(x, (1, 2, -1, 1), value=0.5)
                                          ** 2).sum(),
    "pad_reflect": lambda lib, x, c, p: (lib.nn.functional.pad(
        x.reshape(2, 3, 4), (2, 1), mode="reflect") ** 2).sum(),
    "pad_replicate": lambda lib, x, c, p: (lib.nn.functional.pad(
        x.reshape(1, 2, 3, 4), (1, 2, 2, 0), mode="replicate") ** 2).sum(),
    "pad_circular": lambda lib, x, c, p: (lib.nn.functional.pad(
        x.reshape(1, 2, 3, 4), (1, 2, 2, 1), mode="circular") ** 2).sum(),
    "normalize": lambda lib, x, c, p: (lib.nn.functional.normalize(x) * p).sum(),
    "normalize_p1": lambda lib, x, c, p: (lib.nn.functional.normalize(x, p=1, dim=0) * p).sum(),
    "conv2d_functional": lambda lib, x, c, p: lib.nn.functional.conv2d(
        x.reshape(1, 1, 6, 4), p.reshape(6, 1, 2, 2)[:3], stride=2).pow(2).sum(),
}


def _loss_run(lib, name):
    rng = np.random.default_rng(5)
    x = lib.tensor(rng.standard_normal((6, 4)).astype(np.float32), requires_grad=True)
    c = lib.tensor(np.array([0, 1, 2, 3, 2, 1], np.int64))
    probs = rng.random((6, 4)).astype(np.float32) + 0.05
    p = lib.tensor(probs / probs.sum(1, keepdims=True))
    loss = LOSSES[name](lib, x, c, p)
    loss.backward()
    return loss.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name):
    (lt, gt), (la, ga) = _loss_run(torch, name), _loss_run(adcompile, name)
    _close(la, lt, "loss")
    _close(ga, gt, "gradient")


# name: loss(lib, x (2, 3) requiring grad, t (2, 3), a positive target p (2, 3)): PyTorch's
# grad_fn graph and what its nodes save (grad_fn._saved_*), where runtime.function.SAVED_NAMES
# names it (huber and smooth L1 have nodes of their own; kl_div is a composition)
LOSS_GRAPHS = {
    "huber": lambda L, x, t, p: L.nn.functional.huber_loss(x, t, delta=0.7),
    "huber_none": lambda L, x, t, p: L.nn.functional.huber_loss(x, t, reduction="none"),
    "huber_sum_weight": lambda L, x, t, p: L.nn.functional.huber_loss(
        x, t, reduction="sum", weight=p),
    "huber_target_grad": lambda L, x, t, p: L.nn.functional.huber_loss(t, x * 2, delta=2.0),
    "smooth_l1": lambda L, x, t, p: L.nn.functional.smooth_l1_loss(x, t, beta=0.5),
    "smooth_l1_sum": lambda L, x, t, p: L.nn.functional.smooth_l1_loss(x, t, reduction="sum"),
    "smooth_l1_beta0": lambda L, x, t, p: L.nn.functional.smooth_l1_loss(x, t, beta=0.0),
    "mse": lambda L, x, t, p: L.nn.functional.mse_loss(x, t, reduction="sum"),
    "kl_none": lambda L, x, t, p: L.nn.functional.kl_div(x, p, reduction="none"),
    "kl_sum": lambda L, x, t, p: L.nn.functional.kl_div(x, p, reduction="sum"),
    "kl_batchmean": lambda L, x, t, p: L.nn.functional.kl_div(x, p, reduction="batchmean"),
    "kl_batchmean_0dim": lambda L, x, t, p: L.nn.functional.kl_div(x[0, 0], p[0, 0],
                                                                   reduction="batchmean"),
    "kl_log_target": lambda L, x, t, p: L.nn.functional.kl_div(x, t, reduction="none",
                                                               log_target=True),
    "kl_target_grad": lambda L, x, t, p: L.nn.functional.kl_div(t, x.exp(), reduction="sum"),
    "sgn": lambda L, x, t, p: x.sgn(),
}


def _saved_attributes(node, names=None):
    """{node name: {attribute: value}} over the graph below `node` for the nodes whose
    saved values runtime.function.SAVED_NAMES names; `names` (our run's answer): read the
    attributes we show (tests/test_saved_values.py compares the full sets)."""
    from runtime.function import SAVED_NAMES

    out, stack, seen = {}, [node], set()
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(m for m, _ in n.next_functions)
        kind = type(n).__name__
        if kind in SAVED_NAMES:
            shown = names.get(kind, ()) if names else [a for a in dir(n) if a.startswith("_saved_")]
            out[kind] = {a: _shown(getattr(n, a)) for a in shown}
    return out


def _shown(value):
    if not hasattr(value, "shape"):
        return value
    return (str(value.dtype), tuple(value.shape), value.detach().numpy().round(5).tolist())


@pytest.mark.parametrize("name", sorted(LOSS_GRAPHS))
def test_loss_graph_and_saved_values_match_torch(name):
    runs = []
    for lib in (adcompile, torch):
        x = lib.tensor(_x((2, 3), 7), requires_grad=True)
        t = lib.tensor(_x((2, 3), 8))
        p = lib.tensor(np.abs(_x((2, 3), 9)) + 0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = LOSS_GRAPHS[name](lib, x, t, p)
        names = runs and runs[0][1]
        runs.append((_graph(y.grad_fn, 4), _saved_attributes(y.grad_fn, names)))
    assert runs[0] == runs[1]


def test_kl_div_mean_warns_and_bad_arguments_raise_as_torch():
    for lib in (torch, adcompile):
        F = lib.nn.functional
        with pytest.warns(UserWarning):
            F.kl_div(lib.zeros(2, 3), lib.ones(2, 3))
        with pytest.raises(RuntimeError):
            F.huber_loss(lib.zeros(3), lib.ones(3), delta=0.0)
        with pytest.raises(ValueError):
            F.huber_loss(lib.zeros(2, 3), lib.ones(2, 3), weight=lib.ones(3))
        assert F.huber_loss(lib.zeros(3), lib.ones(3, dtype=lib.float64)).dtype == lib.float32


def test_one_hot_and_errors():
    for lib in (torch, adcompile):
        assert lib.nn.functional.one_hot(lib.tensor([0, 2, 1]), 4).numpy().tolist() == \
            [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
        with pytest.raises(RuntimeError):
            lib.nn.Conv2d(3, 4, 3)(lib.ones(1, 2, 5, 5))
        with pytest.raises(ValueError):
            lib.nn.Conv2d(3, 4, 3, groups=2)
        with pytest.raises(ValueError):
            lib.nn.BatchNorm2d(3)(lib.ones(2, 3))
        with pytest.raises(ValueError):
            lib.nn.BatchNorm1d(3)(lib.ones(1, 3))
        with pytest.raises(IndexError):
            lib.nn.Embedding(3, 2)(lib.tensor([3]))
        with pytest.raises(RuntimeError):
            lib.nn.CrossEntropyLoss(label_smoothing=1.5)(lib.ones(2, 3), lib.tensor([0, 1]))


def test_containers_match_torch():
    runs = []
    for lib in (torch, adcompile):
        nn = lib.nn
        lib.manual_seed(0)
        net = nn.Module()
        net.blocks = nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.ReLU()])
        net.blocks.append(nn.Linear(2, 1))
        net.heads = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.Tanh()})
        net.scales = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3)])
        net.named = nn.ParameterDict({"w": nn.Parameter(lib.ones(2, 3))})
        keys = {k: tuple(v.shape) for k, v in net.state_dict().items()}
        runs.append((keys, repr(net), repr(net.scales), repr(net.named), len(net.blocks),
                     repr(net.blocks[1:3]), [type(m).__name__ for m in net.heads.values()]))
    assert runs[0] == runs[1]


def test_clip_grad_matches_torch():
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Linear(4, 2))
        (model(lib.ones(5, 3) * 3) ** 2).sum().backward()
        total = lib.nn.utils.clip_grad_norm_(model.parameters(), 1.5)
        after = [p.grad.numpy().copy() for p in model.parameters()]
        inf_total = lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type="inf")
        lib.nn.utils.clip_grad_value_(model.parameters(), 0.01)
        runs.append((float(total), after, float(inf_total),
                     [p.grad.numpy().copy() for p in model.parameters()]))
    (ta, aa, ia, va), (tt, at, it, vt) = runs[1], runs[0]
    assert ta == pytest.approx(tt, rel=1e-5) and ia == pytest.approx(it, rel=1e-5)
    for a, b in zip(aa + va, at + vt):
        _close(a, b, "clipped gradient")


def test_conv_double_backward_matches_torch():
    runs = []
    for lib in (torch, adcompile):
        x = lib.tensor(_x((1, 2, 5, 5)), requires_grad=True)
        w = lib.tensor(_x((3, 2, 3, 3), 1), requires_grad=True)
        y = lib.nn.functional.conv2d(x, w, padding=1)
        (gx,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        runs.append((gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*runs):
        _close(b, a, "double backward")


def test_conv_transpose_functional_matches_torch():
    """F.conv_transpose2d with output_size on the module, and double backward through it."""
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        m = lib.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
        x = lib.tensor(_x((1, 2, 4, 4)), requires_grad=True)
        y = m(x, output_size=[8, 8])
        w = lib.tensor(_x((2, 3, 2, 2), 1), requires_grad=True)
        z = lib.nn.functional.conv_transpose2d(x, w, stride=(1, 2), padding=1, groups=2)
        (gx,) = lib.autograd.grad((z * z).sum() + y.sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        runs.append((tuple(y.shape), y.detach().numpy(), gx.detach().numpy(), x.grad.numpy(),
                     w.grad.numpy(), type(z.grad_fn).__name__))
    assert runs[0][0] == runs[1][0] and runs[0][5] == runs[1][5]
    for a, b in zip(runs[0][1:5], runs[1][1:5]):
        _close(b, a, "conv_transpose2d")


def _flatten_outputs(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten_outputs(o)]
    return [] if out is None else [out]


# name: (constructor, call(module, lib, inputs) -> outputs, input shapes)
SEQUENCE_LAYERS = {
    "rnn": (lambda nn: nn.RNN(3, 4), lambda m, lib, xs: m(xs[0]), [(5, 2, 3)]),
    "rnn_relu_2layer": (lambda nn: nn.RNN(3, 4, num_layers=2, nonlinearity="relu",
                                          bias=False), lambda m, lib, xs: m(xs[0]),
                        [(5, 2, 3)]),
    "rnn_bi_batch_first": (lambda nn: nn.RNN(3, 4, bidirectional=True, batch_first=True),
                           lambda m, lib, xs: m(xs[0]), [(2, 5, 3)]),
    "gru_unbatched_h0": (lambda nn: nn.GRU(3, 4, bias=False), lambda m, lib, xs: m(xs[0], xs[1]),
                         [(5, 3), (1, 4)]),
    "lstm": (lambda nn: nn.LSTM(3, 4), lambda m, lib, xs: m(xs[0]), [(5, 2, 3)]),
    "lstm_bi_batch_first": (lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True,
                                               bidirectional=True),
                            lambda m, lib, xs: m(xs[0]), [(2, 5, 3)]),
    "lstm_h0": (lambda nn: nn.LSTM(3, 4), lambda m, lib, xs: m(xs[0], (xs[1], xs[2])),
                [(4, 2, 3), (1, 2, 4), (1, 2, 4)]),
    "lstm_unbatched": (lambda nn: nn.LSTM(3, 4), lambda m, lib, xs: m(xs[0]), [(5, 3)]),
    "gru": (lambda nn: nn.GRU(3, 4), lambda m, lib, xs: m(xs[0]), [(5, 2, 3)]),
    "gru_bi_h0": (lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True),
                  lambda m, lib, xs: m(xs[0], xs[1]), [(5, 2, 3), (4, 2, 4)]),
    "mha_self": (lambda nn: nn.MultiheadAttention(8, 2),
                 lambda m, lib, xs: m(xs[0], xs[0], xs[0]), [(5, 2, 8)]),
    "mha_cross_batch_first": (lambda nn: nn.MultiheadAttention(8, 4, batch_first=True),
                              lambda m, lib, xs: m(xs[0], xs[1], xs[1],
                                                   average_attn_weights=False),
                              [(2, 3, 8), (2, 5, 8)]),
    "mha_masks": (lambda nn: nn.MultiheadAttention(4, 2, bias=False),
                  lambda m, lib, xs: m(xs[0], xs[1], xs[2],
                                       attn_mask=lib.tensor(np.triu(np.ones((3, 4), bool), 1)),
                                       key_padding_mask=lib.tensor(
                                           np.array([[False] * 3 + [True], [False] * 4]))),
                  [(3, 2, 4), (4, 2, 4), (4, 2, 4)]),
    "sdpa": (lambda nn: nn.Identity(),
             lambda m, lib, xs: lib.nn.functional.scaled_dot_product_attention(
                 xs[0], xs[1], xs[2], is_causal=True), [(2, 3, 4, 5)] * 3),
}


def _run_sequence(lib, name):
    make, call, shapes = SEQUENCE_LAYERS[name]
    lib.manual_seed(0)
    layer = make(lib.nn)
    init = {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}
    xs = [lib.tensor(_x(s, 10 + i), requires_grad=True) for i, s in enumerate(shapes)]
    outs = _flatten_outputs(call(layer, lib, xs))
    total = sum((o * lib.tensor(_x(tuple(o.shape), 20 + i))).sum() for i, o in enumerate(outs))
    total.backward()
    return dict(init=init, outs=[o.detach().numpy() for o in outs],
                gx=[x.grad.numpy() for x in xs],
                grads={k: p.grad.numpy() for k, p in layer.named_parameters()},
                repr=repr(layer))


@pytest.mark.parametrize("name", sorted(SEQUENCE_LAYERS))
def test_sequence_layer_matches_torch(name):
    t, a = _run_sequence(torch, name), _run_sequence(adcompile, name)
    assert a["repr"] == t["repr"]
    for key in ("init", "grads"):
        assert list(a[key]) == list(t[key]), key
        for k in t[key]:
            _close(a[key][k], t[key][k], f"{key} {k}")
    assert [o.shape for o in a["outs"]] == [o.shape for o in t["outs"]]
    for i, (x, y) in enumerate(zip(a["outs"] + a["gx"], t["outs"] + t["gx"])):
        _close(x, y, f"output/input gradient {i}")


INITS = {
    "orthogonal_wide": ("orthogonal_", (4, 6), dict(gain=2.0)),
    "orthogonal_tall": ("orthogonal_", (6, 4), {}),
    "orthogonal_conv": ("orthogonal_", (3, 2, 2, 2), {}),
    "eye": ("eye_", (3, 5), {}),
    "dirac": ("dirac_", (4, 2, 3, 3), dict(groups=2)),
    "xavier_normal": ("xavier_normal_", (3, 4), dict(gain=0.5)),
    "xavier_uniform": ("xavier_uniform_", (3, 4, 2), {}),
    "kaiming_normal": ("kaiming_normal_", (3, 4), dict(mode="fan_out", nonlinearity="relu")),
    "kaiming_uniform": ("kaiming_uniform_", (5, 2), dict(a=0.1)),
    "trunc_normal": ("trunc_normal_", (40, 50), {}),
    "trunc_normal_shifted": ("trunc_normal_", (7, 3), dict(mean=1.0, std=0.5, a=0.2, b=1.1)),
    "trunc_normal_narrow": ("trunc_normal_", (30, 20), dict(mean=0.5, std=2.0, a=-0.3, b=0.4)),
    "trunc_normal_tail": ("trunc_normal_", (9, 11), dict(std=0.5, a=0.6, b=3.0)),
}


@pytest.mark.parametrize("name", sorted(INITS))
def test_init_matches_torch(name):
    fn, shape, kw = INITS[name]
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        t = lib.empty(*shape)
        getattr(lib.nn.init, fn)(t, **kw)
        runs.append((t.numpy().copy(), float(lib.rand(1)[0])))
    _close(runs[1][0], runs[0][0], fn)
    assert runs[1][1] == runs[0][1]


def test_forward_hooks_match_torch():
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
        seen = []
        h1 = model[0].register_forward_hook(lambda m, args, out: seen.append(
            ("out", tuple(out.shape))))
        model[2].register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        model[2].register_forward_hook(lambda m, args, out: out + 1)
        model.register_forward_pre_hook(lambda m, args: seen.append(("pre", len(args))),
                                        prepend=True)
        x = lib.ones(5, 3)
        first = model(x).detach().numpy().copy()
        h1.remove()
        model(x)
        runs.append((first, seen))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-6)
    assert runs[1][1] == runs[0][1]


@pytest.mark.parametrize("n", [1, 2])
def test_conv_accepts_an_unbatched_input(n):
    """(C, *spatial) input: a batch of one added and removed, as PyTorch does (values,
    gradients, SqueezeBackward1 over ConvolutionBackward0)."""
    seen = []
    for L in (torch, adcompile):
        L.manual_seed(0)
        conv = (L.nn.Conv1d if n == 1 else L.nn.Conv2d)(2, 3, 2).double()
        x = L.tensor(np.random.default_rng(n).standard_normal((2,) + (4,) * n),
                     requires_grad=True)
        y = conv(x)
        y.sum().backward()
        seen.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__,
                     type(y.grad_fn.next_functions[0][0]).__name__))
    (want_y, want_g, *want_names), (got_y, got_g, *got_names) = seen
    np.testing.assert_allclose(got_y, want_y, rtol=1e-10)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-10)
    assert got_names == want_names


def _grad_summary(grads):
    return [None if g is None else (tuple(g.shape), round(float(g.sum()), 4)) for g in grads]


def _node_names(node):
    return (type(node).__name__, [(type(n).__name__ if n is not None else None, i)
                                  for n, i in node.next_functions])


def _run_backward_hooks(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2))
    seen = []
    model[0].register_full_backward_hook(
        lambda m, gi, go: seen.append(("full0", _grad_summary(gi), _grad_summary(go))))
    model[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    model[2].register_full_backward_hook(
        lambda m, gi, go: seen.append(("full2", _grad_summary(gi), _grad_summary(go)))
        or (gi[0] * 2,))
    handle = model.register_full_backward_pre_hook(
        lambda m, go: seen.append(("pre_model", _grad_summary(go))), prepend=True)
    x = lib.ones(5, 3, requires_grad=True)
    y = model(x)
    inner = y.grad_fn.next_functions[0][0].next_functions[0][0]
    graph = [_node_names(y.grad_fn), _node_names(inner)]
    y.sum().backward()
    handle.remove()
    model(x).sum().backward()
    lin = lib.nn.Linear(3, 2)  # no input requires grad: the full hook runs at the outputs
    lin.register_full_backward_hook(
        lambda m, gi, go: seen.append(("no_input", _grad_summary(gi), _grad_summary(go))))
    with pytest.warns(UserWarning):
        lin(lib.ones(2, 3)).sum().backward()
    old = lib.nn.Linear(3, 2)  # the deprecated kind hooks the output's grad_fn
    old.register_backward_hook(lambda m, gi, go: seen.append(("old", _grad_summary(gi))))
    old(x).sum().backward()
    with pytest.raises(RuntimeError):
        old.register_full_backward_hook(lambda m, gi, go: None)
    return seen, graph, x.grad.numpy(), model[0].weight.grad.numpy()


def test_backward_hooks_match_torch():
    t, a = _run_backward_hooks(torch), _run_backward_hooks(adcompile)
    assert a[0] == t[0]
    assert a[1] == t[1]
    _close(a[2], t[2], "input gradient")
    _close(a[3], t[3], "weight gradient")


NORM_DOUBLE_BACKWARD = {
    "batch_norm": (lambda nn: nn.BatchNorm2d(3), (4, 3, 2, 3)),
    "batch_norm_eval": (lambda nn: nn.BatchNorm1d(3).eval(), (4, 3)),
    "layer_norm": (lambda nn: nn.LayerNorm((2, 3)), (4, 2, 3)),
    "group_norm": (lambda nn: nn.GroupNorm(2, 4), (3, 4, 5)),
}


@pytest.mark.parametrize("name", sorted(NORM_DOUBLE_BACKWARD))
def test_norm_double_backward_matches_torch(name):
    """The fused nodes' rules rerun on Tensors recompute the statistics, so gradients of
    gradients (through the mean and variance too) agree with PyTorch's."""
    make, shape = NORM_DOUBLE_BACKWARD[name]
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        layer = make(lib.nn)
        with lib.no_grad():
            for p in layer.parameters():
                p.add_(lib.tensor(_x(tuple(p.shape), 3)))
        x = lib.tensor(_x(shape, 4), requires_grad=True)
        y = layer(x)
        (gx,) = lib.autograd.grad((y * lib.tensor(_x(shape, 5))).sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        grads = [x.grad] + [p.grad for p in layer.parameters()]
        runs.append([gx.detach().numpy()] + [None if g is None else g.numpy() for g in grads])
    for a, b in zip(runs[1], runs[0]):
        assert (a is None) == (b is None)
        if a is not None:
            _close(a, b, name)


def _graph(node, depth):
    """The graph below `node`, `depth` levels down, as a list: each node once, in the order a
    depth-first walk meets it, as (name, [(index of the input node in the list, output
    number)]). Shared nodes are listed once, so a graph that reuses a node (a GRU's hidden
    state feeds three gates) costs its size to describe, not its number of paths."""
    seen, listed = {}, []

    def visit(n, left):
        if n is None:
            return None
        if n not in seen:
            seen[n] = len(listed)
            listed.append(None)
            edges = [] if left == 0 else [(visit(m, left - 1), i) for m, i in n.next_functions]
            listed[seen[n]] = (type(n).__name__, edges)
        return seen[n]

    visit(node, depth)
    return listed


LSTM_GRAPHS = {
    "plain": (dict(), lambda lib: [(5, 3, 4)]),
    "two_layers": (dict(num_layers=2), lambda lib: [(5, 3, 4)]),
    "bidirectional": (dict(bidirectional=True, num_layers=2), lambda lib: [(5, 3, 4)]),
    "batch_first": (dict(batch_first=True, bias=False), lambda lib: [(3, 5, 4)]),
    "unbatched": (dict(), lambda lib: [(5, 4)]),
    "h0": (dict(), lambda lib: [(5, 3, 4), (1, 3, 6), (1, 3, 6)]),
}


@pytest.mark.parametrize("name", sorted(LSTM_GRAPHS))
def test_lstm_graph_matches_torch(name):
    """A float32 LSTM records one MkldnnRnnLayerBackward0 node per layer and direction,
    wired (cat, stack, select, transpose/clone, squeeze) as PyTorch's CPU LSTM wires it."""
    kw, shapes = LSTM_GRAPHS[name]
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(4, 6, **kw)
        xs = [lib.tensor(_x(s, 30 + i), requires_grad=True) for i, s in enumerate(shapes(lib))]
        out, (h, c) = lstm(xs[0], (xs[1], xs[2])) if len(xs) == 3 else lstm(xs[0])
        graphs = [_graph(t.grad_fn, 4) for t in (out, h, c)]
        (out.sum() + (h * h).sum() + c.sum()).backward()
        runs.append((graphs, [x.grad.numpy() for x in xs],
                     {k: p.grad.numpy() for k, p in lstm.named_parameters()}))
    assert runs[1][0] == runs[0][0]
    for a, b in zip(runs[1][1], runs[0][1]):
        _close(a, b, "input gradient")
    for k in runs[0][2]:
        _close(runs[1][2][k], runs[0][2][k], k)


@pytest.mark.parametrize("options", [dict(kernel_size=2), dict(kernel_size=3, stride=2,
                                                                 padding=1),
                                     dict(kernel_size=2, stride=1, dilation=2),
                                     dict(kernel_size=(2, 3)), dict(kernel_size=(3, 1)),
                                     dict(kernel_size=(7, 4))])
def test_max_pool_ties_nan_and_indices_match_torch(options):
    x = _x((2, 3, 7, 8))
    x[0, 1, 2, 3] = np.nan
    x[1, 1, 2, 3] = x[1, 1, 2, 4]  # a tie: the first maximum is picked
    runs = []
    for lib in (torch, adcompile):
        t = lib.tensor(x, requires_grad=True)
        y, i = lib.nn.functional.max_pool2d(t, return_indices=True, **options)
        y.sum().backward()
        runs.append((y.detach().numpy(), i.numpy(), t.grad.numpy()))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_max_pool_window_of_more_than_127_elements_matches_torch():
    """A window's element numbers no longer fit the int8 picks of small windows."""
    x = _x((2, 2, 26, 24))
    runs = []
    for lib in (torch, adcompile):
        t = lib.tensor(x, requires_grad=True)
        y, i = lib.nn.functional.max_pool2d(t, (13, 12), return_indices=True)
        y.sum().backward()
        runs.append((y.detach().numpy(), i.numpy(), t.grad.numpy()))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(k for k in SEQUENCE_LAYERS if k != "sdpa"))
def test_sequence_graph_matches_torch(name):
    """Every node down to the leaves must match PyTorch's CPU graph: the fused LSTM layer
    nodes, the composed RNN / GRU cells (input projection for all steps, unbind,
    unsafe_chunk, stack, cat), MultiheadAttention's packed in-projection (views, selects,
    splits) and baddbmm under a mask."""
    make, call, shapes = SEQUENCE_LAYERS[name]
    graphs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        layer = make(lib.nn)
        xs = [lib.tensor(_x(s, 10 + i), requires_grad=True) for i, s in enumerate(shapes)]
        graphs.append([_graph(o.grad_fn, 30) for o in _flatten_outputs(call(layer, lib, xs))])
    assert graphs[1] == graphs[0]


@pytest.mark.parametrize("options", [dict(), dict(bidirectional=True, bias=False)])
def test_lstm_double_backward_matches_torch(options):
    """On Tensors the fused LSTM rule recomputes the layer with recorded operations, so
    gradients of its gradients agree with PyTorch's."""
    runs = []
    for lib in (torch, adcompile):
        lib.manual_seed(0)
        lstm = lib.nn.LSTM(3, 4, **options)
        x = lib.tensor(_x((5, 2, 3), 7), requires_grad=True)
        h0 = lib.tensor(_x((1 + lstm.bidirectional, 2, 4), 8), requires_grad=True)
        c0 = lib.tensor(_x((1 + lstm.bidirectional, 2, 4), 9), requires_grad=True)
        out, (h, c) = lstm(x, (h0, c0))
        total = (out * lib.tensor(_x(tuple(out.shape), 5))).sum() + (h * c).sum()
        gx, gh = lib.autograd.grad(total, (x, h0), create_graph=True)
        ((gx * gx).sum() + (gh * gh).sum()).backward()
        grads = [x.grad, h0.grad, c0.grad] + [p.grad for p in lstm.parameters()]
        runs.append([gx.detach().numpy(), gh.detach().numpy()] + [g.numpy() for g in grads])
    for a, b in zip(runs[1], runs[0]):
        _close(a, b, "LSTM double backward")
