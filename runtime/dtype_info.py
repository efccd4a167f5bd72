"""Questions about dtypes, as `torch.*` answers them: `finfo` / `iinfo` (the limits of a float
or an integer dtype), `promote_types`, `result_type` and `can_cast`.

The limits are numpy's (they are the IEEE and two's-complement values torch reports too);
promotion is `runtime.dtypes`' table, the one every operator uses, so these answers can never
disagree with the dtypes the operators produce.
"""

import numpy as np

from runtime import dtypes
from runtime.ops._core import get_default_dtype, result_dtype


def _fmt(value):
    return f"{value:g}"


class _Limits:
    """Equal when every field is: the same dtype's limits, however they were asked for."""

    def __eq__(self, other):
        return type(other) is type(self) and vars(self) == vars(other)

    def __hash__(self):
        return hash((self.bits, self.dtype))


class finfo(_Limits):
    """Machine limits of a floating-point dtype (a complex dtype's are its parts')."""

    def __init__(self, type=None):
        dt = get_default_dtype() if type is None else type
        if dt.category != dtypes.FLOAT:
            raise TypeError(f"finfo() takes a floating point or complex dtype, got {dt}")
        info = np.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -int(info.precision)  # a decimal power, as torch gives it
        self.dtype = str(info.dtype)

    def __repr__(self):
        fields = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")
        shown = ", ".join(f"{name}={_fmt(getattr(self, name))}" for name in fields)
        return f"finfo({shown}, dtype={self.dtype})"


class iinfo(_Limits):
    """Limits of an integer dtype (bool has none)."""

    def __init__(self, type):
        if type.category != dtypes.INT:
            raise TypeError(f"iinfo() takes an integer dtype, got {type}")
        info = np.iinfo(type.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={_fmt(self.min)}, max={_fmt(self.max)}, dtype={self.dtype})"


promote_types = dtypes.promote_types


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on these two operands (tensors or numbers) returns."""
    return result_dtype(tensor1, tensor2)


def _kind(dt):
    """0 bool, 1 integer, 2 float, 3 complex: a cast may go up this order, never down."""
    return 3 if dt.is_complex else dt.category


def can_cast(from_, to):
    """Whether type promotion may cast `from_` to `to` (never to a lower kind)."""
    return _kind(from_) <= _kind(to)


FUNCTIONS = {"finfo": finfo, "iinfo": iinfo, "promote_types": promote_types,
             "result_type": result_type, "can_cast": can_cast}
