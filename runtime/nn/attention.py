"""Attention: F.scaled_dot_product_attention and nn.MultiheadAttention, composed from
differentiable eager ops (linear, bmm, softmax) in PyTorch's order of operations. Where
PyTorch's CPU dispatch picks its fused flash kernel and its order is reproduced
(rules/flash_attention_cpu.py: float32, no mask, dropout or causal masking, the sizes
measured), scaled_dot_product_attention is that kernel, one node as in PyTorch; so is
MultiheadAttention's attention when no weights are asked for (PyTorch's route there).

MultiheadAttention draws its random numbers in PyTorch's order: out_proj (a Linear) is built
first, then in_proj_weight gets xavier_uniform_; both biases start at zero.
"""

import math

import numpy as np

from runtime import ops as F
from runtime.nn import functional as NF
from runtime.autograd_meta import any_requires_grad, record
from runtime.function import node_class, save_input
from runtime.nn.modules import Linear, Module, Parameter
from runtime.ops._core import wrap
from runtime.rules import flash_attention_cpu as flash_cpu
from runtime.tensor import Tensor


def _additive_mask(mask, like):
    """Boolean masks (True = may attend, as in scaled_dot_product_attention) or float
    masks (added to the scores) as a float tensor to add."""
    if mask._dtype.is_floating_point:
        return mask
    return wrap(np.where(mask._data, 0.0, -np.inf).astype(like._data.dtype), like._dtype)


ScaledDotProductFlashAttentionForCpuBackward0 = node_class(
    "ScaledDotProductFlashAttentionForCpuBackward0", "flash_attention_cpu")


def _fused(query, key, value, scale):
    """PyTorch's fused CPU kernel (rules/flash_attention_cpu.py) as one node."""
    q, k, v = query._data, key._data, value._data
    out_data, lse = flash_cpu.forward(q, k, v, scale)
    out = wrap(out_data, query._dtype)
    if any_requires_grad((query, key, value)):
        record(ScaledDotProductFlashAttentionForCpuBackward0, (query, key, value), out,
               (save_input(query), save_input(key), save_input(value), out_data, lse, scale))
    return out


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    if is_causal and attn_mask is not None:
        raise RuntimeError("give either attn_mask or is_causal=True, not both")
    if attn_mask is None and not dropout_p and not is_causal and \
            flash_cpu.applies(query._data, key._data, value._data, scale):
        return _fused(query, key, value, scale)
    scale = 1.0 / math.sqrt(query._data.shape[-1]) if scale is None else scale
    scores = F.mul(F.matmul(query, F.transpose(key, -2, -1)), scale)
    if is_causal:
        l, s = query._data.shape[-2], key._data.shape[-2]
        attn_mask = wrap(np.tril(np.ones((l, s), bool)), None)
    if attn_mask is not None:
        scores = F.add(scores, _additive_mask(attn_mask, scores))
    weights = F.softmax(scores, -1)
    if dropout_p:
        weights = NF.dropout(weights, dropout_p, True)
    return F.matmul(weights, value)


def _split_packed(proj, parts, e):
    """(..., parts * E) -> `parts` contiguous (..., E) pieces, by PyTorch's unflatten /
    unsqueeze / transpose / squeeze / contiguous / select sequence."""
    proj = F.reshape(proj, tuple(proj._data.shape[:-1]) + (parts, e))
    proj = F.squeeze(F.transpose(F.unsqueeze(proj, 0), 0, -2), -2).contiguous()
    return [proj[i] for i in range(parts)]


def _same_map(fn, query, key, value):
    """fn applied to query, key and value, once per distinct tensor, so that identical
    inputs stay identical (the packed projections depend on it)."""
    done = {}
    for t in (query, key, value):
        if id(t) not in done:
            done[id(t)] = fn(t)
    return [done[id(t)] for t in (query, key, value)]


def baddbmm(mask, a, b):
    from runtime import baddbmm as op

    return op(mask, a, b)


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear that PyTorch uses as MultiheadAttention.out_proj (named for its repr)."""


def _mha_mask(mask, like):
    """MultiheadAttention's masks: boolean True means *not allowed* (the opposite of SDPA)."""
    if mask._dtype.is_floating_point:
        return mask
    return wrap(np.where(mask._data, -np.inf, 0.0).astype(like._data.dtype), like._dtype)


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or \
                (vdim not in (None, embed_dim)):
            raise NotImplementedError("add_bias_kv, add_zero_attn and kdim/vdim != embed_dim "
                                      "are not supported")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        dt = dtype or F.get_default_dtype()
        self.in_proj_weight = Parameter(Tensor._wrap(np.empty((3 * embed_dim, embed_dim),
                                                              dt.np), dt))
        if bias:
            self.in_proj_bias = Parameter(Tensor._wrap(np.empty(3 * embed_dim, dt.np), dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self):
        from runtime.nn import init

        init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def _project(self, query, key, value):
        """q, k, v projections with PyTorch's packed in-projection (so the graph shows the
        same view, select and split nodes): one matmul when query, key and value are one
        tensor, two when key and value are."""
        e = self.embed_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        if key is value and query is key:
            return _split_packed(NF.linear(query, w, b), 3, e)
        if key is value:
            w_q, w_kv = F.split(w, [e, 2 * e])
            b_q, b_kv = (None, None) if b is None else F.split(b, [e, 2 * e])
            kv = _split_packed(NF.linear(key, w_kv, b_kv), 2, e)
            return [NF.linear(query, w_q, b_q)] + kv
        weights = F.chunk(w, 3)
        biases = (None,) * 3 if b is None else F.chunk(b, 3)
        return [NF.linear(x, pw, pb) for x, pw, pb in zip((query, key, value), weights, biases)]

    def _heads(self, x, length, batch):
        """(L, N, E) -> (N * heads, L, head_dim)."""
        return F.transpose(F.reshape(x, (length, batch * self.num_heads, self.head_dim)), 0, 1)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query._data.ndim == 3
        if self.batch_first and batched:
            query, key, value = _same_map(lambda t: F.transpose(t, 0, 1), query, key, value)
        if not batched:
            query, key, value = _same_map(lambda t: F.unsqueeze(t, 1), query, key, value)
        tgt_len, batch, _ = query._data.shape
        src_len = key._data.shape[0]
        q, k, v = self._project(query, key, value)
        q, k, v = (self._heads(t, n, batch) for t, n in ((q, tgt_len), (k, src_len),
                                                         (v, src_len)))
        mask = self._merged_mask(attn_mask, key_padding_mask, q, batch, tgt_len, src_len)
        dropout = self.dropout if self.training else 0.0
        if not need_weights and mask is None and not dropout:
            out = self._attend(q, k, v, batch, tgt_len, src_len)
            return self._outputs(out, None, batched, False, average_attn_weights, None)
        q_scaled = F.mul(q, math.sqrt(1.0 / self.head_dim))
        if mask is not None:
            scores = baddbmm(mask, q_scaled, F.transpose(k, -2, -1))
        else:
            scores = F.bmm(q_scaled, F.transpose(k, -2, -1))
        weights = F.softmax(scores, -1)
        if self.dropout and self.training:
            weights = NF.dropout(weights, self.dropout, True)
        out = F.reshape(F.transpose(F.bmm(weights, v), 0, 1), (tgt_len * batch, self.embed_dim))
        out = F.reshape(self.out_proj(out), (tgt_len, batch, self.embed_dim))
        return self._outputs(out, weights, batched, need_weights, average_attn_weights,
                             (batch, tgt_len, src_len))

    def _attend(self, q, k, v, batch, tgt_len, src_len):
        """PyTorch's route when no weights are asked for: the heads as (N, heads, L, head_dim)
        views through scaled_dot_product_attention, back to (L, N, E) through the out
        projection."""
        heads, dim = self.num_heads, self.head_dim
        q, k, v = (F.view(t, (batch, heads, n, dim))
                   for t, n in ((q, tgt_len), (k, src_len), (v, src_len)))
        out = scaled_dot_product_attention(q, k, v)
        out = F.reshape(F.permute(out, (2, 0, 1, 3)), (batch * tgt_len, self.embed_dim))
        return F.reshape(self.out_proj(out), (tgt_len, batch, self.embed_dim))

    def _merged_mask(self, attn_mask, key_padding_mask, q, batch, tgt_len, src_len):
        mask = None
        if attn_mask is not None:
            mask = _mha_mask(attn_mask, q)
            if mask._data.ndim == 2:
                mask = F.unsqueeze(mask, 0)
        if key_padding_mask is not None:
            pad = _mha_mask(key_padding_mask, q)
            pad = F.reshape(F.expand(F.reshape(pad, (batch, 1, 1, src_len)),
                                     (batch, self.num_heads, 1, src_len)),
                            (batch * self.num_heads, 1, src_len))
            mask = pad if mask is None else F.add(mask, pad)
        return mask

    def _outputs(self, out, weights, batched, need_weights, average, sizes):
        if self.batch_first and batched:
            out = F.transpose(out, 0, 1)
        if not batched:
            out = F.squeeze(out, 1)
        if not need_weights:
            return out, None
        batch, tgt_len, src_len = sizes
        w = F.reshape(weights, (batch, self.num_heads, tgt_len, src_len))
        if average:
            w = F.mean(w, 1)
        if not batched:
            w = F.squeeze(w, 0)
        return out, w
