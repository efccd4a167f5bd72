"""IR types: scalars (with numpy's notion of weak Python scalars), strided arrays, tuples.

Scalar dtypes are bool, i64, f32, f64. A *weak* scalar is a Python number (int, float, bool)
as opposed to a numpy scalar: numpy's promotion (NEP 50) lets a weak operand adopt the other
operand's dtype (`float32 * 2.0` stays float32), and the IR follows that exactly so compiled
code computes in the same precision as the Python function it came from.
"""

from dataclasses import dataclass

import numpy as np

DTYPES = ("bool", "i64", "f32", "f64")
_KIND = {"bool": 0, "i64": 1, "f32": 2, "f64": 2}
NUMPY = {"bool": np.dtype(np.bool_), "i64": np.dtype(np.int64), "f32": np.dtype(np.float32),
         "f64": np.dtype(np.float64)}


class _Elements:
    """What a scalar type and an array type say alike about their element type."""

    @property
    def is_float(self):
        return self.dtype in ("f32", "f64")

    @property
    def is_int(self):
        return self.dtype == "i64"

    @property
    def kind(self):
        return _KIND[self.dtype]


@dataclass(frozen=True)
class Scalar(_Elements):
    dtype: str
    weak: bool = False

    def __str__(self):
        return {"bool": "bool", "i64": "int", "f64": "float"}[self.dtype] if self.weak else \
            self.dtype


@dataclass(frozen=True)
class Array(_Elements):
    dtype: str
    ndim: int

    def __str__(self):
        return f"{self.dtype}[{','.join(':' * self.ndim)}]" if self.ndim else f"{self.dtype}[]"

    @property
    def element(self):
        return Scalar(self.dtype)

    # an array's dtype is strong (numpy scalars and arrays never adopt another operand's dtype)
    weak = False


@dataclass(frozen=True)
class Tuple:
    items: tuple

    def __str__(self):
        return "(" + ", ".join(str(t) for t in self.items) + ")"


@dataclass(frozen=True)
class NoneType:
    def __str__(self):
        return "none"


INT = Scalar("i64", weak=True)
FLOAT = Scalar("f64", weak=True)
BOOL = Scalar("bool", weak=True)
F64 = Scalar("f64")
F32 = Scalar("f32")
I64 = Scalar("i64")
NONE = NoneType()


def promote(a, b):
    """Result type of a binary arithmetic op on scalars (numpy 2 semantics)."""
    if a == b:
        return a
    if a.weak and b.weak:
        return a if a.kind >= b.kind else b
    if a.weak or b.weak:
        weak, strong = (a, b) if a.weak else (b, a)
        if weak.kind <= strong.kind:
            return Scalar(strong.dtype)
        return Scalar("f64" if weak.kind == 2 else "i64")
    if a.kind != b.kind:
        hi, lo = (a, b) if a.kind > b.kind else (b, a)
        if hi.dtype == "f32" and lo.dtype == "i64":
            return F64  # numpy: int64 with float32 needs float64
        return Scalar(hi.dtype)
    return a if a.dtype == "f64" or b.dtype != "f64" else b


def unify(a, b):
    """The type a variable takes when control flow merges values of types a and b."""
    if a == b:
        return a
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        return promote(a, b)
    return None


def float_of(t):
    """Type of a float-valued function (true division, sqrt...) of a scalar of type t."""
    if t.is_float:
        return t
    return FLOAT if t.weak else F64


def of_value(value):
    """The IR type of a Python argument, or None when it cannot be compiled."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float) and not isinstance(value, np.floating):
        return FLOAT
    if isinstance(value, np.generic):
        return _numpy_scalar(value.dtype)
    if isinstance(value, np.ndarray):
        dt = _dtype_name(value.dtype.newbyteorder("="))  # big-endian arrays are float64 too
        return None if dt is None else Array(dt, value.ndim)
    if isinstance(value, tuple):
        items = tuple(of_value(v) for v in value)
        return None if any(t is None for t in items) else Tuple(items)
    return None


def _dtype_name(np_dtype):
    for name, d in NUMPY.items():
        if d == np_dtype:
            return name
    return None


def _numpy_scalar(np_dtype):
    name = _dtype_name(np_dtype)
    return None if name is None else Scalar(name)


@dataclass(frozen=True)
class Tape:
    """A growable stack of values of one type: the reverse pass pops, in reverse order, what
    the forward pass pushed inside loops and branches."""

    item: object

    def __str__(self):
        return f"tape<{self.item}>"
