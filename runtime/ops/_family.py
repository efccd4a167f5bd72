"""Helpers shared by the operator families added for issue 16 (special, scans, indexing).

- `node(name, prim)`: each family makes its own node classes instead of sharing
  `function.node_class`'s cache, so a class name that another module gives a different
  primitive (ScatterBackward0, RemainderBackward1, DiagonalBackward0 ...) never picks up the
  wrong rule, whichever module is imported first.
- `record_freed(cls, inputs, out, args)`: `record`, for nodes whose saved values are plain
  numpy data (index keys, masks, weights): they still release them after a non-retaining
  backward, as PyTorch's nodes release their saved index tensors, so a second backward
  through them raises.
"""

from runtime.autograd_meta import record
from runtime.function import SAVED_NAMES, MultiOutputNode, Node, saved_properties
from runtime.rules import RULES


def node(name, prim, multi_output=False):
    base = MultiOutputNode if multi_output else Node
    fields = {"__slots__": (), "_rule": staticmethod(RULES[prim])}
    fields.update(saved_properties(SAVED_NAMES.get(name)))
    return type(name, (base,), fields)


def record_freed(cls, inputs, out, args):
    grad_fn = record(cls, inputs, out, args)
    grad_fn._freed = False  # Node._release drops _args and marks the node freed
    return grad_fn
