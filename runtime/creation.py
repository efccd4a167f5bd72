"""Tensor factories: torch.tensor, zeros/ones/empty/full, arange/linspace/eye, random
factories, *_like variants, and the legacy constructors (Tensor(2, 3), FloatTensor, ...)."""

import numbers

import numpy as np

from runtime import dtypes, grad_mode, out_param
from runtime.ops._core import get_default_dtype, is_tensor, wrap
from runtime.ops.layout import like_input


class device:
    """Only the CPU exists here; kept so `torch.device('cpu')` and `.to(device)` work."""

    def __init__(self, kind="cpu", index=None):
        kind = str(kind)
        if kind.split(":")[0] != "cpu":
            raise RuntimeError(f"device '{kind}' is not available; adcompile runs on the CPU")
        self.type = "cpu"
        self.index = index

    def __repr__(self):
        return "device(type='cpu')"

    def __str__(self):
        return "cpu"

    def __eq__(self, other):
        return str(other) == "cpu" or isinstance(other, device)

    def __hash__(self):
        return hash("cpu")


cpu = device("cpu")


def check_device(device):
    if device is not None and str(device).split(":")[0] != "cpu":
        raise AssertionError(f"device {device!r} is not available: adcompile runs on the CPU "
                             f"only (there is no CUDA)")


def _finish(t, requires_grad):
    if requires_grad is not None and not isinstance(requires_grad, bool):
        raise TypeError(f"requires_grad must be True or False, not a "
                        f"{type(requires_grad).__name__}")
    if requires_grad:
        if t._dtype.category != dtypes.FLOAT:  # floating point or complex
            raise RuntimeError(f"only floating point (and complex) tensors can require "
                               f"gradients; this one is {t._dtype}")
        t._requires_grad = True
    return t


def _nested_data(data):
    """Convert tensors nested in lists to plain values."""
    if is_tensor(data):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_nested_data(d) for d in data]
    return data


def _infer_dtype(array, data):
    kind = array.dtype.kind
    if kind == "f":
        if isinstance(data, np.ndarray) or _holds_numpy(data):
            return dtypes.from_numpy(array.dtype)
        return get_default_dtype()
    if kind in "iu":
        if isinstance(data, np.ndarray):
            return dtypes.from_numpy(array.dtype)
        return dtypes.int64
    if kind == "b":
        return dtypes.bool_
    if kind == "c":  # Python complex numbers: the complex type of the default dtype
        if isinstance(data, np.ndarray) or _holds_numpy(data):
            return dtypes.from_numpy(array.dtype)
        return dtypes.promote_types(get_default_dtype(), dtypes.complex64)
    raise TypeError(f"cannot make a tensor from data of type {type(data).__name__}")


def _holds_numpy(data):
    return isinstance(data, np.generic)


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    check_device(device)
    if is_tensor(data):
        array = np.array(data._data, copy=True)
    else:
        array = np.array(_nested_data(data))
    dt = dtype if dtype is not None else _infer_dtype(array, data)
    return _finish(wrap(array.astype(dt.np, copy=False), dt), requires_grad)


def as_tensor(data, dtype=None, device=None):
    check_device(device)
    if is_tensor(data) and (dtype is None or dtype is data._dtype):
        return data
    if isinstance(data, np.ndarray):
        return from_numpy(data) if dtype is None else tensor(data, dtype)
    return tensor(data, dtype)


def from_numpy(array):
    return wrap(array, dtypes.from_numpy(array.dtype))


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"a size must be a tuple of ints, but got an element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"sizes must be non-negative, got {s}")
    return tuple(int(s) for s in size)


def _made_dtype(dtype, out, default):
    """The dtype a factory makes: dtype=, else out='s, else `default` (a dtype or a function
    giving one); dtype= and out= of different dtypes are refused."""
    if out is None:
        return dtype or (default() if callable(default) else default)
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype={dtype} asks for another dtype than out= has ({out.dtype})")
    return out.dtype


def _made(data, dt, out, requires_grad, name=None):
    """A factory's result: `data` (a numpy array of dtype `dt`) in a new Tensor, or written
    into `out` (resized silently, as PyTorch's factories do, except arange)."""
    if out is not None:
        return out_param.factory_out(out, data, name)
    return _finish(wrap(data, dt), requires_grad)


def _factory(fill):
    def make(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None):
        check_device(device)
        dt = _made_dtype(dtype, out, get_default_dtype)
        return _made(fill(_shape(size), dt.np), dt, out, requires_grad)

    return make


zeros = _factory(np.zeros)
ones = _factory(np.ones)
empty = _factory(np.zeros)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, out=None):
    check_device(device)
    dt = _made_dtype(dtype, out, lambda: dtypes.scalar_dtype(fill_value, get_default_dtype()))
    return _made(np.full(_shape((size,)), fill_value, dt.np), dt, out, requires_grad)


def _like(fill):
    def make(t, dtype=None, device=None, requires_grad=False, memory_format=None):
        check_device(device)
        dt = dtype or t._dtype
        return _finish(wrap(like_input(fill(t._data.shape, dt.np), t._data), dt), requires_grad)

    return make


zeros_like = _like(np.zeros)
ones_like = _like(np.ones)
empty_like = _like(np.zeros)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    check_device(device)
    dt = dtype or t._dtype
    data = like_input(np.full(t._data.shape, fill_value, dt.np), t._data)
    return _finish(wrap(data, dt), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False, out=None):
    check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if is_tensor(v) else v for v in (start, end, step)]
    dt = _made_dtype(dtype, out, lambda: get_default_dtype()
                     if any(isinstance(v, float) for v in vals) else dtypes.int64)
    if vals[2] == 0:
        raise RuntimeError("arange(): the step must not be zero")
    if not dt.is_floating_point:  # the bounds and step are truncated to integers first
        vals = [int(v) for v in vals]
        if vals[2] == 0:
            raise ValueError(f"arange(): the step {step} truncates to zero for dtype {dt}")
    start, end, step = vals
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): a step of {step} never goes from {start} to {end}")
    n = -((start - end) // step) if isinstance(step, int) else int(np.ceil((end - start) / step))
    data = (start + step * np.arange(n, dtype=np.float64)) if dt.is_floating_point else \
        start + step * np.arange(n, dtype=np.int64)
    return _made(data.astype(dt.np), dt, out, requires_grad, "arange")


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False, out=None):
    check_device(device)
    dt = _made_dtype(dtype, out, get_default_dtype)
    if steps == 1:
        data = np.array([start], dt.np)
    elif dt.is_floating_point:
        data = _linspace(float(start), float(end), steps, np.dtype(dt.np).type)
    else:  # integer ends (truncated), a float64 step
        data = _linspace(int(start), int(end), steps, np.float64)
    return _made(data.astype(dt.np), dt, out, requires_grad)


def _linspace(start, end, steps, real):
    """PyTorch's CPU linspace in the output's own precision: the first half counts up from
    `start` and the second half down from `end`, each element one fused multiply-add."""
    s, e = real(start), real(end)
    step = real(real(e - s) / real(steps - 1))
    i = np.arange(steps)
    up = i < steps // 2
    return np.where(up, _fma(step, i, s, real), _fma(-step, steps - 1 - i, e, real))


def _fma(a, b, c, real):
    """a * b + c rounded once to `real` (b integers); half precision rounds twice, as
    PyTorch's Half arithmetic does."""
    if real is np.float16:
        return c + a * b.astype(np.float16)
    if real is np.float32:  # exact in float64: a 24-bit product plus a float32
        return (np.float64(a) * b + np.float64(c)).astype(np.float32)
    b = b.astype(np.float64)
    p = a * b
    p_err = _two_product_error(a, b, p)
    s = p + c
    s_err = (p - (s - (s - p))) + (c - (s - p))  # TwoSum: what p + c lost
    return s + (p_err + s_err)


def _two_product_error(a, b, p):
    """What the float64 product p = a * b lost (Dekker's splitting)."""
    def split(x):
        t = 134217729.0 * x  # 2**27 + 1
        hi = t - (t - x)
        return hi, x - hi
    ah, al = split(np.float64(a))
    bh, bl = split(b)
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl


def eye(n, m=None, dtype=None, device=None, requires_grad=False, out=None):
    check_device(device)
    dt = _made_dtype(dtype, out, get_default_dtype)
    return _made(np.eye(n, m if m is not None else n, dtype=dt.np), dt, out, requires_grad)


# -- random factories ------------------------------------------------------------------------

def _random_factory(draw):
    def make(*size, dtype=None, generator=None, device=None, requires_grad=False):
        check_device(device)
        dt = dtype or get_default_dtype()
        data = draw(_shape(size), dt.np, generator=generator)
        return _finish(wrap(data, dt), requires_grad)

    return make


def _rand(shape, np_dtype, generator=None):
    from runtime import random

    return random.rand(shape, np_dtype, generator=generator)


def _randn(shape, np_dtype, generator=None):
    from runtime import random

    return random.randn(shape, np_dtype, generator=generator)


rand = _random_factory(_rand)
randn = _random_factory(_randn)


def randint(low, high=None, size=None, dtype=None, generator=None, device=None,
            requires_grad=False):
    check_device(device)
    from runtime import random

    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dt = dtype or dtypes.int64
    data = random.randint(low, high, _shape((size,)), dt.np, generator=generator)
    return _finish(wrap(data, dt), requires_grad)


def randperm(n, dtype=None, generator=None, device=None, requires_grad=False):
    check_device(device)
    from runtime import random

    dt = dtype or dtypes.int64
    return _finish(wrap(random.randperm(n, dt.np, generator=generator), dt), requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    return rand(t._data.shape, dtype=dtype or t._dtype, requires_grad=requires_grad)


def randn_like(t, dtype=None, requires_grad=False):
    return randn(t._data.shape, dtype=dtype or t._dtype, requires_grad=requires_grad)


def randint_like(t, low, high=None, dtype=None):
    return randint(low, high, t._data.shape, dtype=dtype or t._dtype)


# -- legacy constructors -----------------------------------------------------------------------

def legacy_data(type_name, dt, args, kwargs):
    """Data for Tensor(...) / FloatTensor(...): sizes, a sequence, or nothing."""
    if kwargs:
        raise TypeError(f"{type_name}() takes sizes or a data sequence, not keyword arguments "
                        f"({', '.join(kwargs)}); use torch.tensor(data, requires_grad=...) instead")
    if not args:
        return np.zeros((0,), dt.np)
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        data = args[0]
        if is_tensor(data):
            return data._data
        return np.array(_nested_data(data), dtype=dt.np)
    return np.zeros(_shape(args), dt.np)


def _legacy(name, dt):
    from runtime.tensor import Tensor

    def construct(*args, **kwargs):
        data = legacy_data(name, dt, args, kwargs)
        return wrap(data.astype(dt.np, copy=False), dt)

    construct.__name__ = name
    return construct


def legacy_constructors():
    return {
        "FloatTensor": _legacy("FloatTensor", dtypes.float32),
        "DoubleTensor": _legacy("DoubleTensor", dtypes.float64),
        "HalfTensor": _legacy("HalfTensor", dtypes.float16),
        "LongTensor": _legacy("LongTensor", dtypes.int64),
        "IntTensor": _legacy("IntTensor", dtypes.int32),
        "ByteTensor": _legacy("ByteTensor", dtypes.uint8),
        "BoolTensor": _legacy("BoolTensor", dtypes.bool_),
    }


def is_grad_enabled():
    return grad_mode.is_grad_enabled()
