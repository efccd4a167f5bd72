"""torch.save / torch.load in a format of our own that loading cannot turn into code.

A file is a zip archive: `structure.json` describes the saved object (dicts, lists, tuples,
numbers, strings, None, dtypes, sizes and tensors), and each tensor's elements are a `.npy`
member written and read with pickling switched off. That covers tensors, modules' state dicts
and optimizers' state dicts. Any other object is pickled into the archive, and such a file
loads only with `weights_only=False`, as PyTorch refuses it by default: unpickling runs
whatever code the file names, so it is for files you trust.
"""

import collections
import io
import json
import os
import pickle
import zipfile

import numpy as np

from runtime import dtypes

_FORMAT = "adcompile-save-1"


class UnpicklingError(pickle.UnpicklingError):
    """A file needs unpickling (arbitrary code) but `weights_only` is on."""


def _encode(obj, arrays):
    """A JSON-able description of `obj`; tensors' data go to `arrays`; None when some part
    needs pickling."""
    from runtime.nn.modules import Parameter
    from runtime.tensor import Size, Tensor

    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, Tensor):
        arrays.append(np.ascontiguousarray(obj._data))
        return {"tensor": len(arrays) - 1, "dtype": obj._dtype.name,
                "requires_grad": obj.requires_grad, "parameter": isinstance(obj, Parameter)}
    if isinstance(obj, dtypes.dtype):
        return {"dtype_object": obj.name}
    if isinstance(obj, Size):
        return {"size": list(obj)}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, arrays) for v in obj]
        return None if None in items else {"list" if isinstance(obj, list) else "tuple": items}
    if isinstance(obj, dict) and type(obj) in (dict, collections.OrderedDict):
        pairs = [(_encode(k, arrays), _encode(v, arrays)) for k, v in obj.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return {"dict": pairs, "ordered": type(obj) is collections.OrderedDict}
    return None


def _decode(node, arrays):
    from runtime.nn.modules import Parameter
    from runtime.tensor import Size, Tensor

    if "value" in node:
        return node["value"]
    if "tensor" in node:
        dtype = dtypes._by_name(node["dtype"])
        t = Tensor._wrap(arrays(node["tensor"]), dtype)
        if node["parameter"]:
            return Parameter(t, node["requires_grad"])
        return t.requires_grad_(node["requires_grad"])
    if "dtype_object" in node:
        name = node["dtype_object"]
        return dtypes._by_name(name)
    if "size" in node:
        return Size(node["size"])
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    kind = collections.OrderedDict if node["ordered"] else dict
    return kind((_decode(k, arrays), _decode(v, arrays)) for k, v in node["dict"])


def save(obj, f, pickle_module=None, pickle_protocol=2, **kwargs):
    """Write `obj` to the path or binary file object `f`."""
    arrays = []
    structure = _encode(obj, arrays)
    target = f if hasattr(f, "write") else open(os.fspath(f), "wb")
    try:
        with zipfile.ZipFile(target, "w") as archive:
            header = {"format": _FORMAT, "pickled": structure is None}
            if structure is None:
                archive.writestr("object.pkl", pickle.dumps(obj, protocol=pickle_protocol))
            else:
                header["structure"] = structure
                for i, array in enumerate(arrays):
                    buffer = io.BytesIO()
                    np.save(buffer, array, allow_pickle=False)
                    archive.writestr(f"tensors/{i}.npy", buffer.getvalue())
            archive.writestr("structure.json", json.dumps(header))
    finally:
        if target is not f:
            target.close()


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **kwargs):
    """Read what `save` wrote. Files holding arbitrary (pickled) objects need
    `weights_only=False`."""
    source = f if hasattr(f, "read") else open(os.fspath(f), "rb")
    try:
        with zipfile.ZipFile(source) as archive:
            header = json.loads(archive.read("structure.json"))
            if header.get("format") != _FORMAT:
                raise RuntimeError("load(): this file was not written by adcompile's save()")
            if header["pickled"]:
                if weights_only:
                    raise UnpicklingError(
                        "load(): this file holds objects that only unpickling can rebuild, "
                        "which runs code the file names; pass weights_only=False if you "
                        "trust the file (or save state_dict()s instead of whole objects)")
                return pickle.loads(archive.read("object.pkl"))

            def array(i):
                with archive.open(f"tensors/{i}.npy") as member:
                    return np.load(io.BytesIO(member.read()), allow_pickle=False)

            return _decode(header["structure"], array)
    except zipfile.BadZipFile:
        raise RuntimeError("load(): not a file written by adcompile's save()") from None
    finally:
        if source is not f:
            source.close()
