"""Derivative rule of torch.cdist (`runtime.ops.distance`): the slope of each distance in each
row difference, summed over the other operand's rows. `ops.cdist_backward` computes it; its
Tensor twin records a CdistBackwardBackward0 node, which, as in PyTorch, has no derivative."""

from runtime.rules import rule


@rule("cdist")
def cdist(ops, g, needs, x1, x2, p, result):
    g1 = ops.cdist_backward(g, x1, x2, p, result, 0) if needs[0] else None
    g2 = ops.cdist_backward(g, x1, x2, p, result, 1) if needs[1] else None
    return g1, g2


@rule("cdist_backward")
def cdist_backward(ops, g, needs):
    raise NotImplementedError("the derivative for '_cdist_backward' is not implemented.")


@rule("euclidean_dist")
def euclidean_dist(ops, g, needs, x1, x2, result):
    # d = sqrt(|x1|^2 - 2 x1.x2 + |x2|^2): each distance's slope in x1 is (x1 - x2) / d, taken
    # as 0 where d = 0, and summed over the other operand's rows with one product
    ratio = ops.masked_fill(ops.div(g, result), ops.eq(result, 0), 0)
    g1 = g2 = None
    if needs[0]:
        g1 = ops.sub(ops.mul(x1, ops.sum_dim(ratio, -1, True)), ops.matmul(ratio, x2))
    if needs[1]:
        column_sums = ops.unsqueeze(ops.sum_dim(ratio, -2, False), -1)
        g2 = ops.sub(ops.mul(x2, column_sums), ops.matmul(ops.mT(ratio), x1))
    return g1, g2
