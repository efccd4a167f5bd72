"""Pairwise distances: torch.cdist on its direct path (one CdistBackward0 node, which keeps
x1, x2, p and the result, and whose gradient is a CdistBackwardBackward0 node that PyTorch
cannot differentiate again).

PyTorch computes p = 2 distances through a matrix product when compute_mode asks for it, or by
default when either operand has more than 25 rows. Its graph, reproduced here: the operands are
expanded to the broadcast batch and reshaped to one batch dim (ExpandBackward0, then
ViewBackward0, with a CloneBackward0 between them when the expansion broadcasts), unless the
batch has one element, when they are used as they are; an EuclideanDistBackward0 node keeps
x1, x2 and the result; a ViewBackward0 gives the output its shape. The values are
sqrt(clamp_min([-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T, 0)) in that order, so they equal
PyTorch's bit for bit wherever our row sums |x|^2 do (always in float32; in float64 our sum
adds in numpy's order, which can differ from PyTorch's in the last bit).
"""

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import save_input, save_output
from runtime.ops._core import wrap
from runtime.creation import ones_like
from runtime.grad_mode import no_grad
from runtime.ops._family import node
from runtime.ops.shape import cat

CdistBackward0 = node("CdistBackward0", "cdist")
EuclideanDistBackward0 = node("EuclideanDistBackward0", "euclidean_dist")

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


def _check(x1, x2, p, compute_mode):
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist() needs at least 2-d operands, got {x1.dim()}-d and "
                           f"{x2.dim()}-d")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist(): x1 and x2 must have the same number of columns, got "
                           f"{x1.shape[-1]} and {x2.shape[-1]}")
    for t in (x1, x2):
        if t._dtype.category != dtypes.FLOAT or t._dtype.is_complex:
            raise RuntimeError(f"cdist() only supports floating-point dtypes, got {t._dtype}")
    if p < 0:
        raise RuntimeError(f"cdist() only supports non-negative p values, got {p}")
    if compute_mode not in (None, *_MODES):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")


def _uses_matmul(x1, x2, p, compute_mode):
    if p != 2 or compute_mode == "donot_use_mm_for_euclid_dist":
        return False
    return compute_mode == "use_mm_for_euclid_dist" or x1.shape[-2] > 25 or x2.shape[-2] > 25


def pairwise_differences(a, b):
    """a[..., i, :] - b[..., j, :] for every row pair: shape (..., P, R, M)."""
    return a[..., :, None, :] - b[..., None, :, :]


def cdist_values(a, b, p):
    diff = np.abs(pairwise_differences(a, b))
    if p == 0:
        return np.count_nonzero(diff, axis=-1).astype(a.dtype)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return np.sqrt((diff * diff).sum(-1))
    if p == float("inf"):
        return diff.max(-1, initial=0)
    return ((diff ** p).sum(-1)) ** (1.0 / p)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The p-norm distance between each row of x1 and each row of x2 (batched over leading
    dims, which broadcast)."""
    _check(x1, x2, p, compute_mode)
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"cdist(): x1 and x2 must have the same dtype, got {x1._dtype} and "
                           f"{x2._dtype}")
    if _uses_matmul(x1, x2, p, compute_mode):
        return _cdist_matmul(x1, x2)
    with np.errstate(all="ignore"):
        out = wrap(np.ascontiguousarray(cdist_values(x1._data, x2._data, float(p))), x1._dtype)
    if any_requires_grad((x1, x2)):
        record(CdistBackward0, (x1, x2), out,
               (save_input(x1), save_input(x2), float(p), save_output(out, "CdistBackward0")))
    return out


def euclidean_dist(x1, x2):
    """The EuclideanDistBackward0 node: distances of 2-d or batched operands of one batch."""
    with no_grad():
        norm1 = x1.pow(2).sum(-1, keepdim=True)
        norm2 = x2.pow(2).sum(-1, keepdim=True)
        padded1 = cat([x1.mul(-2), norm1, ones_like(norm1)], -1)
        padded2 = cat([x2, ones_like(norm2), norm2], -1)
        out = padded1.matmul(padded2.mT).clamp_min(0).sqrt()
    if any_requires_grad((x1, x2)):
        record(EuclideanDistBackward0, (x1, x2), out,
               (save_input(x1), save_input(x2), save_output(out, "EuclideanDistBackward0")))
    return out


def _flatten_batch(x, flat):
    # PyTorch copies a broadcasting expansion (CloneBackward0) and then views the copy
    if not x.is_contiguous():
        x = x.contiguous()
    return x.view(flat, *x.shape[-2:])


def _cdist_matmul(x1, x2):
    batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    rows1, rows2, columns = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    out_shape = (*batch, rows1, rows2)
    if int(np.prod(batch, dtype=np.int64)) != 1:
        flat = int(np.prod(batch, dtype=np.int64))
        x1 = _flatten_batch(x1.expand(*batch, rows1, columns), flat)
        x2 = _flatten_batch(x2.expand(*batch, rows2, columns), flat)
    return euclidean_dist(x1, x2).view(out_shape)


FUNCTIONS = ["cdist"]
METHODS = []
