"""Derivative rule of PyTorch's fused CPU attention kernel (flash attention: one node,
ScaledDotProductFlashAttentionForCpuBackward0, inputs (query, key, value)).

The gradients are the kernel's own backward (runtime/rules/flash_attention_cpu.py), which
recomputes the attention weights from the saved output and log-sum-exp. Like PyTorch, the
node cannot be differentiated twice: on Tensors (create_graph) the gradients are the same
values hung on a NotImplemented node, which raises only if a backward reaches it.
"""

from runtime.rules import rule


@rule("flash_attention_cpu")
def flash_attention_cpu(ops, g, needs, q, k, v, out, lse, scale):
    return ops.flash_attention_grads(g, q, k, v, out, lse, scale)
