"""What each autograd node saves (`grad_fn._saved_<name>`), differential against PyTorch 2.13.

Every row of the eager op tables (tests/test_ops.py, tests/test_ops_breadth.py) and of the
nn tables (tests/test_nn_layers.py: losses, loss graphs, layers) runs once with torch and once
with adcompile on identical inputs. The two backward graphs are walked side by side (a pair of
nodes is compared when their class names agree); for each pair we compare the set of
`_saved_*` names in dir(grad_fn) and each value: a tensor's dtype, shape, values, grad_fn
name and requires_grad; any other value as it is (ints, floats, tuples, None, enums). Then we
backward every differentiable output once (retain_graph=False) and compare again: saved
tensors are freed and raise (the error type is compared), other values stay readable.

KNOWN_GAPS lists the (node, name) pairs that still differ, each with the reason; each is an
xfail(strict=True) test that fails as long as some row still shows the difference.
"""

import functools
import warnings

import numpy as np
import pytest
import torch

import adcompile
import test_nn_layers as nn_tables
import test_ops
import test_ops_breadth

# ------------------------------------------------------------------------------------------
# The programs: name -> build(lib) returning the outputs
# ------------------------------------------------------------------------------------------


def _op_row(module, name, case):
    inputs = module._inputs(case.shapes, case.domain, "float64", test_ops._seed(name))

    def build(lib):
        xs = [lib.tensor(a, dtype=getattr(lib, dt), requires_grad=rg) for a, dt, rg in inputs]
        return case.fn(lib, *xs)

    return build


def _loss_graph_row(name):
    def build(lib):
        x = lib.tensor(nn_tables._x((2, 3), 7), requires_grad=True)
        t = lib.tensor(nn_tables._x((2, 3), 8))
        p = lib.tensor(np.abs(nn_tables._x((2, 3), 9)) + 0.1)
        return nn_tables.LOSS_GRAPHS[name](lib, x, t, p)

    return build


def _loss_row(name):
    def build(lib):
        rng = np.random.default_rng(5)
        x = lib.tensor(rng.standard_normal((6, 4)).astype(np.float32), requires_grad=True)
        c = lib.tensor(np.array([0, 1, 2, 3, 2, 1], np.int64))
        probs = rng.random((6, 4)).astype(np.float32) + 0.05
        p = lib.tensor(probs / probs.sum(1, keepdims=True))
        return nn_tables.LOSSES[name](lib, x, c, p)

    return build


def _layer_row(name):
    make, shape, kind, _ = nn_tables.LAYERS[name]

    def build(lib):
        lib.manual_seed(0)
        x = lib.tensor(nn_tables._x(shape, 1, kind), requires_grad=kind != "index")
        return make(lib.nn)(x)

    return build


PROGRAMS = {
    **{f"ops/{n}": _op_row(test_ops, n, c) for n, c in test_ops.CASES.items()},
    **{f"breadth/{n}": _op_row(test_ops_breadth, n, c)
       for n, c in test_ops_breadth.CASES.items()},
    **{f"loss_graph/{n}": _loss_graph_row(n) for n in nn_tables.LOSS_GRAPHS},
    **{f"loss/{n}": _loss_row(n) for n in nn_tables.LOSSES},
    **{f"layer/{n}": _layer_row(n) for n in nn_tables.LAYERS},
}

# ------------------------------------------------------------------------------------------
# What a node shows
# ------------------------------------------------------------------------------------------


def _shown(value):
    """A saved value in a form both libraries' values compare in."""
    if isinstance(value, (torch.Tensor, adcompile.Tensor)):
        node = None if value.grad_fn is None else type(value.grad_fn).__name__
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape),
                value.detach().numpy().copy(), node, value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_shown(v) for v in value)
    return type(value).__name__, value


def _saved(node):
    """{name: shown value, or ("raises", error class)} for every `_saved_*` in dir(node)."""
    out = {}
    for name in dir(node):
        if not name.startswith("_saved_"):
            continue
        try:
            out[name] = _shown(getattr(node, name))
        except Exception as e:  # noqa: BLE001 - the error class is what we compare
            out[name] = ("raises", type(e).__name__)
    return out


def _same(ours, theirs):
    if ours[0] == "tensor" and theirs[0] == "tensor":
        a, b = ours[3], theirs[3]
        return (ours[1:3] + ours[4:] == theirs[1:3] + theirs[4:]
                and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    if ours[0] in ("tuple", "list") and ours[0] == theirs[0]:
        return len(ours[1]) == len(theirs[1]) and all(map(_same, ours[1], theirs[1]))
    if ours[0] == "float" and theirs[0] == "float":
        return np.isclose(ours[1], theirs[1], rtol=1e-6, equal_nan=True)
    return ours == theirs


def _node_pairs(ours, theirs):
    """Nodes of the two graphs at the same place with the same class name."""
    stack, seen = [(ours, theirs)], set()
    while stack:
        a, b = stack.pop()
        if a is None or b is None or type(a).__name__ != type(b).__name__ or id(a) in seen:
            continue
        seen.add(id(a))
        yield a, b
        stack.extend((x, y) for (x, _), (y, _) in zip(a.next_functions, b.next_functions))


def _outputs(out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if getattr(o, "grad_fn", None) is not None]


def _run(build):
    """The differences of one program, before and after its backward."""
    runs = []
    for lib in (adcompile, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs.append(_outputs(build(lib)))
    pairs = [p for o, t in zip(*runs) for p in _node_pairs(o.grad_fn, t.grad_fn)]
    found = _differences(pairs, "before backward")
    for lib, outs in zip((adcompile, torch), runs):
        live = [o for o in outs if o.requires_grad]
        lib.autograd.backward(live, [lib.ones_like(o) for o in live])
    return found + _differences(pairs, "after backward")


def _differences(pairs, when):
    """(node, name, when, ours, theirs) for each saved value that differs."""
    found = []
    for a, b in pairs:
        mine, torchs = _saved(a), _saved(b)
        for name in sorted(set(mine) | set(torchs)):
            x, y = mine.get(name, ("absent",)), torchs.get(name, ("absent",))
            if not _same(x, y):
                found.append((type(a).__name__, name, when, x, y))
    return found


@functools.cache
def _all_differences():
    return {name: _run(build) for name, build in PROGRAMS.items()}


# ------------------------------------------------------------------------------------------
# Known gaps: (node, saved names) -> why they still differ
# ------------------------------------------------------------------------------------------
_NOT_KEPT = ("our rule does not keep this value (it works from shapes, numpy index data or "
             "a value of its own), so the node cannot show it")
_NORMALIZED = ("we keep dims normalized (non-negative, in our own order) where PyTorch shows "
               "them as given, a negative one as 2**64 + dim")
_WHOLE = ("a reduction over every dim: we keep dim=None where PyTorch shows the dims it was "
          "given (() or the full tuple), and negative dims normalized")
_ONE_DIM = "we keep the single dim as a tuple (normalized) where PyTorch shows the int given"

KNOWN_GAPS = {
    ("AddmmBackward0", "mat1_sym_sizes mat1_sym_strides mat2_sym_sizes mat2_sym_strides"):
        _NOT_KEPT,
    ("AmaxBackward0", "dim"): _WHOLE,
    ("AminBackward0", "dim"): _WHOLE,
    ("AminmaxBackward0", "dim"): _ONE_DIM,
    ("AvgPool2DBackward0", "ceil_mode count_include_pad divisor_override "
                           "kernel_size padding self stride"):
        _NOT_KEPT,
    ("BinaryCrossEntropyWithLogitsBackward0", "pos_weight weight"): _NOT_KEPT,
    ("CatBackward0", "dim"): _NORMALIZED,
    ("ComplexBackward0", "imag"): "PyTorch saves imag only when the gradient of real needs it",
    ("ConstantPadNdBackward0", "pad"): _NOT_KEPT,
    ("ConvolutionBackward0", "bias_sym_sizes_opt dilation groups "
                             "output_padding padding stride transposed"):
        _NOT_KEPT,
    ("CummaxBackward0", "dim indices self"): _NOT_KEPT,
    ("CumminBackward0", "dim indices self"): _NOT_KEPT,
    ("CumsumBackward0", "dim"): _NORMALIZED,
    ("DiagEmbedBackward0", "dim1 dim2"): _NORMALIZED,
    ("DiagonalBackward0", "dim1 dim2"): _NORMALIZED,
    ("DistBackward0", "other"): _NOT_KEPT,
    ("DistBackward0", "self"): _NOT_KEPT,
    ("DivBackward2", "other rounding_mode self"): _NOT_KEPT,
    ("EluBackward0", "input_scale scale"): _NOT_KEPT,
    ("EmbeddingBackward0", "indices padding_idx scale_grad_by_freq sparse weight_sym_argsize_0"):
        _NOT_KEPT,
    ("ErfinvBackward0", "self"): _NOT_KEPT,
    ("GatherBackward0", "dim index self sparse_grad"): _NOT_KEPT,
    ("IndexAddBackward0", "dim index source source_dim"): _NOT_KEPT,
    ("IndexBackward0", "indices"): _NOT_KEPT,
    ("IndexCopyBackward0", "dim index source source_dim"): _NOT_KEPT,
    ("IndexFillBackward0", "dim index"): _NOT_KEPT,
    ("IndexFillBackward1", "dim index"): _NOT_KEPT,
    ("IndexPutBackward0", "accumulate indices"): _NOT_KEPT,
    ("IndexSelectBackward0", "dim index"): _NOT_KEPT,
    ("KthvalueBackward0", "dim"): _NORMALIZED,
    ("KthvalueBackward0", "indices keepdim"): _NOT_KEPT,
    ("LogSoftmaxBackward0", "dim"): _NORMALIZED,
    ("LogsumexpBackward0", "dim"): _WHOLE,
    ("MaskedScatterBackward0", "mask"): _NOT_KEPT,
    ("MaskedSelectBackward0", "mask self"): _NOT_KEPT,
    ("MaxBackward0", "dim"): _NORMALIZED,
    ("MaxBackward0", "indices keepdim"): _NOT_KEPT,
    ("MaxPool2DWithIndicesBackward0", "ceil_mode dilation kernel_size padding result1 self stride"):
        _NOT_KEPT,
    ("MeanBackward1", "dim"): _NORMALIZED,
    ("MeanBackward1", "self_sym_numel"): _NOT_KEPT,
    ("MedianBackward1", "indices keepdim"): _NOT_KEPT,
    ("MinBackward0", "indices keepdim"): _NOT_KEPT,
    ("MmBackward0", "mat2_sym_sizes mat2_sym_strides self_sym_sizes self_sym_strides"): _NOT_KEPT,
    ("ModeBackward0", "dim"): _NORMALIZED,
    ("ModeBackward0", "indices keepdim"): _NOT_KEPT,
    ("NanmedianBackward1", "indices keepdim"): _NOT_KEPT,
    ("NansumBackward0", "dim"): _NORMALIZED,
    ("NativeBatchNormBackward0", "eps result1 result2 running_mean running_var training"):
        _NOT_KEPT,
    ("NativeGroupNormBackward0", "C HxW N eps group result1 result2"): _NOT_KEPT,
    ("NativeLayerNormBackward0", "bias normalized_shape result1 result2"): _NOT_KEPT,
    ("NllLossBackward0", "ignore_index reduction self target total_weight weight"): _NOT_KEPT,
    ("PermuteBackward0", "dims"): _NORMALIZED,
    ("ProdBackward1", "dim"): _ONE_DIM,
    ("ReflectionPad1DBackward0", "padding self"): _NOT_KEPT,
    ("ReplicationPad2DBackward0", "padding self"): _NOT_KEPT,
    ("RollBackward0", "dims"): _WHOLE,
    ("Rot90Backward0", "dims"): _NORMALIZED,
    ("ScatterAddBackward0", "dim index"): _NOT_KEPT,
    ("ScatterBackward0", "dim index"): _NOT_KEPT,
    ("ScatterBackward1", "dim index"): _NOT_KEPT,
    ("ScatterReduceBackward0", "dim include_self index reduce result self src"): _NOT_KEPT,
    ("SelectBackward0", "dim index"): _NOT_KEPT,
    ("SliceBackward0", "dim end start step"): _NOT_KEPT,
    ("SoftmaxBackward0", "dim"):
        "softmax without dim= keeps dim=None where PyTorch shows the dim it picks; and "
        + _NORMALIZED,
    ("SortBackward0", "dim"): _NORMALIZED,
    ("SortBackward0", "indices"): _NOT_KEPT,
    ("SortBackward1", "dim"): _NORMALIZED,
    ("SortBackward1", "indices"): _NOT_KEPT,
    ("SplitBackward0", "dim"): _NORMALIZED,
    ("SplitBackward0", "split_size"): _NOT_KEPT,
    ("SqueezeBackward1", "dim"): _NOT_KEPT,
    ("SqueezeBackward2", "dim"): _NOT_KEPT,
    ("SqueezeBackward4", "dim"): _NOT_KEPT,
    ("SqueezeBackward5", "dim"): _NOT_KEPT,
    ("StackBackward0", "dim"): _NORMALIZED,
    ("StdBackward0", "correction"): _NOT_KEPT,
    ("StdMeanBackward0", "correction result0"): _NOT_KEPT,
    ("SumBackward1", "dim"): _WHOLE,
    ("TakeBackward0", "index self"): _NOT_KEPT,
    ("TopkBackward0", "dim"): _NORMALIZED,
    ("TopkBackward0", "indices"): _NOT_KEPT,
    ("TransposeBackward0", "dim0 dim1"): _NORMALIZED,
    ("UnbindBackward0", "dim"): _NORMALIZED,
    ("UnsqueezeBackward0", "dim"): _NOT_KEPT,
    ("UnsqueezeBackward1", "dim"): _NOT_KEPT,
    ("VarBackward0", "correction"): _NOT_KEPT,
    ("VarMeanBackward0", "correction"): _NOT_KEPT,
}
_GAP_OF = {(node, f"_saved_{name}"): key for key in KNOWN_GAPS
           for node, names in [key] for name in names.split()}

# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_saved_values_match_torch(program):
    found = [d for d in _all_differences()[program] if d[:2] not in _GAP_OF]
    assert not found, "\n".join(f"{node}.{name} {when}: ours {x}, torch {y}"
                                for node, name, when, x, y in found)


@pytest.mark.parametrize("gap", [pytest.param(key, marks=pytest.mark.xfail(
    strict=True, reason=reason)) for key, reason in KNOWN_GAPS.items()],
    ids=lambda key: f"{key[0]}.{key[1].replace(' ', ',')}")
def test_known_gap(gap):
    found = [d for diffs in _all_differences().values() for d in diffs
             if _GAP_OF.get(d[:2]) == gap]
    assert not found, f"{len(found)} differences, first: {found[0]}"


def test_non_tensor_values_outlive_backward():
    """After a non-retaining backward a saved tensor raises; a saved reduction, dim or
    scalar is still shown, as in PyTorch."""
    runs = []
    for lib in (torch, adcompile):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        loss = lib.nn.functional.mse_loss(x.softmax(0), lib.zeros(3), reduction="sum")
        loss.backward()
        node, softmax = loss.grad_fn, loss.grad_fn.next_functions[0][0]
        with pytest.raises(RuntimeError):
            node._saved_self
        with pytest.raises(RuntimeError):
            softmax._saved_result
        runs.append((node._saved_reduction, softmax._saved_dim))
    assert runs[1] == runs[0]


def test_inplace_saved_self_is_a_clone():
    """An in-place op that needs its input saves a clone of it (CloneBackward0 onto the
    input's history), as PyTorch does."""
    runs = []
    for lib in (torch, adcompile):
        x = lib.tensor([0.3, 0.5], requires_grad=True)
        y = x * 2
        y.log1p_()
        saved = y.grad_fn._saved_self
        y.sum().backward()
        runs.append((type(saved.grad_fn).__name__,
                     [type(n).__name__ for n, _ in saved.grad_fn.next_functions],
                     saved.detach().numpy().tolist(), x.grad.numpy().tolist()))
    assert runs[1] == runs[0]
