"""Losses beyond the core ones: cross entropy with class weights, ignore_index and label
smoothing (class-index or probability targets, any number of trailing dimensions), weighted
binary cross entropy (also from logits, with pos_weight), smooth L1, Huber, KL divergence and
cosine embedding. Compositions of differentiable eager ops, following PyTorch's formulas,
except smooth L1 and Huber, which PyTorch computes in one kernel with a node of its own
(SmoothL1LossBackward0, HuberLossBackward0, saving input, target, reduction and beta/delta).
"""

import warnings

import numpy as np

from runtime import dtypes
from runtime import ops as F
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.nn import functional as NF
from runtime.nn.modules import _Loss
from runtime.ops._core import wrap
from runtime.ops.special import xlogy


# the core kernel (with its BinaryCrossEntropyBackward0 node), captured before
# runtime.nn.functional rebinds the name to the weighted version below
_bce_unweighted = NF.binary_cross_entropy


def _reduce(loss, reduction):
    NF._check_reduction(reduction)
    return NF._reduce(loss, reduction)


def _classes_last(x):
    """(N, C, d1, ...) -> (N*d1*..., C): PyTorch's K-dimensional losses as 2-d ones."""
    if x._data.ndim <= 2:
        return x
    c = x._data.shape[1]
    return F.reshape(F.permute(x, (0,) + tuple(range(2, x._data.ndim)) + (1,)), (-1, c))


def _index_ce(input, target, weight, ignore_index, reduction, eps):
    dim = 1 if input._data.ndim > 1 else 0
    logp = F.log_softmax(input, dim)
    flat_logp = _classes_last(logp)
    flat_t = F.reshape(target, (-1,)) if input._data.ndim > 2 else target
    nll = NF.nll_loss(flat_logp, flat_t, weight, ignore_index=ignore_index,
                      reduction=reduction)
    if reduction == "none" and input._data.ndim > 2:
        nll = F.reshape(nll, target._data.shape)
    if not eps:
        return nll
    smooth = _smoothing_term(flat_logp, flat_t, weight, ignore_index, reduction,
                             target._data.shape if input._data.ndim > 2 else None)
    return F.add(F.mul(nll, 1 - eps), F.mul(smooth, eps / flat_logp._data.shape[-1]))


def _smoothing_term(logp, t, weight, ignore_index, reduction, none_shape):
    """-sum_c w_c logp_c per sample (zero where ignored), reduced as nll_loss reduces."""
    per_class = logp if weight is None else F.mul(logp, weight)
    smooth = F.neg(F.sum(per_class, -1))
    keep = F.ne(t, ignore_index)
    smooth = F.where(keep, smooth, 0.0)
    if reduction == "mean":
        if weight is None:
            total = F.sum(keep)
        else:
            safe = F.where(keep, t, 0)
            total = F.sum(F.where(keep, F.index_select(weight, 0, F.reshape(safe, (-1,))),
                                  0.0))
        smooth = F.div(F.sum(smooth), total)
    elif reduction == "sum":
        smooth = F.sum(smooth)
    elif none_shape is not None:
        smooth = F.reshape(smooth, none_shape)
    return smooth


def _prob_ce(input, target, weight, reduction, eps):
    dim = 1 if input._data.ndim > 1 else 0
    c = input._data.shape[dim]
    logp = F.log_softmax(input, dim)
    if eps:
        target = F.add(F.mul(target, 1 - eps), eps / c)
    if weight is not None:
        shape = (-1,) + (1,) * (input._data.ndim - 2) if dim else (-1,)
        logp = F.mul(logp, F.reshape(weight, shape))
    loss = F.neg(F.sum(F.mul(logp, target), dim))
    if reduction == "mean":
        n = input._data.size // c
        return F.div(F.sum(loss), n)
    return _reduce(loss, reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    NF._check_reduction(reduction)
    if target._dtype.is_floating_point:
        return _prob_ce(input, target, weight, reduction, label_smoothing)
    return _index_ce(input, target, weight, ignore_index, reduction, label_smoothing)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    if weight is None:
        return _bce_unweighted(input, target, reduction=reduction)
    loss = _bce_unweighted(input, target, reduction="none")
    return _reduce(F.mul(loss, weight), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    if tuple(input._data.shape) != tuple(target._data.shape):
        raise ValueError(f"target size {list(target._data.shape)} must equal input size "
                         f"{list(input._data.shape)}")
    softplus_neg = F.add(F.log1p(F.exp(F.neg(F.abs(input)))), F.relu(F.neg(input)))
    if pos_weight is not None:
        softplus_neg = F.mul(F.add(F.mul(target, F.sub(pos_weight, 1)), 1), softplus_neg)
    loss = F.add(F.mul(F.rsub(target, 1), input), softplus_neg)
    if weight is not None:
        loss = F.mul(loss, weight)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss needs beta >= 0")
    if beta == 0:  # PyTorch's l1_loss then, a composition
        return NF.l1_loss(input, target, reduction=reduction)
    return _own_node_loss(SmoothL1LossBackward0, _smooth_l1, input, target, reduction, beta,
                          F.result_dtype(input, target))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss needs delta > 0")
    if weight is None:  # the result has input's dtype (computed in the promoted one)
        return _own_node_loss(HuberLossBackward0, _huber, input, target, reduction, delta,
                              input._dtype)
    if tuple(weight._data.shape) != tuple(input._data.shape):
        raise ValueError(f"huber_loss: the weight's shape {list(weight._data.shape)} must be "
                         f"the input's, {list(input._data.shape)}")
    NF._check_reduction(reduction)
    loss = _own_node_loss(HuberLossBackward0, _huber, input, target, "none", delta,
                          input._dtype)
    return _reduce(F.mul(loss, weight), reduction)


HuberLossBackward0 = node_class("HuberLossBackward0", "huber_loss")
SmoothL1LossBackward0 = node_class("SmoothL1LossBackward0", "smooth_l1_loss")


def _huber(d, delta):
    z = np.abs(d)
    return np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


def _smooth_l1(d, beta):
    z = np.abs(d)
    return np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


def _own_node_loss(cls, elementwise, input, target, reduction, parameter, dt):
    """A loss PyTorch computes in one kernel, recorded as its node `cls` (which saves input,
    target, the reduction and `parameter`): elementwise(input - target, parameter) in the
    promoted dtype, rounded to `dt`, reduced as PyTorch reduces."""
    NF._check_reduction(reduction)
    if dt.category != dtypes.FLOAT:
        raise RuntimeError(f"a loss of {dt} cannot be computed: its result is floating point")
    with np.errstate(all="ignore"):
        loss = np.asarray(elementwise(input._data - target._data, parameter), dt.np)
    out = wrap(np.asarray(NF._reduced(loss, reduction), dt.np), dt)
    if any_requires_grad((input, target)):
        record(cls, (input, target), out,
               (save_input(input), save_input(target), reduction, parameter, loss.size))
    return out


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """PyTorch's composition: exp(t) * (t - input) for a log target, else
    xlogy(t, t) - t * input; 'batchmean' divides the sum by the batch size (not for a 0-dim
    input)."""
    if reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides by the number of elements, not by the "
                      "batch size; 'batchmean' gives the KL divergence's definition (and 'mean' "
                      "will mean that in a future release)", UserWarning, stacklevel=2)
    if log_target:
        loss = F.mul(F.exp(target), F.sub(target, input))
    else:
        loss = F.sub(xlogy(target, target), F.mul(target, input))
    if reduction == "batchmean":
        total = F.sum(loss)
        return F.div(total, input._data.shape[0]) if input._data.ndim else total
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    eps = 1e-12
    dot = F.sum(F.mul(input1, input2), -1)
    n1 = F.add(F.sum(F.mul(input1, input1), -1), eps)
    n2 = F.add(F.sum(F.mul(input2, input2), -1), eps)
    cos = F.div(dot, F.sqrt(F.mul(n1, n2)))
    pos = F.rsub(cos, 1.0)
    neg = F.clamp(F.sub(cos, margin), min=0.0)
    loss = F.where(F.eq(target, 1), pos, F.where(F.eq(target, -1), neg, 0.0))
    return _reduce(loss, reduction)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                             reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.weight = weight

    def forward(self, input, target):
        return binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):
        return NF.binary_cross_entropy_with_logits(input, target, self.weight,
                                                   reduction=self.reduction,
                                                   pos_weight=self.pos_weight)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return cosine_embedding_loss(input1, input2, target, self.margin,
                                     reduction=self.reduction)
