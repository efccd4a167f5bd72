"""torch.nn.functional: activations, linear layers and losses built on the eager kernels.

Losses with their own PyTorch node (MseLossBackward0, NllLossBackward0,
BinaryCrossEntropyBackward0, BinaryCrossEntropyWithLogitsBackward0) record it; the others
are compositions, so their graphs match PyTorch's (l1_loss is mean(abs(sub)); cross_entropy,
in nn/loss.py, is nll_loss over log_softmax). The layer families register their functional
forms at the end of this module.
"""

import warnings

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.cascade_sum import mean_like_torch, nll_sum, sum_like_torch
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.ops._core import float_dtype, wrap

MseLossBackward0 = node_class("MseLossBackward0", "mse_loss")
NllLossBackward0 = node_class("NllLossBackward0", "nll_loss")
BinaryCrossEntropyBackward0 = node_class("BinaryCrossEntropyBackward0", "binary_cross_entropy")
BinaryCrossEntropyWithLogitsBackward0 = node_class("BinaryCrossEntropyWithLogitsBackward0",
                                                   "binary_cross_entropy_with_logits")

relu = F.relu
tanh = F.tanh
sigmoid = F.sigmoid


def _softmax_dim(name, x, dim):
    """PyTorch's implicit dimension when dim is None (deprecated, with a warning): 0 for 0-,
    1- and 3-dim input, else 1."""
    if dim is not None:
        return dim
    warnings.warn(f"{name}() without dim= picks a dimension implicitly, which is deprecated; "
                  f"pass dim=", UserWarning, stacklevel=3)
    return 0 if x.dim() in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return F.softmax(input, _softmax_dim("softmax", input, dim), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return F.log_softmax(input, _softmax_dim("log_softmax", input, dim), dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax of -input (SoftmaxBackward0 over NegBackward0, as PyTorch records it)."""
    return F.softmax(F.neg(input), _softmax_dim("softmin", input, dim), dtype)


def linear(input, weight, bias=None):
    """input @ weight.T + bias, recorded as PyTorch records it: addmm on 2-D input and on
    a flattened contiguous input, otherwise matmul then add."""
    wt = F.t(weight)
    if bias is None:
        return F.matmul(input, wt)
    if input._data.ndim == 2:
        return F.addmm(bias, input, wt)
    if not input.is_contiguous():
        return F.add(F.matmul(input, wt), bias)
    lead = input._data.shape[:-1]
    flat = F.reshape(input, (-1, input._data.shape[-1]))
    out = F.addmm(bias, flat, wt)
    return F.view(out, lead + (weight._data.shape[0],))


def _reduce(loss, reduction):
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


def _check_reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', not {reduction!r}")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(F.abs(F.sub(input, target)), reduction)


def _reduced(loss, reduction):
    """A loss's elements reduced as PyTorch reduces them (float32 added in its order)."""
    reduce = {"mean": mean_like_torch, "sum": sum_like_torch}.get(reduction)
    return loss if reduce is None else reduce(loss)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_reduction(reduction)
    diff = input._data - target._data
    sq = diff * diff
    dt = F.result_dtype(input, target)
    data = _reduced(sq, reduction)
    out = wrap(np.asarray(data, dt.np), dt)
    if any_requires_grad((input, target)):
        count = np.broadcast_shapes(input._data.shape, target._data.shape)
        count = int(np.prod(count)) if count else 1
        record(MseLossBackward0, (input, target), out,
               (save_input(input), save_input(target), reduction, count))
    return out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    _check_reduction(reduction)
    x = input._data
    squeeze = x.ndim == 1
    x2 = x.reshape(1, -1) if squeeze else x
    t = target._data.reshape(-1).astype(np.int64, copy=False)
    if x2.ndim != 2:
        raise RuntimeError(f"nll_loss expects input of shape (N, C) or (C,), got "
                           f"{list(x.shape)}")
    safe_t, row_w, valid = _row_weights(t, weight, ignore_index, x2.shape[1], x.dtype)
    picked = -x2[np.arange(len(safe_t)), safe_t]
    if row_w is None:  # every row counts once: the weights' sum is the row count
        total = _row_count(len(t), x.dtype)
    else:
        picked = picked * row_w
        # summed in the order of PyTorch's kernel, the weights (where given) likewise
        total = row_w.sum() if weight is None else nll_sum(row_w, valid)
    if reduction == "mean":
        data = nll_sum(picked, valid) / total
    elif reduction == "sum":
        data = nll_sum(picked, valid)
    else:
        data = picked.reshape(()) if squeeze else picked
    out = wrap(np.asarray(data, x.dtype), input._dtype)
    if any_requires_grad((input,)):
        coeff = _nll_coefficients(row_w, valid, total, reduction, len(t), x.dtype)
        coeff = coeff.reshape(()) if squeeze and reduction == "none" else coeff
        record(NllLossBackward0, (input,), out, (x2.shape, safe_t.reshape(-1, 1), coeff))
    return out


def _row_count(n, dtype):
    """np.ones(n, dtype).sum() without the array where that is exactly n."""
    if n <= 1 << 24 and dtype in (np.float32, np.float64):
        return dtype.type(n)
    return np.ones(n, dtype).sum()


def _nll_coefficients(row_w, valid, total, reduction, rows, dtype):
    """d loss / d input at each sample's target, as PyTorch's kernel forms it: weight times
    -(1 / total weight) for a mean, and an ignored sample's gradient zero even when the total
    weight is zero. row_w None: every row's weight is 1 (and the total is the row count)."""
    if row_w is None:
        return np.full(rows, -(dtype.type(1) / total) if reduction == "mean" else -1, dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = -(np.asarray(1, row_w.dtype) / total) if reduction == "mean" else -1
        if valid is None:
            return (row_w * scale).astype(row_w.dtype)
        return np.where(valid, row_w * scale, 0).astype(row_w.dtype)


def _row_weights(t, weight, ignore_index, classes, dtype):
    """The target classes with ignored rows pointed at class 0, each row's weight (0 for an
    ignored row; None: all are 1), and which rows count (None: all of them); refuses a class
    out of range."""
    if weight is None and t.size:
        low, high = t.min(), t.max()
        if 0 <= low and high < classes and not low <= ignore_index <= high:
            return t, None, None  # no ignored row (the common case: two reductions)
    valid = t != ignore_index
    safe_t = np.where(valid, t, 0)
    if np.any((safe_t < 0) | (safe_t >= classes)):
        raise IndexError(f"nll_loss: a target class is out of range for {classes} classes")
    w = np.ones(classes, dtype) if weight is None else weight._data
    return safe_t, np.where(valid, w[safe_t], 0).astype(dtype), valid


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    _check_reduction(reduction)
    x, t = input._data, target._data
    if np.any((x < 0) | (x > 1)):
        raise RuntimeError("binary_cross_entropy needs inputs between 0 and 1 (probabilities); "
                           "apply sigmoid first, or use binary_cross_entropy_with_logits")
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    data = _reduced(loss, reduction)
    dt = float_dtype(input)
    out = wrap(np.asarray(data, dt.np), dt)
    if any_requires_grad((input, target)):
        record(BinaryCrossEntropyBackward0, (input, target), out,
               (save_input(input), save_input(target), reduction, max(x.size, 1)))
    return out


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """(1 - t) * x - log(sigmoid(x)), one node as in PyTorch; `weight` is a constant."""
    _check_reduction(reduction)
    if pos_weight is not None:  # a composition of recorded ops (nn/loss.py)
        return _weighted_bce_with_logits(input, target, weight, reduction=reduction,
                                         pos_weight=pos_weight)
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    dt = float_dtype(input)
    x, t = input._data, target._data.astype(dt.np, copy=False)
    w = None if weight is None else weight._data.astype(dt.np, copy=False)
    with np.errstate(over="ignore"):
        log_sigmoid = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
    loss = (1 - t) * x - log_sigmoid
    if w is not None:
        loss = loss * w
    data = _reduced(loss, reduction)
    out = wrap(np.asarray(data, dt.np), dt)
    if any_requires_grad((input, target)):
        record(BinaryCrossEntropyWithLogitsBackward0, (input, target), out,
               (save_input(input), save_input(target), w, reduction, max(x.size, 1)))
    return out


def dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    from runtime import random

    keep = (random.rand(input._data.shape, np.float32) >= p).astype(input._data.dtype)
    return F.mul(input, wrap(keep / (1 - p), input._dtype))


# the layer families (each imports this module's core, so they are registered last)
from runtime.nn.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: E402,F401,E501
from runtime.nn.pooling import (  # noqa: E402,F401
    adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d)
from runtime.nn.norm import batch_norm, group_norm, layer_norm  # noqa: E402,F401
from runtime.nn.activation import (  # noqa: E402,F401
    elu, embedding, gelu, leaky_relu, silu, softplus)
from runtime.nn.padding import normalize, one_hot, pad  # noqa: E402,F401
from runtime.nn.loss import (  # noqa: E402,F401
    binary_cross_entropy, cosine_embedding_loss, cross_entropy, huber_loss, kl_div,
    smooth_l1_loss)
from runtime.nn.loss import (  # noqa: E402  (pos_weight; without it, the one node above)
    binary_cross_entropy_with_logits as _weighted_bce_with_logits)
from runtime.nn.attention import scaled_dot_product_attention  # noqa: E402,F401
