"""Issue 15, items 10-11: behaviours that real PyTorch code relies on, each checked against
PyTorch 2.13 itself (the oracle) where it has an observable result.

Covered: torch-order float32 sums and means (bit for bit), linspace and small integer powers
(bit for bit), submodule imports, device queries of a CPU-only library, save/load round trips
that refuse to unpickle by default, the profiler's table, BinaryCrossEntropyWithLogitsBackward0,
`.to(requires_grad=...)`, `_is_view`/`_base`, `equal`, the Parameter printout, Sequential item
assignment, RMSprop, and AccumulateGrad taking over a fresh gradient's buffer.
"""

import importlib
import io
import itertools
import math
import subprocess
import sys

import numpy as np
import pytest

import adcompile

torch = pytest.importorskip("torch")

LIBS = pytest.mark.parametrize("lib", [torch, adcompile], ids=["torch", "adcompile"])


def _pair(fn):
    return fn(torch), fn(adcompile)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# -- float32 sums and means in PyTorch's order ---------------------------------------------

SHAPES = [(1,), (5,), (8,), (17,), (100,), (2000,), (4096,), (33333,), (3, 17), (64, 100),
          (100, 64), (5, 6, 7), (2, 40, 33), (1000, 10), (16, 1, 40)]


def _dims(shape):
    """All dims, and every run of adjacent dims (size-1 dims do not break a run); other sets
    (sum over dims 0 and 2 of three) are added by numpy and not covered here."""
    ndim = len(shape)
    runs = []
    for r in range(1, ndim + 1):
        for c in itertools.combinations(range(ndim), r):
            between = [d for d in range(c[0], c[-1] + 1) if shape[d] != 1 or d in c]
            if all(d in c or shape[d] == 1 for d in between):
                runs.append(c)
    return [None] + runs


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float32_sum_and_mean_match_pytorch_bit_for_bit(shape):
    rng = np.random.default_rng(len(shape) * 1000 + shape[0])
    data = (rng.standard_normal(shape) * rng.uniform(0.1, 100, shape)).astype(np.float32)
    for dims in _dims(shape):
        for reduce in ("sum", "mean"):
            def run(lib):
                t = lib.from_numpy(data.copy())
                out = getattr(t, reduce)() if dims is None else getattr(t, reduce)(dim=dims)
                return out.numpy()
            expected, actual = _pair(run)
            assert _same_bits(expected, actual), (reduce, shape, dims)


def test_gradient_reduced_over_broadcasting_matches_pytorch():
    data = np.random.default_rng(2).standard_normal(2000).astype(np.float32)

    def run(lib):
        a = lib.tensor(0.5, requires_grad=True)
        b = lib.tensor(-1.5, requires_grad=True)
        x = lib.from_numpy(data.copy())
        (a + b * x).pow(2).sum().backward()
        return a.grad.numpy(), b.grad.numpy()

    (ea, eb), (aa, ab) = _pair(run)
    assert _same_bits(ea, aa) and _same_bits(eb, ab)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32"])
@pytest.mark.parametrize("start,end,steps", [(-math.pi, math.pi, 2000), (-1, 3, 100),
                                             (0.1, 7.3, 33), (2, -3, 20001), (3, 3, 5),
                                             (0, 10, 1), (0, 1, 0), (-7.5, 1000.0, 777)])
def test_linspace_matches_pytorch_bit_for_bit(dtype, start, end, steps):
    expected, actual = _pair(lambda lib: lib.linspace(start, end, steps,
                                                      dtype=getattr(lib, dtype)).numpy())
    assert _same_bits(expected, actual)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent", [2, 3, -2, -1, -0.5, 2.0, 3.0, 1, 0])
def test_small_powers_match_pytorch_bit_for_bit(dtype, exponent):
    data = (np.random.default_rng(2).standard_normal(3000) * 3).astype(dtype)
    data = np.abs(data) if exponent == -0.5 else data

    def run(lib):
        x = lib.from_numpy(data.copy()).requires_grad_()
        y = x ** exponent
        y.backward(lib.ones_like(y))
        return y.detach().numpy(), x.grad.numpy()

    (ey, eg), (ay, ag) = _pair(run)
    assert _same_bits(ey, ay)
    # the gradient needs x ** (exponent - 1): bitwise only where that is a product too
    if exponent - 1 in (-2, -1, 0, 1, 2) or exponent == 0:
        assert _same_bits(eg, ag)
    else:
        np.testing.assert_allclose(ag, eg, rtol=1e-6)


# -- imports and device queries -------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "import adcompile.nn", "import adcompile.optim", "import adcompile.autograd",
    "from adcompile.nn import functional", "import adcompile.nn.functional as F",
    "import adcompile.autograd.profiler", "from adcompile.nn import init"])
def test_submodules_import_as_torchs_do(statement):
    done = subprocess.run([sys.executable, "-c", statement + "; import adcompile; "
                           "import sys; assert sys.modules['adcompile.nn'] is adcompile.nn"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_submodules_are_the_runtime_modules():
    assert importlib.import_module("adcompile.nn.functional") is adcompile.nn.functional
    assert importlib.import_module("adcompile.optim") is adcompile.optim


def test_device_queries_answer_as_a_cpu_only_torch():
    assert adcompile.cuda.is_available() is False and adcompile.cuda.device_count() == 0
    assert adcompile.accelerator.is_available() is False
    assert adcompile.accelerator.current_accelerator() is None
    assert adcompile.mps.is_available() is False  # (adcompile.backends is the compiler's)
    adcompile.set_default_device("cpu")
    assert str(adcompile.get_default_device()) == "cpu"
    assert str(adcompile.zeros(1).device) == "cpu"


# -- save / load --------------------------------------------------------------------------

def _round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    adcompile.save(obj, buffer)
    buffer.seek(0)
    return adcompile.load(buffer, **load_kwargs)


def test_save_load_round_trips_tensors_state_dicts_and_optimizers(tmp_path):
    adcompile.manual_seed(0)
    model = adcompile.nn.Sequential(adcompile.nn.Linear(3, 4), adcompile.nn.ReLU(),
                                    adcompile.nn.Linear(4, 1))
    optimizer = adcompile.optim.Adam(model.parameters(), lr=0.01)
    model(adcompile.ones(2, 3)).sum().backward()
    optimizer.step()
    t = adcompile.arange(6.0).reshape(2, 3).requires_grad_()
    path = tmp_path / "checkpoint.pt"
    adcompile.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "t": t,
                    "ints": adcompile.tensor([1, 2], dtype=adcompile.int32), "n": 3}, path)
    loaded = adcompile.load(path)
    assert list(loaded["model"]) == list(model.state_dict())
    for name, value in model.state_dict().items():
        assert adcompile.equal(loaded["model"][name], value)
    fresh = adcompile.optim.Adam(model.parameters(), lr=0.5)
    fresh.load_state_dict(loaded["optim"])
    assert fresh.param_groups[0]["lr"] == 0.01
    assert fresh.state_dict()["state"][0]["step"] == 1
    assert loaded["t"].requires_grad and adcompile.equal(loaded["t"], t)
    assert loaded["ints"].dtype is adcompile.int32 and loaded["n"] == 3
    assert isinstance(_round_trip(adcompile.nn.Parameter(adcompile.ones(2))),
                      adcompile.nn.Parameter)


class _Arbitrary:
    def __init__(self):
        self.value = 7


def test_load_refuses_to_unpickle_unless_told():
    buffer = io.BytesIO()
    adcompile.save(_Arbitrary(), buffer)
    buffer.seek(0)
    with pytest.raises(Exception, match="weights_only=False"):
        adcompile.load(buffer)
    buffer.seek(0)
    assert adcompile.load(buffer, weights_only=False).value == 7


# -- profiler -------------------------------------------------------------------------------

def test_profiler_tables_our_ops_and_nodes():
    x = adcompile.randn((1, 1), requires_grad=True)
    with adcompile.autograd.profiler.profile() as prof:
        for _ in range(10):
            y = x ** 2
            y.backward()
    rows = {e.key: e for e in prof.key_averages()}
    assert rows["aten::pow"].count == 10 and rows["PowBackward0"].count == 10
    assert rows["torch::autograd::AccumulateGrad"].count == 10
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    assert "Self CPU time total" in table and "# of Calls" in table and "aten::pow" in table


# -- losses, flags, views, printing -------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_is_one_node_with_pytorchs_gradients(reduction):
    def run(lib):
        x = lib.tensor([0.3, -2.0, 5.0, -0.1], requires_grad=True)
        t = lib.tensor([1.0, 0.0, 0.5, 1.0], requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(
            x * 1, t, weight=lib.tensor([0.5, 2.0, 1.0, 3.0]), reduction=reduction)
        loss.sum().backward() if reduction == "none" else loss.backward()
        node = loss.grad_fn
        return (type(node).__name__, [type(n).__name__ for n, _ in node.next_functions],
                loss.detach().numpy(), x.grad.numpy(), t.grad.numpy())

    expected, actual = _pair(run)
    assert expected[:2] == actual[:2]
    for e, a in zip(expected[2:], actual[2:]):
        np.testing.assert_allclose(a, e, rtol=1e-6)


@LIBS
def test_to_with_requires_grad_is_a_type_error(lib):
    with pytest.raises(TypeError):
        lib.ones(2).to(requires_grad=True)


def test_is_view_and_base_follow_pytorch():
    def run(lib):
        x = lib.ones(2, 3, requires_grad=True)
        y = x + 1
        return [x._is_view(), x[0]._is_view(), x[0]._base is x, x[0][None]._base is x,
                x.detach()._is_view(), x.detach()._base is None, y._is_view(),
                y.view(6)._base is y, y.t()._is_view(), y.reshape(6)._is_view(),
                y.t().reshape(6)._is_view()]

    assert run(adcompile) == run(torch)


def test_equal_follows_pytorch():
    cases = [lambda L: (L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0])),
             lambda L: (L.tensor([1]), L.tensor([1.0])),
             lambda L: (L.tensor([float("nan")]), L.tensor([float("nan")])),
             lambda L: (L.ones(2), L.ones(1)),
             lambda L: (L.ones(2, 3), L.ones(2, 3).t().t())]
    for make in cases:
        assert adcompile.equal(*make(adcompile)) == torch.equal(*make(torch))
    with pytest.raises(TypeError):
        adcompile.equal(adcompile.ones(2), 1)


def test_parameter_prints_parameter_containing():
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        return str(p), repr(p), str(lib.nn.Parameter(lib.tensor(3.0), requires_grad=False))

    assert run(adcompile) == run(torch)


def test_sequential_item_assignment_replaces_a_layer():
    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))
        model[2] = lib.nn.Linear(3, 5)
        return repr(model), [n for n, _ in model.named_parameters()]

    assert run(adcompile) == run(torch)


def test_rmsprop_follows_pytorch():
    def run(lib):
        lib.manual_seed(0)
        w = lib.randn(5, requires_grad=True)
        opt = lib.optim.RMSprop([w], lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)
        for _ in range(5):
            opt.zero_grad()
            (w * w * 3).sum().backward()
            opt.step()
        return w.detach().numpy()

    expected, actual = _pair(run)
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


# -- AccumulateGrad takes over a fresh gradient --------------------------------------------

def test_post_accumulate_hook_edit_is_seen_by_accumulate_grad_hook():
    def run(lib):
        x = lib.ones(3, requires_grad=True)

        def scale(t):
            t.grad.mul_(10)

        x.register_post_accumulate_grad_hook(scale)
        accumulator = (x * 1).grad_fn.next_functions[0][0]
        seen = []
        accumulator.register_hook(lambda grad_inputs, grad_outputs:
                                  seen.append(grad_outputs[0].tolist()))
        (x * 2).sum().backward()
        return seen, x.grad.tolist()

    assert run(adcompile) == run(torch) == ([[20.0, 20.0, 20.0]], [20.0, 20.0, 20.0])


def test_linear_weight_gradient_is_taken_over():
    """A Linear weight's gradient arrives as a transposed view of a fresh product and a
    bias's as a reshaped sum: both are taken over (no copy), so a post-accumulate hook's
    edit is what AccumulateGrad's hook sees, as in PyTorch."""
    def run(lib):
        layer = lib.nn.Linear(3, 2)
        seen = []
        def scale(t):
            t.grad.mul_(10)

        for p in layer.parameters():
            p.register_post_accumulate_grad_hook(scale)
        accumulators = [n[0] for n in layer(lib.ones(4, 3)).grad_fn.next_functions if n[0]]
        for node in accumulators:
            node.register_hook(lambda gi, go: seen.append(go[0].sum().item()))
        layer(lib.ones(4, 3)).sum().backward()
        return sorted(round(v, 4) for v in seen)

    assert run(adcompile) == run(torch)


def test_view_of_a_gradient_kept_by_a_hook_is_copied_not_taken():
    w = adcompile.ones(2, 3, requires_grad=True)
    kept = []
    w.register_hook(lambda g: kept.append(g[:]))
    (adcompile.ones(4, 3) @ w.t()).sum().backward()
    w.grad.mul_(10)
    assert kept[0].tolist() == [[4.0] * 3] * 2


def test_gradient_kept_by_a_hook_is_copied_not_taken():
    x = adcompile.ones(3, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    x.grad.mul_(10)
    assert kept[0].tolist() == [2.0, 2.0, 2.0]


def test_one_gradient_routed_to_two_leaves_is_not_shared():
    a = adcompile.ones(2, requires_grad=True)
    b = adcompile.ones(2, requires_grad=True)
    (a + b).sum().backward()
    a.grad.mul_(5)
    assert b.grad.tolist() == [1.0, 1.0]


# -- complex tensors with autograd ----------------------------------------------------------

COMPLEX_PROGRAMS = {
    "abs": lambda L, z, w, x: z.abs().sum(),
    "real": lambda L, z, w, x: (z.real * 2).sum(),
    "imag": lambda L, z, w, x: (z.imag * 3).sum(),
    "conj": lambda L, z, w, x: z.conj().real.sum() + z.conj().imag.sum(),
    "angle": lambda L, z, w, x: z.angle().sum(),
    "mul": lambda L, z, w, x: (z * w).abs().sum(),
    "div": lambda L, z, w, x: (z / w).abs().sum(),
    "add_sub_real": lambda L, z, w, x: (z + w - x).abs().sum(),
    "mixed_real": lambda L, z, w, x: (x * z).real.sum() + (w / x).imag.sum(),
    "python_complex": lambda L, z, w, x: ((2 - 1j) * z + 1j).abs().sum(),
    "reciprocal": lambda L, z, w, x: (1 / w).abs().sum(),
    "square": lambda L, z, w, x: (w ** 2).abs().sum() + (w * w.conj()).real.sum(),
    "sums": lambda L, z, w, x: (z.sum() * w.sum()).abs(),
    "view_as_real": lambda L, z, w, x: L.view_as_real(z).sum(),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex_autograd_follows_pytorch(name):
    def run(lib):
        z = lib.tensor([1 + 2j, -3 + 0.5j, 0j], requires_grad=True)
        w = lib.tensor([0.5 - 1j, 2 + 2j, 1 + 1j], requires_grad=True)
        x = lib.tensor([1.5, -2.0, 0.5], requires_grad=True)
        y = COMPLEX_PROGRAMS[name](lib, z, w, x)
        edges = [(type(n).__name__ if n else None, i) for n, i in y.grad_fn.next_functions]
        y.backward()
        grads = [None if t.grad is None else t.grad.numpy() for t in (z, w, x)]
        return repr(y), type(y.grad_fn).__name__, edges, grads, [repr(t.grad) for t in (z, w, x)]

    expected, actual = _pair(run)
    assert expected[:3] == actual[:3] and expected[4] == actual[4]
    for e, a in zip(expected[3], actual[3]):
        assert (e is None) == (a is None)
        if e is not None:
            assert e.dtype == a.dtype
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)


def test_complex_tensors_print_and_promote_as_pytorch():
    def run(lib):
        made = [lib.tensor([1 + 2j]), lib.tensor([1.5 + 2j, 3]), lib.tensor(1j),
                lib.zeros(2, dtype=lib.complex128), lib.tensor([1e-5 + 1j]),
                lib.tensor([1 + 2j, -3 + 0.5j], requires_grad=True),
                lib.tensor([[1 - 2j, 3.25 + 4j], [0j, -1e6j]]),
                lib.arange(12.0).reshape(3, 4) * (1 + 0.5j)]
        dtypes = [(lib.ones(2) * 1j).dtype, (lib.ones(2, dtype=lib.int64) * 1j).dtype,
                  (lib.ones(2, dtype=lib.float64) * 1j).dtype,
                  (lib.ones(2) * lib.tensor(1j, dtype=lib.complex128)).dtype]
        return [repr(t) for t in made], [repr(d) for d in dtypes], \
            lib.tensor([1j]).is_complex(), lib.tensor([1j]).is_floating_point()

    assert run(adcompile) == run(torch)


@LIBS
def test_backward_of_a_complex_scalar_is_refused(lib):
    z = lib.tensor([1 + 2j], requires_grad=True)
    with pytest.raises(RuntimeError):
        (z * 2).sum().backward()


def test_gradient_taken_over_without_hooks():
    """Without hooks AccumulateGrad runs on the engine's short path; it must still take a
    fresh gradient over (a Linear weight's .grad is the transposed product itself, not a copy)
    and still copy one that another leaf also receives."""
    layer = adcompile.nn.Linear(3, 2)
    layer(adcompile.ones(4, 3)).sum().backward()
    assert layer.weight.grad._data.base is not None  # the product's memory, not a copy
    a, b = adcompile.ones(2, requires_grad=True), adcompile.ones(2, requires_grad=True)
    ((a + b) * 2).sum().backward()  # add's backward passes one fresh array to both leaves
    a.grad.mul_(5)
    assert b.grad.tolist() == [2.0, 2.0]
