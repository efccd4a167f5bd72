"""Containers: ModuleList, ModuleDict, ParameterList, ParameterDict.

They register their members under the keys PyTorch uses ("0", "1", ... for lists, the
dict keys for dicts), so named_parameters and state_dict keys agree with PyTorch's.
"""

from runtime.nn.modules import Module, Parameter
from runtime.tensor import Tensor


def _index(i, n):
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range")
    return i % n


def _repeat_runs(items):
    """Group consecutive equal reprs: [(first, last, repr)]."""
    runs = []
    for i, text in items:
        if runs and runs[-1][2] == text:
            runs[-1][1] = i
        else:
            runs.append([i, i, text])
    return runs


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _values(self):
        return list(self._modules.values())

    def _renumber(self, modules):
        self._modules.clear()
        for i, m in enumerate(modules):
            self._modules[str(i)] = m

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(self._values()[i])
        return self._values()[_index(i, len(self))]

    def __setitem__(self, i, module):
        self._modules[str(_index(i, len(self)))] = module

    def __delitem__(self, i):
        mods = self._values()
        del mods[i if isinstance(i, slice) else _index(i, len(mods))]
        self._renumber(mods)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(self._values() + list(other))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = self._values()
        mods.insert(index, module)
        self._renumber(mods)

    def pop(self, index=-1):
        mods = self._values()
        out = mods.pop(index)
        self._renumber(mods)
        return out

    def __repr__(self):
        items = [(int(k), repr(m).replace("\n", "\n  ")) for k, m in self._modules.items()]
        if not items:
            return "ModuleList()"
        lines = []
        for first, last, text in _repeat_runs(items):
            head = f"({first})" if first == last else f"({first}-{last}): {last - first + 1} x"
            lines.append(f"{head}: {text}" if first == last else f"{head} {text}")
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class _DictView:
    """The mapping methods of ModuleDict and ParameterDict, over the registration table
    named by `_table` ("_modules" or "_parameters")."""

    _table = "_modules"

    def _entries(self):
        return self.__dict__[self._table]

    def __getitem__(self, key):
        return self._entries()[key]

    def __delitem__(self, key):
        del self._entries()[key]

    def __len__(self):
        return len(self._entries())

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key):
        return key in self._entries()

    def keys(self):
        return self._entries().keys()

    def items(self):
        return self._entries().items()

    def values(self):
        return self._entries().values()

    def pop(self, key):
        return self._entries().pop(key)

    def get(self, key, default=None):
        return self._entries().get(key, default)

    def clear(self):
        self._entries().clear()

    def update(self, pairs):
        pairs = pairs.items() if isinstance(pairs, (dict, _DictView)) else pairs
        for key, value in pairs:
            self[key] = value


class ModuleDict(_DictView, Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)


def _as_parameter(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "bool": "BoolTensor"}


def _size(t):
    return "x".join(str(s) for s in t.shape)


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def __getitem__(self, i):
        values = list(self._parameters.values())
        if isinstance(i, slice):
            return ParameterList(values[i])
        return values[_index(i, len(values))]

    def __setitem__(self, i, value):
        self.register_parameter(str(_index(i, len(self))), _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): Parameter containing: [{str(p.dtype)} of size {_size(p)}]"
                         for k, p in self._parameters.items())


class ParameterDict(_DictView, Module):
    _table = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def extra_repr(self):
        names = {k: _TYPE_NAMES.get(str(p.dtype).replace("torch.", ""), "Tensor")
                 for k, p in self._parameters.items()}
        return "\n".join(f"  ({k}): Parameter containing: [torch.{names[k]} of size "
                         f"{_size(p)}]" for k, p in self._parameters.items())
