"""Module hooks and the call path that runs them, as in PyTorch.

- forward: register_forward_pre_hook / register_forward_hook (pre-hooks may replace the
  positional inputs, forward hooks the output);
- backward: register_full_backward_pre_hook(hook(module, grad_output)) and
  register_full_backward_hook(hook(module, grad_input, grad_output)). The module's tensor
  inputs and outputs pass through an identity Function, BackwardHookFunction, so the graph
  shows BackwardHookFunctionBackward nodes where PyTorch shows them: a post-hook on the
  outputs' node captures grad_output (and runs the pre-hooks, which may replace it), a
  post-hook on the inputs' node runs the full hooks once grad_input is known (they may
  replace it). The deprecated register_backward_hook hooks the output's grad_fn directly.
"""

import collections
import warnings

from runtime.custom_function import Function
from runtime.grad_mode import is_grad_enabled
from runtime.hooks import RemovableHandle
from runtime.ops._core import is_tensor


def _table(module, name):
    table = module.__dict__.get(name)
    if table is None:
        table = collections.OrderedDict()
        object.__setattr__(module, name, table)
    return table


def _register(module, table_name, hook, prepend, with_kwargs):
    table = _table(module, table_name)
    handle = RemovableHandle(table)
    table[handle.id] = (hook, with_kwargs)
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def register_forward_pre_hook(module, hook, *, prepend=False, with_kwargs=False):
    return _register(module, "_forward_pre_hooks", hook, prepend, with_kwargs)


def register_forward_hook(module, hook, *, prepend=False, with_kwargs=False,
                          always_call=False):
    return _register(module, "_forward_hooks", hook, prepend, with_kwargs)


def register_full_backward_pre_hook(module, hook, *, prepend=False):
    return _register(module, "_backward_pre_hooks", hook, prepend, False)


def register_full_backward_hook(module, hook, *, prepend=False):
    _check_kind(module, True)
    return _register(module, "_backward_hooks", hook, prepend, True)


def register_backward_hook(module, hook):
    _check_kind(module, False)
    return _register(module, "_backward_hooks", hook, False, False)


def _check_kind(module, full):
    """A module's backward hooks are either all full or all of the deprecated kind."""
    kinds = {is_full for _, is_full in module.__dict__.get("_backward_hooks", {}).values()}
    if kinds and kinds != {full}:
        raise RuntimeError("a module cannot mix register_backward_hook and "
                           "register_full_backward_hook hooks; use the full ones only")


def _run_pre_hooks(module, hooks, args, kwargs):
    for hook, with_kwargs in list(hooks.values()):
        if with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                args, kwargs = result
            continue
        result = hook(module, args)
        if result is not None:
            args = result if isinstance(result, tuple) else (result,)
    return args, kwargs


def call_with_hooks(module, args, kwargs):
    """module.forward(*args, **kwargs) wrapped in the module's forward and backward hooks."""
    table = module.__dict__
    backward = table.get("_backward_hooks", {}).values()
    full = [hook for hook, is_full in backward if is_full]
    old_style = [hook for hook, is_full in backward if not is_full]
    pre_backward = [hook for hook, _ in table.get("_backward_pre_hooks", {}).values()]
    pre = table.get("_forward_pre_hooks")
    if pre:
        args, kwargs = _run_pre_hooks(module, pre, args, kwargs)
    bw_hook = BackwardHook(module, full, pre_backward) if full or pre_backward else None
    if bw_hook is not None:
        args = bw_hook.setup_inputs(args)
    out = module.forward(*args, **kwargs)
    for hook, with_kwargs in list(table.get("_forward_hooks", {}).values()):
        result = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if result is not None:
            out = result
    if bw_hook is not None:
        out = bw_hook.setup_outputs(out)
    if old_style:
        _hook_output_node(module, out, old_style)
    return out


def _hook_output_node(module, out, hooks):
    """The deprecated backward hooks: node hooks on the grad_fn of the first output tensor."""
    while not is_tensor(out):
        out = next(iter(out.values())) if isinstance(out, dict) else out[0]
    if out.grad_fn is None:
        return
    for hook in hooks:
        out.grad_fn.register_hook(lambda gi, go, hook=hook: hook(module, gi, go))


class BackwardHookFunction(Function):
    """Identity on tensors; its node (BackwardHookFunctionBackward) is where hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One module call's backward hooks: links the gradients captured at the outputs' node
    with those at the inputs' node and calls the user's hooks with both."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None

    def setup_inputs(self, args):
        args, self.input_index = _wrap_tensors(args, self._on_input_node)
        self.n_inputs = len(args)
        return args

    def setup_outputs(self, out):
        single = not isinstance(out, tuple)
        if single and not is_tensor(out):
            warnings.warn("backward hooks run only when the module's output is a tensor or a "
                          "tuple of tensors", stacklevel=3)
        outs, self.output_index = _wrap_tensors((out,) if single else out, self._on_output_node)
        self.n_outputs = len(outs)
        return outs[0] if single else outs

    def _on_input_node(self, node):
        node.register_hook(self._input_hook)

    def _on_output_node(self, node):
        node.register_hook(self._output_hook)

    def _input_hook(self, grad_input, _):
        if self.grad_outputs is None:  # gradient reached the inputs without the outputs
            return None
        res = _scatter(self.input_index, grad_input, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(f"a full backward hook returned {len(out)} grad_input "
                                   f"entries; the module has {len(res)} inputs")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)

    def _output_hook(self, _, grad_output):
        self.grad_outputs = _scatter(self.output_index, grad_output, self.n_outputs)
        for hook in self.pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(f"a backward pre-hook returned {len(out)} grad_output "
                                   f"entries; the module has {len(self.grad_outputs)} outputs")
            self.grad_outputs = out
        grad_outputs = self.grad_outputs
        if self.input_index is None:
            self._hooks_without_inputs()
        return tuple(grad_outputs[i] for i in self.output_index)

    def _hooks_without_inputs(self):
        """No input requires grad: the full hooks run here, with grad_input all None."""
        warnings.warn("a full backward hook runs at the module's outputs because none of its "
                      "inputs requires grad", stacklevel=2)
        grad_inputs = (None,) * self.n_inputs
        for hook in self.hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                raise RuntimeError("a backward hook of a module whose inputs do not require "
                                   "grad must return None (or all None)")
        self.grad_outputs = None


def _scatter(index, values, size):
    res = [None] * size
    for i, v in zip(index, values):
        res[i] = v
    return tuple(res)


def _wrap_tensors(args, on_node):
    """Pass the tensors of `args` through BackwardHookFunction; on_node gets its node.
    Returns the new args and the positions of the tensors (None when nothing was wrapped)."""
    index = [i for i, a in enumerate(args) if is_tensor(a)]
    tensors = [args[i] for i in index]
    if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
        return args, None
    wrapped = BackwardHookFunction.apply(*tensors)
    on_node(next(t.grad_fn for t in wrapped if t.grad_fn is not None
                 and t.grad_fn.name() == "BackwardHookFunctionBackward"))
    out = list(args)
    for i, t in zip(index, wrapped):
        out[i] = t
    return (tuple(out) if type(args) is tuple else type(args)(*out)), index
