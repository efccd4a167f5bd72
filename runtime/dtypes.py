"""Tensor dtypes and PyTorch's type-promotion rules.

Every eager Tensor carries one of the `dtype` objects defined here; the numpy array behind it
always has the matching numpy dtype. Promotion follows PyTorch 2.13: operands fall in three
priority groups (tensors with dimensions, 0-dim tensors, Python scalars) and a lower group only
wins when its *category* (bool < integer < floating) is higher than everything above it.

Complex dtypes belong to the floating category (they can require gradients and take part in
autograd like floats) but rank above the real floats: a complex operand in a lower group still
makes the result complex, keeping the higher group's precision (float32 with a complex Python
number is complex64), as PyTorch's combine_categories does.
"""

import numpy as np

BOOL, INT, FLOAT = 0, 1, 2


class dtype:
    """A tensor element type, printed as PyTorch prints it (`torch.float32`)."""

    __slots__ = ("name", "np", "category", "is_signed", "tensor_type", "c_name", "itemsize")

    def __init__(self, name, np_dtype, category, tensor_type, c_name):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category
        self.is_signed = category != BOOL and self.np.kind != "u"
        self.tensor_type = tensor_type
        self.c_name = c_name
        self.itemsize = self.np.itemsize

    @property
    def is_floating_point(self):
        return self.category == FLOAT and self.np.kind == "f"

    @property
    def is_complex(self):
        return self.np.kind == "c"

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


float16 = dtype("float16", np.float16, FLOAT, "HalfTensor", "Half")
float32 = dtype("float32", np.float32, FLOAT, "FloatTensor", "Float")
float64 = dtype("float64", np.float64, FLOAT, "DoubleTensor", "double")
int8 = dtype("int8", np.int8, INT, "CharTensor", "signed char")
int16 = dtype("int16", np.int16, INT, "ShortTensor", "short int")
int32 = dtype("int32", np.int32, INT, "IntTensor", "int")
int64 = dtype("int64", np.int64, INT, "LongTensor", "long int")
uint8 = dtype("uint8", np.uint8, INT, "ByteTensor", "unsigned char")
bool_ = dtype("bool", np.bool_, BOOL, "BoolTensor", "bool")
complex64 = dtype("complex64", np.complex64, FLOAT, "ComplexFloatTensor", "c10::complex<float>")
complex128 = dtype("complex128", np.complex128, FLOAT, "ComplexDoubleTensor",
                   "c10::complex<double>")

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, complex64,
       complex128)
_TO_COMPLEX = {float16: complex64, float32: complex64, float64: complex128,
               complex64: complex64, complex128: complex128}
ALIASES = {
    "half": float16,
    "float": float32,
    "double": float64,
    "short": int16,
    "int": int32,
    "long": int64,
    "bool": bool_,
    "cfloat": complex64,
    "cdouble": complex128,
}
_BY_NP = {d.np: d for d in ALL}


def _by_name(name):
    return next(d for d in ALL if d.name == name)


def from_numpy(np_dtype):
    """The dtype for a numpy dtype; numpy types we do not model map to their nearest kind."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is not None:
        return d
    kind = np.dtype(np_dtype).kind
    if kind == "f":
        return float64
    if kind in "iu":
        return int64
    if kind == "b":
        return bool_
    if kind == "c":
        return complex128
    raise TypeError(f"numpy arrays of dtype {np.dtype(np_dtype)} cannot become tensors")


def promote_types(a, b):
    """The smallest dtype that holds both `a` and `b` (PyTorch's promote_types)."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == FLOAT:
        if a.is_complex or b.is_complex:
            return _BY_NP[np.promote_types(a.np, b.np)]  # complex64 + float64: complex128
        return a if a.itemsize >= b.itemsize else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def scalar_dtype(value, default_float):
    """The dtype PyTorch gives a Python number when it takes part in an operation."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return _TO_COMPLEX[default_float]
    return default_float


def _combine(higher, lower):
    """Merge the result of a higher-priority group with a lower one (None = group empty)."""
    if higher is None:
        return lower
    if lower is not None and lower.is_complex and not higher.is_complex:
        return _TO_COMPLEX[higher] if higher.category == FLOAT else lower
    if lower is None or higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category > higher.category:
        return promote_types(higher, lower)
    return higher


def result_type_of(dim_dtype, zero_dtype, scalar_dtype_):
    """Combine the per-group results: dimensioned tensors, 0-dim tensors, Python scalars."""
    return _combine(dim_dtype, _combine(zero_dtype, scalar_dtype_))
