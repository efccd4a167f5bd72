"""Complex tensors' own operations: conj, angle, sgn, real/imag (views through view_as_real, as
in PyTorch), view_as_real and view_as_complex; the constructors complex(real, imag) and
polar(abs, angle).

Gradients follow PyTorch's convention for complex numbers: the gradient of a real loss L with
respect to z = x + iy is dL/dx + i dL/dy, so rules multiply by conjugates (runtime/rules).
`conj()` here makes a copy; PyTorch returns a lazily conjugated view, which prints and
differentiates the same but shares memory.
"""

import numpy as np

from runtime import dtypes
from runtime.autograd_meta import any_requires_grad, make_view, record
from runtime.function import node_class, save_input, save_output
from runtime.ops._core import is_tensor, wrap
from runtime.rules import numpy_ops
from runtime.rules.numpy_ops import as_real_view

ConjBackward0 = node_class("ConjBackward0", "conj")
AngleBackward0 = node_class("AngleBackward0", "angle")
SgnBackward0 = node_class("SgnBackward0", "sgn")
ViewAsRealBackward0 = node_class("ViewAsRealBackward0", "view_as_real")
ViewAsComplexBackward0 = node_class("ViewAsComplexBackward0", "view_as_complex")

_REAL_OF = {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}


def conj(x):
    if not is_tensor(x):  # a Python number inside a recorded derivative
        return x.conjugate() if x.__class__ is complex else x
    if not x._dtype.is_complex:
        return x
    out = wrap(np.conj(x._data), x._dtype)
    if any_requires_grad((x,)):
        record(ConjBackward0, (x,), out, ())
    return out


def sgn(x):
    """z / |z| (0 at 0) for complex z; for real tensors sign's values, as SgnBackward0."""
    out = wrap(numpy_ops.sgn(x._data), x._dtype)
    if any_requires_grad((x,)):
        record(SgnBackward0, (x,), out, (save_input(x), save_output(out, "SgnBackward0")))
    return out


def angle(x):
    real = _REAL_OF.get(x._dtype, x._dtype if x._dtype.is_floating_point else
                        dtypes.float32)
    out = wrap(np.angle(x._data).astype(real.np, copy=False), real)
    if any_requires_grad((x,)):
        record(AngleBackward0, (x,), out, (save_input(x),))
    return out


def view_as_real(x):
    if not x._dtype.is_complex:
        raise RuntimeError(f"view_as_real() needs a complex tensor, got {x._dtype}")
    out = make_view(x, as_real_view(x._data), ("view_as_real", None), ViewAsRealBackward0, ())
    out._dtype = _REAL_OF[x._dtype]
    return out


def view_as_complex(x):
    """(..., 2) float pairs -> complex (a copy here; the gradient is view_as_real of it)."""
    if x._data.shape[-1:] != (2,) or not x._dtype.is_floating_point:
        raise RuntimeError("view_as_complex() needs a float tensor whose last dimension has "
                           "size 2")
    dt = dtypes.complex128 if x._dtype is dtypes.float64 else dtypes.complex64
    data = x._data[..., 0] + 1j * x._data[..., 1]
    out = wrap(data.astype(dt.np), dt)
    if any_requires_grad((x,)):
        record(ViewAsComplexBackward0, (x,), out, ())
    return out


ComplexBackward0 = node_class("ComplexBackward0", "complex")
PolarBackward0 = node_class("PolarBackward0", "polar")
_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128}


def _parts(name, a, b):
    """The two float parts' data, broadcast together, and the complex dtype they make."""
    if a._dtype not in _COMPLEX_OF or b._dtype not in _COMPLEX_OF:
        raise RuntimeError(f"{name}() takes float32 or float64 tensors, got {a._dtype} and "
                           f"{b._dtype}")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{name}() needs both parts of one dtype, got {a._dtype} and "
                           f"{b._dtype}")
    try:
        ad, bd = np.broadcast_arrays(a._data, b._data)
    except ValueError:
        raise RuntimeError(f"{name}(): shapes {list(a.shape)} and {list(b.shape)} do not "
                           f"broadcast") from None
    return ad, bd, _COMPLEX_OF[a._dtype]


# torch.complex; the name `complex` stays the builtin in this module (conj tests for it)
def from_parts(real, imag):
    """real + i imag, elementwise."""
    rd, idata, dt = _parts("complex", real, imag)
    out = wrap((rd + 1j * idata).astype(dt.np), dt)
    if any_requires_grad((real, imag)):
        # PyTorch's node keeps both parts (unused by the rule), so a second backward fails
        record(ComplexBackward0, (real, imag), out, (save_input(real), save_input(imag)))
    return out


def polar(abs, angle):
    """abs * (cos(angle) + i sin(angle)), elementwise."""
    rd, ad, dt = _parts("polar", abs, angle)
    with np.errstate(all="ignore"):
        data = (rd * np.cos(ad) + 1j * (rd * np.sin(ad))).astype(dt.np)
    out = wrap(data, dt)
    if any_requires_grad((abs, angle)):
        record(PolarBackward0, (abs, angle), out, (save_output(out, "PolarBackward0"),))
    return out


def real(x):
    from runtime.ops.shape import select

    return select(view_as_real(x), -1, 0) if x._dtype.is_complex else x


def imag(x):
    from runtime.ops.shape import select

    if not x._dtype.is_complex:
        raise RuntimeError("imag is only defined for complex tensors")
    return select(view_as_real(x), -1, 1)


def is_complex(x):
    return is_tensor(x) and x._dtype.is_complex
