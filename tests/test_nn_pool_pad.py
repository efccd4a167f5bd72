"""Pooling options, F.pad modes and convolution padding modes, differential against PyTorch 2.13.

Each case runs under torch and under adcompile: when torch raises, adcompile must raise the
same exception class; otherwise outputs, returned indices, the input's (and parameters')
gradients, the whole graph down to the leaves (node names and output numbers) and module reprs
must agree. The pooling sweep is a grid over shapes, kernels, strides, paddings, dilations,
ceil_mode, count_include_pad and divisor_override; CI runs a fixed-seed slice of it plus the
named edge cases (a ceil_mode window that would start in the padding is dropped), and
`--time` (any value) runs the whole grid. Convolutions of the example models' shapes must
give PyTorch's single-threaded bits.
"""

import itertools
import random

import numpy as np
import pytest
import torch

import adcompile
from difftools import LIBS, error_kinds
from tests.slices import FULL_ONLY


def _graph(node):
    if node is None:
        return None
    return (type(node).__name__, [(_graph(n), i) for n, i in node.next_functions])


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _weights(shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7 - 3) / 4


# -- pooling ------------------------------------------------------------------------------------

POOL_GRID = {
    "max_pool1d": dict(shape=[(2, 3, 1), (2, 3, 5), (1, 2, 8), (3, 7)],
                       kernel_size=[1, 2, 3, 4], stride=[None, 1, 2, 3], padding=[0, 1, 2],
                       dilation=[1, 2], ceil_mode=[False, True]),
    "max_pool2d": dict(shape=[(1, 2, 1, 1), (2, 3, 5, 4), (2, 6, 7)],
                       kernel_size=[1, 2, 3, (2, 3)], stride=[None, 1, 2, (3, 2)],
                       padding=[0, 1, (1, 0)], dilation=[1, 2, (1, 2)],
                       ceil_mode=[False, True]),
    "avg_pool1d": dict(shape=[(2, 3, 1), (2, 3, 5), (1, 2, 8), (3, 7)],
                       kernel_size=[1, 2, 3, 4], stride=[None, 1, 2, 3], padding=[0, 1, 2],
                       ceil_mode=[False, True], count_include_pad=[True, False]),
    "avg_pool2d": dict(shape=[(1, 2, 1, 1), (2, 3, 5, 4), (2, 6, 7)],
                       kernel_size=[1, 2, 3, (2, 3)], stride=[None, 1, 2, (3, 2)],
                       padding=[0, 1, (1, 0)], ceil_mode=[False, True],
                       count_include_pad=[True, False], divisor_override=[None, 3]),
}

# the last window of a ceil_mode pooling would start in the right padding: PyTorch drops it
POOL_EDGES = {
    "max1d_ceil_drops_window": ("max_pool1d", dict(shape=(2, 3, 5), kernel_size=2, stride=2,
                                                   padding=1, ceil_mode=True)),
    "max2d_ceil_drops_window": ("max_pool2d", dict(shape=(1, 2, 3, 5), kernel_size=2,
                                                   stride=2, padding=1, ceil_mode=True)),
    "max2d_ceil_window_past_end": ("max_pool2d", dict(shape=(2, 2, 6, 7), kernel_size=3,
                                                      stride=2, ceil_mode=True)),
    "max2d_ceil_dilated": ("max_pool2d", dict(shape=(1, 2, 8, 9), kernel_size=3, stride=3,
                                              padding=1, dilation=2, ceil_mode=True)),
    "max2d_ceil_tiny": ("max_pool2d", dict(shape=(1, 1, 1, 1), kernel_size=2,
                                           ceil_mode=True)),
    "avg2d_ceil_drops_window": ("avg_pool2d", dict(shape=(1, 2, 3, 5), kernel_size=2,
                                                   stride=2, padding=1, ceil_mode=True)),
    "avg2d_ceil_past_padding": ("avg_pool2d", dict(shape=(2, 2, 6, 7), kernel_size=3,
                                                   stride=2, padding=1, ceil_mode=True)),
    "avg2d_ceil_no_pad_count": ("avg_pool2d", dict(shape=(2, 2, 6, 7), kernel_size=3,
                                                   stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False)),
    "avg2d_ceil_divisor": ("avg_pool2d", dict(shape=(2, 2, 6, 7), kernel_size=(3, 2),
                                              stride=(2, 3), padding=(1, 0), ceil_mode=True,
                                              divisor_override=2)),
    "avg2d_negative_divisor": ("avg_pool2d", dict(shape=(1, 2, 4, 4), kernel_size=2,
                                                  divisor_override=-3)),
    "max1d_ceil_kernel_past_input": ("max_pool1d", dict(shape=(2, 3, 6), kernel_size=7,
                                                        ceil_mode=True)),
    "avg1d_ceil_no_pad_count": ("avg_pool1d", dict(shape=(2, 3, 8), kernel_size=3, stride=3,
                                                   padding=1, ceil_mode=True,
                                                   count_include_pad=False)),
}

# invalid arguments: (functional, options); the error class must be PyTorch's
POOL_ERRORS = {
    "kernel_zero": ("max_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=0)),
    "stride_zero": ("avg_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=2, stride=0)),
    "padding_over_half": ("max_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=2, padding=2)),
    "padding_negative": ("max_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=2, padding=-1)),
    "dilation_zero": ("max_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=2, dilation=0)),
    "output_empty": ("avg_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=7)),
    "divisor_zero": ("avg_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=2,
                                        divisor_override=0)),
    "kernel_three_ints": ("max_pool2d", dict(shape=(2, 3, 6, 6), kernel_size=(2, 2, 2))),
    "kernel_two_ints_1d": ("avg_pool1d", dict(shape=(2, 3, 6), kernel_size=(2, 2))),
    "max2d_2d_input": ("max_pool2d", dict(shape=(6, 6), kernel_size=2)),
    "avg2d_2d_input": ("avg_pool2d", dict(shape=(6, 6), kernel_size=2)),
    "max2d_5d_input": ("max_pool2d", dict(shape=(1, 1, 1, 6, 6), kernel_size=2)),
    "max1d_4d_input": ("max_pool1d", dict(shape=(2, 3, 6, 6), kernel_size=2)),
    "avg1d_1d_input": ("avg_pool1d", dict(shape=(6,), kernel_size=2)),
}


def _grid_cases(op):
    grid = POOL_GRID[op]
    keys = list(grid)
    return [(op, dict(zip(keys, values))) for values in itertools.product(*grid.values())]


ALL_POOL_CASES = [case for op in POOL_GRID for case in _grid_cases(op)]
CI_POOL_CASES = random.Random(17).sample(range(len(ALL_POOL_CASES)), 240)

_MODULES = {"max_pool1d": "MaxPool1d", "max_pool2d": "MaxPool2d", "avg_pool1d": "AvgPool1d",
            "avg_pool2d": "AvgPool2d"}


def _pool_call(lib, op, options, as_module):
    options = dict(options)
    x = lib.tensor(_input(options.pop("shape")), requires_grad=True)
    if as_module:
        module = getattr(lib.nn, _MODULES[op])(**options)
        return x, module(x), repr(module), None
    if op.startswith("max"):
        y, index = getattr(lib.nn.functional, op)(x, return_indices=True, **options)
        return x, y, None, index.numpy()
    return x, getattr(lib.nn.functional, op)(x, **options), None, None


def _pool_run(lib, op, options, as_module):
    x, y, text, index = _pool_call(lib, op, options, as_module)
    graph = _graph(y.grad_fn)
    (y * lib.tensor(_weights(tuple(y.shape)))).sum().backward()
    return dict(y=y.detach().numpy(), gx=x.grad.numpy(), graph=graph, repr=text, index=index)


def _window_without_input(op, options):
    """Dilation can leave a max-pool window wholly in the padding: PyTorch gives -inf and an
    index outside the input there, and its backward then writes out of bounds (it crashes),
    so such cases compare the forward values only."""
    if not op.startswith("max"):
        return False
    return bool(torch.isinf(_pool_call(torch, op, options, False)[1]).any())


def check_pool(op, options):
    kinds = error_kinds(lambda lib: _pool_call(lib, op, options, False))
    assert kinds[1] == kinds[0], f"{op} {options}: torch raises {kinds[0]}, ours {kinds[1]}"
    if kinds[0] is not None:
        return
    if _window_without_input(op, options):
        want, got = (_pool_call(lib, op, options, False)[1] for lib in LIBS)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        return
    for as_module in (False, True):
        want, got = (_pool_run(lib, op, options, as_module) for lib in LIBS)
        assert got["y"].shape == want["y"].shape, (op, options)
        np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got["gx"], want["gx"], rtol=1e-6, atol=1e-6)
        assert got["graph"] == want["graph"]
        assert got["repr"] == want["repr"]
        if want["index"] is not None:
            np.testing.assert_array_equal(got["index"], want["index"])


def test_max_pool_window_in_padding_passes_no_gradient():
    """Ours only: the -inf of a window without an input element sends its gradient nowhere
    (PyTorch's backward writes it out of bounds)."""
    x = adcompile.tensor([[[1.5, 2.0]]], requires_grad=True)
    y = adcompile.nn.functional.max_pool1d(x, 2, 1, 1, 3)
    assert y.tolist() == [[[-np.inf]]]
    y.sum().backward()
    assert x.grad.tolist() == [[[0.0, 0.0]]]


def test_max_pool_input_minus_inf_wins_over_padding():
    runs = []
    for lib in LIBS:
        x = lib.tensor([[[-np.inf, 1.0, -np.inf]]], requires_grad=True)
        y, index = lib.nn.functional.max_pool1d(x, 2, 1, 1, return_indices=True)
        (y * lib.tensor([[[1.0, 2.0, 3.0, 4.0]]])).sum().backward()
        runs.append((y.tolist(), index.tolist(), x.grad.tolist()))
    assert runs[1] == runs[0]


@pytest.mark.parametrize("i", CI_POOL_CASES)
def test_pool_grid_slice_matches_torch(i):
    check_pool(*ALL_POOL_CASES[i])


@pytest.mark.parametrize("name", sorted(POOL_EDGES))
def test_pool_edge_matches_torch(name):
    check_pool(*POOL_EDGES[name])


@pytest.mark.parametrize("name", sorted(POOL_ERRORS))
def test_pool_error_class_matches_torch(name):
    op, options = POOL_ERRORS[name]
    kinds = error_kinds(lambda lib: _pool_call(lib, op, options, False))
    assert kinds[0] is not None, "torch raises here"
    assert kinds[1] == kinds[0]


@FULL_ONLY
def test_pool_whole_grid_matches_torch():
    """The whole grid (about 2,800 cases): run by hand with --full."""
    for case in ALL_POOL_CASES:
        check_pool(*case)


def test_pool_edge_cases_are_in_the_grid_shape():
    """The named edge cases really drop a window: floor and ceil give the same length."""
    want = [torch.nn.functional.max_pool1d(torch.zeros(1, 1, 5), 2, 2, 1, ceil_mode=c).shape
            for c in (False, True)]
    assert want[0] == want[1] == (1, 1, 3)
    assert adcompile.nn.functional.max_pool1d(adcompile.zeros(1, 1, 5), 2, 2, 1,
                                              ceil_mode=True).shape == (1, 1, 3)


# -- F.pad --------------------------------------------------------------------------------------

PAD_SHAPES_AND_PADS = [
    ((2, 5), (1, 2)), ((1, 2, 5), (-1, 2)), ((1, 2, 5), (4, 0)), ((1, 2, 5), (-2, -2)),
    ((1, 2, 5), (5, 0)), ((1, 2, 5), (-5, 0)), ((1, 2, 5, 5), (1, 2, 2, 1)),
    ((2, 5, 5), (0, -2, 3, 1)), ((1, 2, 3, 5, 5), (1, 1, 2, 1, 1, 0)),
    ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1)), ((1, 2, 5, 5), (1, 2)), ((5,), (1, 1)),
    ((2, 0, 3), (1, 1)), ((1, 2, 5), (1, 1, 1)), ((1, 2, 5), (1,) * 8),
]
PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_call(lib, shape, pad, mode, value=None):
    x = lib.tensor(_input(shape, 3), requires_grad=True)
    return x, lib.nn.functional.pad(x, pad, mode=mode, value=value)


@pytest.mark.parametrize("mode", PAD_MODES)
@pytest.mark.parametrize("shape_pad", PAD_SHAPES_AND_PADS, ids=str)
def test_pad_matches_torch(shape_pad, mode):
    shape, pad = shape_pad
    kinds = error_kinds(lambda lib: _pad_call(lib, shape, pad, mode))
    assert kinds[1] == kinds[0]
    if kinds[0] is not None:
        return
    runs = []
    for lib in LIBS:
        x, y = _pad_call(lib, shape, pad, mode)
        graph = _graph(y.grad_fn)
        (y * lib.tensor(_weights(tuple(y.shape)))).sum().backward()
        runs.append((y.detach().numpy(), x.grad.numpy(), graph))
    (want_y, want_g, want_graph), (got_y, got_g, got_graph) = runs
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_array_equal(got_g, want_g)
    assert got_graph == want_graph


@pytest.mark.parametrize("mode, value", [("reflect", 1.0), ("replicate", 0.0), ("wrap", None),
                                         ("circular", 2.0)])
def test_pad_mode_and_value_errors_match_torch(mode, value):
    kinds = error_kinds(lambda lib: _pad_call(lib, (1, 2, 5), (1, 1), mode, value))
    assert kinds[1] == kinds[0]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "avg_pool_ceil"])
def test_double_backward_through_padding_and_pooling_matches_torch(mode):
    """The pad_gather and per-window-divisor avg_pool rules rerun on Tensors."""
    runs = []
    for lib in LIBS:
        x = lib.tensor(_input((2, 2, 5, 6), 4), requires_grad=True)
        if mode == "avg_pool_ceil":
            y = lib.nn.functional.avg_pool2d(x * x, 3, 2, 1, ceil_mode=True,
                                             count_include_pad=False)
        else:
            y = lib.nn.functional.pad(x * x, (2, 1, 1, 3), mode=mode)
        (gx,) = lib.autograd.grad((y * lib.tensor(_weights(tuple(y.shape)))).sum(), x,
                                  create_graph=True)
        (gx * gx).sum().backward()
        runs.append((gx.detach().numpy(), x.grad.numpy()))
    for got, want in zip(runs[1], runs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- convolution padding modes ------------------------------------------------------------------

CONV_PADDING = {
    "conv2d_reflect_same_even": (lambda nn: nn.Conv2d(2, 3, (4, 3), padding="same",
                                                      padding_mode="reflect"), (2, 2, 7, 6)),
    "conv2d_circular_strided": (lambda nn: nn.Conv2d(2, 3, 3, padding=1, stride=2,
                                                     padding_mode="circular"), (2, 2, 7, 6)),
    "conv2d_replicate_dilated": (lambda nn: nn.Conv2d(2, 3, 3, padding=(2, 1), dilation=2,
                                                      padding_mode="replicate"), (2, 2, 7, 6)),
    "conv2d_reflect_groups": (lambda nn: nn.Conv2d(4, 6, 3, padding=(1, 2), groups=2,
                                                   padding_mode="reflect", bias=False),
                              (1, 4, 5, 6)),
    "conv2d_circular_unbatched": (lambda nn: nn.Conv2d(2, 3, 3, padding=2,
                                                       padding_mode="circular"), (2, 4, 5)),
    "conv2d_reflect_valid": (lambda nn: nn.Conv2d(2, 3, 3, padding="valid",
                                                  padding_mode="reflect"), (2, 2, 7, 6)),
    "conv2d_zeros_same_even": (lambda nn: nn.Conv2d(2, 3, (2, 4), padding="same"),
                               (2, 2, 7, 6)),
    "conv2d_zeros_same_dilated": (lambda nn: nn.Conv2d(2, 3, 2, padding="same",
                                                       dilation=(1, 3)), (2, 2, 7, 6)),
    "conv1d_circular_same_even": (lambda nn: nn.Conv1d(2, 3, 4, padding="same",
                                                       padding_mode="circular"), (2, 2, 7)),
    "conv1d_reflect_groups": (lambda nn: nn.Conv1d(2, 4, 3, padding=2, groups=2,
                                                   padding_mode="reflect"), (2, 2, 7)),
    "conv1d_replicate_unbatched": (lambda nn: nn.Conv1d(2, 3, 3, padding=4, stride=2,
                                                        padding_mode="replicate"), (2, 6)),
    "conv1d_zeros_valid": (lambda nn: nn.Conv1d(2, 3, 3, padding="valid"), (2, 2, 7)),
}


def _conv_run(lib, name):
    make, shape = CONV_PADDING[name]
    lib.manual_seed(0)
    conv = make(lib.nn)
    x = lib.tensor(_input(shape, 5), requires_grad=True)
    y = conv(x)
    graph = _graph(y.grad_fn)
    (y * lib.tensor(_weights(tuple(y.shape)))).sum().backward()
    grads = {k: p.grad.numpy() for k, p in conv.named_parameters()}
    return dict(y=y.detach().numpy(), gx=x.grad.numpy(), grads=grads, graph=graph,
                repr=repr(conv), keys=list(conv.state_dict()))


@pytest.mark.parametrize("name", sorted(CONV_PADDING))
def test_conv_padding_mode_matches_torch(name):
    want, got = (_conv_run(lib, name) for lib in LIBS)
    assert got["repr"] == want["repr"]
    assert got["graph"] == want["graph"]
    assert got["keys"] == want["keys"]
    for key in ("y", "gx"):
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-5, err_msg=key)
    for k in want["grads"]:
        np.testing.assert_allclose(got["grads"][k], want["grads"][k], rtol=1e-5, atol=1e-5,
                                   err_msg=k)


CONV_ERRORS = {
    "unknown_padding_mode": lambda lib: lib.nn.Conv2d(2, 3, 3, padding_mode="mirror"),
    "transposed_reflect": lambda lib: lib.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"),
    "transposed1d_circular": lambda lib: lib.nn.ConvTranspose1d(2, 3, 3,
                                                                padding_mode="circular"),
    "same_strided_module": lambda lib: lib.nn.Conv2d(2, 3, 3, stride=2, padding="same"),
    "same_strided_functional": lambda lib: lib.nn.functional.conv2d(
        lib.ones(1, 2, 5, 5), lib.ones(3, 2, 3, 3), stride=2, padding="same"),
    "bad_padding_string": lambda lib: lib.nn.Conv2d(2, 3, 3, padding="full"),
    "circular_wraps_twice": lambda lib: lib.nn.Conv1d(2, 3, 3, padding=2,
                                                      padding_mode="circular")(
        lib.ones(1, 2, 1)),
    "reflect_too_wide": lambda lib: lib.nn.Conv2d(2, 3, 3, padding=3,
                                                  padding_mode="reflect")(lib.ones(1, 2, 3, 3)),
}


@pytest.mark.parametrize("name", sorted(CONV_ERRORS))
def test_conv_padding_error_class_matches_torch(name):
    kinds = error_kinds(CONV_ERRORS[name])
    assert kinds[0] is not None, "torch raises here"
    assert kinds[1] == kinds[0]


# -- convolution bits ---------------------------------------------------------------------------

# (batch, in channels, out channels, size, padding, spatial dims): the CNN example's two
# convolutions, the benchmark's and a 1-d one; PyTorch's single-threaded oneDNN kernel is the
# oracle, to the bit
CONV_BITS = {"cnn_conv1": (32, 1, 8, 28, 0, 2), "cnn_conv2": (32, 8, 16, 13, 1, 2),
             "benchmark": (16, 3, 16, 32, 1, 2), "conv1d": (8, 4, 6, 20, 1, 1)}


def _conv_bits(lib, n, c, o, size, padding, dims):
    rng = np.random.default_rng(9)
    x = lib.tensor(rng.standard_normal((n, c) + (size,) * dims).astype(np.float32),
                   requires_grad=True)
    w = lib.tensor((rng.standard_normal((o, c) + (3,) * dims) * 0.3).astype(np.float32),
                   requires_grad=True)
    b = lib.tensor(rng.standard_normal(o).astype(np.float32), requires_grad=True)
    conv = lib.nn.functional.conv1d if dims == 1 else lib.nn.functional.conv2d
    y = conv(x, w, b, padding=padding)
    y.backward(lib.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32)))
    return [t.detach().numpy() for t in (y, x.grad, w.grad, b.grad)]


@pytest.mark.parametrize("name", sorted(CONV_BITS))
def test_conv_sums_as_torch_single_threaded(name):
    """Output, weight and bias gradients bit-equal; the input gradient too where oneDNN's
    order is the flipped-kernel one (every case here but the 1-channel first layer, whose
    input gradient a network never needs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        want = _conv_bits(torch, *CONV_BITS[name])
    finally:
        torch.set_num_threads(threads)
    got = _conv_bits(adcompile, *CONV_BITS[name])
    for i, (a, b) in enumerate(zip(got, want)):
        if i == 1 and name == "cnn_conv1":
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{name} result {i}")
