"""Module forward hooks: register_forward_pre_hook / register_forward_hook and the call
path that runs them (pre-hooks may replace the positional inputs, forward hooks the output),
as in PyTorch. Backward module hooks are not implemented."""

import collections

from runtime.hooks import RemovableHandle


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
    """module.forward(*args, **kwargs) wrapped in the module's forward hooks."""
    pre = module.__dict__.get("_forward_pre_hooks")
    if pre:
        args, kwargs = _run_pre_hooks(module, pre, args, kwargs)
    out = module.forward(*args, **kwargs)
    for hook, with_kwargs in list(module.__dict__.get("_forward_hooks", {}).values()):
        result = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if result is not None:
            out = result
    return out
