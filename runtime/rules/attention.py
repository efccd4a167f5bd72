"""Derivative rule of PyTorch's fused CPU attention kernel (flash attention: one node,
ScaledDotProductFlashAttentionForCpuBackward0, inputs (query, key, value)).

The gradients are the kernel's own backward (runtime/rules/flash_attention_cpu.py), which
recomputes the attention weights from the saved output and log-sum-exp. Like PyTorch, the
node cannot be differentiated twice: on Tensors (create_graph) the rule refuses.
"""

from runtime.rules import rule


@rule("flash_attention_cpu")
def flash_attention_cpu(ops, g, needs, q, k, v, out, lse, scale):
    grads = ops.flash_attention_grads(g, q, k, v, out, lse, scale)
    if grads is None:
        raise RuntimeError(
            "scaled_dot_product_attention's fused CPU kernel has no second derivative; for "
            "higher-order gradients compute attention as softmax(q @ k.T * scale) @ v")
    return grads
