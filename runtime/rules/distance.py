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
