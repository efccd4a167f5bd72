"""A helper shared by the operator families: nodes whose saved values are plain numpy data
(index keys, masks, weights) still release them after a non-retaining backward, as PyTorch's
nodes release their saved index tensors, so a second backward through them raises."""


def _freed_after_backward(node):
    node._freed = False  # Node._release drops _args and marks the node freed
    return node
