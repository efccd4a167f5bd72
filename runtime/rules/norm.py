"""Derivative rules of the fused normalisation primitives: native_batch_norm,
native_layer_norm and native_group_norm (one node each, named as PyTorch names them).

Each primitive's inputs are (input, weight, bias); weight and bias may be absent. The forward
pass saves the statistics it used (mean and inverse standard deviation, shaped to broadcast
against the input) so the eager backward reuses them. `ops.norm_stats` hands those saved
values back on numpy; on Tensors it recomputes them from the input as recorded operations,
so double backward differentiates through the statistics too. Batch norm in eval mode uses
the running statistics: constants in both namespaces.

With xhat = (x - mean) * invstd over the reduced axes (M values each) and gy = g * weight:
    x_bar = invstd * (gy - sum(gy) / M - xhat * sum(gy * xhat) / M)
    weight_bar = sum(g * xhat),  bias_bar = sum(g)   (over every axis but the parameter's)
Batch norm keeps PyTorch's grouping of this formula (k = dot * invstd^2 / M); on numpy,
`ops.batch_norm_grads` answers for contiguous float32 input with PyTorch's bits (its summation
orders, runtime/rules/batch_norm_cpu.py), and None elsewhere (on Tensors, for double backward).
"""

from runtime.rules import rule


def _param_sum(ops, v, axes, shape):
    return ops.reshape(ops.sum_dim(v, axes, False), shape)


@rule("native_batch_norm")
def native_batch_norm(ops, g, needs, x, w, stats, geom):
    """geom: (reduced axes, parameter broadcast shape, count M, eps, training)."""
    axes, pshape, count, eps, training = geom
    exact = ops.batch_norm_grads(g, x, w, stats, training, needs)
    if exact is not None:
        return exact
    mean, invstd = ops.norm_stats(x, axes, eps, stats) if training else stats
    channels = (pshape[1],)
    scale = invstd if w is None else ops.mul(ops.reshape(w, pshape), invstd)
    sum_g = ops.sum_dim(g, axes, True)
    centered = ops.sub(x, mean)
    dot = ops.sum_dim(ops.mul(centered, g), axes, True)
    gx = gw = gb = None
    if needs[0] and training:
        k = ops.div(ops.mul(ops.mul(dot, invstd), invstd), count)
        grad_mean = ops.div(sum_g, count)
        gx = ops.mul(ops.sub(ops.sub(g, grad_mean), ops.mul(centered, k)), scale)
    elif needs[0]:
        gx = ops.mul(g, scale)
    if w is not None and needs[1]:
        gw = ops.reshape(ops.mul(dot, invstd), channels)
    if needs[2]:
        gb = ops.reshape(sum_g, channels)
    return gx, gw, gb


def _normalized_grad(ops, gy, xhat, axes, invstd, count):
    """invstd * (gy - mean(gy) - xhat * mean(gy * xhat)) over `axes`."""
    mean_gy = ops.div(ops.sum_dim(gy, axes, True), count)
    proj = ops.div(ops.sum_dim(ops.mul(gy, xhat), axes, True), count)
    return ops.mul(ops.sub(ops.sub(gy, mean_gy), ops.mul(xhat, proj)), invstd)


@rule("native_layer_norm")
def native_layer_norm(ops, g, needs, x, w, stats, geom):
    """geom: (normalised axes, leading axes, count M, eps)."""
    axes, leading, count, eps = geom
    exact = ops.layer_norm_grads(g, x, w, stats, axes, needs)
    if exact is not None:
        return exact
    mean, invstd = ops.norm_stats(x, axes, eps, stats)
    xhat = ops.mul(ops.sub(x, mean), invstd)
    gx = gw = gb = None
    if needs[0]:
        gy = g if w is None else ops.mul(g, w)
        gx = _normalized_grad(ops, gy, xhat, axes, invstd, count)
    if w is not None and needs[1]:
        gw = ops.sum_dim(ops.mul(g, xhat), leading, False) if leading else ops.mul(g, xhat)
    if needs[2]:
        gb = ops.sum_dim(g, leading, False) if leading else g
    return gx, gw, gb


@rule("native_group_norm")
def native_group_norm(ops, g, needs, x, w, stats, geom):
    """geom: (grouped shape (N, G, -1), parameter broadcast shape, count M, eps)."""
    grouped, pshape, count, eps = geom
    shape = ops.shape(x)
    xg = ops.reshape(x, grouped)
    mean, invstd = ops.norm_stats(xg, (2,), eps, stats)
    xhat = ops.reshape(ops.mul(ops.sub(xg, mean), invstd), shape)
    axes = (0,) + tuple(range(2, len(shape)))
    gx = gw = gb = None
    if needs[0]:
        gy = ops.reshape(g if w is None else ops.mul(g, ops.reshape(w, pshape)), grouped)
        xhat_g = ops.reshape(xhat, grouped)
        gx = ops.reshape(_normalized_grad(ops, gy, xhat_g, (2,), invstd, count), shape)
    if w is not None and needs[1]:
        gw = _param_sum(ops, ops.mul(g, xhat), axes, (shape[1],))
    if needs[2]:
        gb = _param_sum(ops, g, axes, (shape[1],))
    return gx, gw, gb
