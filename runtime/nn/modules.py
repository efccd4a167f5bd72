"""torch.nn modules: Parameter, Module (registration, traversal, state dicts, modes),
Linear, activations, Sequential and the losses."""

import collections

import numpy as np

from runtime import batching, dtypes
from runtime import ops as F
from runtime.nn import functional as NF
from runtime.tensor import Tensor


class Parameter(Tensor):
    __module__ = "torch.nn.parameter"

    """A leaf tensor that a Module registers as one of its parameters."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = Tensor._wrap(np.zeros((0,), np.float32))
        self._init_from(data._data, data._dtype)
        self._vc = data._vc
        self.requires_grad = requires_grad

    def __new__(cls, data=None, requires_grad=True):
        return Tensor.__new__(cls)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        out = Parameter(Tensor._wrap(self._data.copy(), self._dtype), self._requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto):
        return (Parameter, (Tensor._wrap(self._data.copy(), self._dtype), self._requires_grad))


class Module:
    """Base class of layers: attributes that are Parameters or Modules are registered."""

    def __init__(self):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    # forward only calls ops that vmap can batch (else, inside vmap, it runs per entry)
    _vmap_batches = False

    def __call__(self, *args, **kwargs):
        if batching.open_sizes() and not self._vmap_batches and batching.any_batched(args,
                                                                                    kwargs):
            return batching.dispatch(type(self).__name__, self._call, args, kwargs)
        return self._call(*args, **kwargs)

    def _call(self, *args, **kwargs):
        d = self.__dict__
        if ("_forward_pre_hooks" in d or "_forward_hooks" in d or "_backward_hooks" in d
                or "_backward_pre_hooks" in d):
            from runtime.nn.module_hooks import call_with_hooks

            return call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def register_forward_pre_hook(self, hook, **options):
        from runtime.nn.module_hooks import register_forward_pre_hook

        return register_forward_pre_hook(self, hook, **options)

    def register_forward_hook(self, hook, **options):
        from runtime.nn.module_hooks import register_forward_hook

        return register_forward_hook(self, hook, **options)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        from runtime.nn.module_hooks import register_full_backward_pre_hook

        return register_full_backward_pre_hook(self, hook, prepend=prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        from runtime.nn.module_hooks import register_full_backward_hook

        return register_full_backward_hook(self, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        from runtime.nn.module_hooks import register_backward_hook

        return register_backward_hook(self, hook)

    # -- registration ----------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError("call super().__init__() before assigning parameters or "
                                     "submodules")
            object.__setattr__(self, name, value)
            return
        for table in (self._parameters, self._modules, self._buffers):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is None:
            self._parameters[name] = None
        else:
            setattr(self, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor

    def add_module(self, name, module):
        self._modules[name] = module

    register_module = add_module

    # -- traversal -------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, p in module._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, b in module._buffers.items():
                if b is not None:
                    yield (f"{mod_prefix}.{name}" if mod_prefix else name), b

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- modes and grads -------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("train() takes a bool")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p._grad is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                p._grad = p._grad.detach() if p._grad._grad_fn is not None else p._grad
                p._grad.zero_()

    # -- state -----------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        out = collections.OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():  # each module's own entries, then its children's
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        own = dict(self.named_parameters())
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(f"load_state_dict: missing keys {missing}, unexpected keys "
                               f"{unexpected}")
        from runtime.grad_mode import no_grad

        with no_grad():
            for name, value in state_dict.items():
                if name not in own:
                    continue
                target = own[name]
                if tuple(target.shape) != tuple(value.shape):
                    raise RuntimeError(f"load_state_dict: '{name}' has shape "
                                       f"{list(value.shape)} in the state dict but "
                                       f"{list(target.shape)} in the model")
                target.copy_(value)
        return _IncompatibleKeys(missing, unexpected)

    # -- dtype -----------------------------------------------------------------------------
    def _cast(self, dt):
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is not None and p._dtype.is_floating_point:
                    p._data = p._data.astype(dt.np)
                    p._dtype = dt
        return self

    def double(self):
        return self._cast(dtypes.float64)

    def float(self):
        return self._cast(dtypes.float32)

    def half(self):
        return self._cast(dtypes.float16)

    def to(self, *args, **kwargs):
        dt = kwargs.get("dtype")
        for a in args:
            if isinstance(a, dtypes.dtype):
                dt = a
        return self if dt is None else self._cast(dt)

    def cpu(self):
        return self

    # -- printing --------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        head = type(self).__name__ + "("
        if not lines:
            return head + ")"
        if len(lines) == 1 and not self._modules:
            return head + lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return list(super().__dir__()) + list(self._parameters) + list(self._modules)


_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys",
                                                                "unexpected_keys"])


class Linear(Module):
    """y = x @ weight.T + bias, initialised as PyTorch does (kaiming-uniform weight,
    uniform bias in +-1/sqrt(in_features)), drawing from the same random stream."""
    _vmap_batches = True

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        dt = dtype or F.get_default_dtype()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(Tensor._wrap(np.empty((out_features, in_features), dt.np), dt))
        if bias:
            self.bias = Parameter(Tensor._wrap(np.empty((out_features,), dt.np), dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        from runtime.nn import init

        init.default_layer_init_(self.weight, self.bias, self.in_features)

    def forward(self, input):
        return NF.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _activation(name, fn):
    def forward(self, input):
        # looked up on each call, so that vmap's dispatching torch.nn.functional is used
        return getattr(NF, fn.__name__, fn)(input)

    return type(name, (Module,), {"forward": forward, "__doc__": f"Applies {fn.__name__}.",
                                  "_vmap_batches": True})


ReLU = _activation("ReLU", F.relu)
Tanh = _activation("Tanh", F.tanh)
Sigmoid = _activation("Sigmoid", F.sigmoid)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, self.dim)


class Identity(Module):
    _vmap_batches = True
    def forward(self, input):
        return input


class Dropout(Module):
    _vmap_batches = True
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, input):
        return NF.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace=False"


class Flatten(Module):
    _vmap_batches = True
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Sequential(Module):
    _vmap_batches = True
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return Sequential(*mods[i])
        return mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __setitem__(self, i, module):
        names = list(self._modules)
        self.add_module(names[i], module)  # replaces the module under its name, in place

    def __delitem__(self, i):
        for name in list(self._modules)[i] if isinstance(i, slice) else [list(self._modules)[i]]:
            del self._modules[name]

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


def _legacy_reduction(size_average, reduce):
    """The old size_average/reduce flags as a reduction string (they are tested for truth,
    so passing tensors here, a common mistake, fails as it does in PyTorch)."""
    import warnings

    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    warnings.warn("size_average and reduce are deprecated; pass reduction='mean'|'sum'|'none'",
                  UserWarning, stacklevel=3)
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


class L1Loss(_Loss):
    def forward(self, input, target):
        return NF.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return NF.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(reduction=reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):
        return NF.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                           reduction=self.reduction)
