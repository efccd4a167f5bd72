"""torch.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks, and
the Node base class.

Inside `saved_tensors_hooks(pack, unpack)`, every tensor a node saves for backward (an input or
an output of the operation) is handed to `pack` when the node is recorded, and whatever `pack`
returned is handed to `unpack` when backward needs the tensor; unpack's tensor is what the
derivative rule then uses. Hooks nest (the innermost pair applies). Tensors saved through
hooks are not version-checked: the hooks own them. Python numbers and internal constants
(masks, shapes) are not tensors and are saved as they are.
"""

from runtime.function import SAVE_HOOKS, Node  # noqa: F401  (Node: torch.autograd.graph.Node)

_disabled = []  # messages of the open disable_saved_tensors_hooks blocks


class saved_tensors_hooks:
    def __init__(self, pack_hook, unpack_hook):
        self.pair = (pack_hook, unpack_hook)

    def __enter__(self):
        if _disabled:
            raise RuntimeError(_disabled[-1])
        SAVE_HOOKS.append(self.pair)
        return self

    def __exit__(self, *exc):
        SAVE_HOOKS.remove(self.pair)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors in CPU memory (optionally pinned). adcompile computes on the CPU
    only, so the tensors are kept as copies, which is what the hooks of PyTorch do for a CPU
    tensor as well."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(_pack_to_cpu, _unpack_from_cpu)


def _pack_to_cpu(t):
    return t.detach().clone()


def _unpack_from_cpu(packed):
    return packed


class disable_saved_tensors_hooks:
    """Within this block, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.message = error_message

    def __enter__(self):
        if SAVE_HOOKS:
            raise RuntimeError(self.message)
        _disabled.append(self.message)
        return self

    def __exit__(self, *exc):
        _disabled.pop()
        return False
