"""The eager Tensor: a numpy array plus PyTorch's autograd metadata.

Slots kept on every tensor (the hot path touches only these):
  _data          numpy array (0-dim arrays for scalars), always of `_dtype.np`
  _dtype         runtime.dtypes.dtype
  _grad_fn       producing Node, None for leaves
  _output_nr     which output of `_grad_fn` this is
  _requires_grad the user-settable flag of a leaf (for a view: its own flag or its base's)
  _vc            version counter, a one-element list shared with views (and detach())
  _base          the tensor whose memory this view shares, None if not a view; a view
                 without history of its own has `_requires_grad` kept equal to its base's
  _grad          accumulated gradient (a Tensor) or None
  _meta          TensorMeta for hooks, retain_grad, view steps; None until needed
  _inference     created under inference_mode

Arithmetic and methods delegate to the kernels in `runtime.ops`; this module holds the
autograd-facing API (flags, grad, hooks, backward, in-place plumbing) and Python protocols.
"""

import warnings
import weakref

import numpy as np

from runtime import dtypes, grad_mode, inplace_order
from runtime import ops as F
from runtime.overlap import check_internal_overlap, check_partial_overlap, overlapping
from runtime.autograd_meta import (
    accumulator_of,
    apply_inplace,
    check_inplace,
    meta_of,
    on_integer_target,
    regenerated_view_fn,
    set_view_requires_grad,
    views_follow_base,
)
from runtime.hooks import RemovableHandle
from runtime.ops import _core
from runtime.ops import direct_inplace as _direct_inplace
from runtime.ops import elementwise as _elementwise
from runtime.ops._core import get_default_dtype, is_tensor

_state = grad_mode._state
_new = object.__new__
_ONE_ELEMENT = "only a tensor with exactly one element can be converted to a Python number"
_warned_float = []  # non-empty once float() of a requires-grad tensor has warned


class Size(tuple):
    """A tensor's shape: a tuple that prints as `torch.Size([2, 3])`."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n


_TO_KEYWORDS = {"dtype", "device", "non_blocking", "copy", "memory_format"}


class Tensor:
    __slots__ = ("_data", "_dtype", "_grad_fn", "_output_nr", "_requires_grad", "_vc", "_base",
                 "_grad", "_meta", "_inference", "__dict__", "__weakref__")

    # -- construction ------------------------------------------------------------------------
    def __init__(self, *args, **kwargs):
        from runtime.creation import legacy_data

        data = legacy_data(type(self).__name__, get_default_dtype(), args, kwargs)
        self._init_from(data, dtypes.from_numpy(data.dtype))

    def _init_from(self, data, dtype):
        self._data = data
        self._dtype = dtype
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        self._vc = [0]
        self._base = None
        self._grad = None
        self._meta = None
        self._inference = _state.inference

    @staticmethod
    def _wrap(data, dtype=None):
        t = _new(Tensor)
        t._data = data
        t._dtype = dtype if dtype is not None else dtypes.from_numpy(data.dtype)
        t._grad_fn = None
        t._output_nr = 0
        t._requires_grad = False
        t._vc = [0]
        t._base = None
        t._grad = None
        t._meta = None
        t._inference = _state.inference
        return t

    def _new_like(self, data):
        return Tensor._wrap(data, self._dtype)

    @staticmethod
    def _type_name(data):
        return dtypes.from_numpy(data.dtype).tensor_type

    # -- basic properties --------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[F.shape._dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._dtype.itemsize

    @property
    def device(self):
        from runtime.creation import cpu

        return cpu

    @property
    def is_cuda(self):
        return False

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def is_complex(self):
        return self._dtype.is_complex

    def is_contiguous(self):
        return self._data.flags.c_contiguous

    def stride(self, dim=None):
        data = self._data
        if data.size == 0 and data.ndim and not any(data.strides) and data.flags.writeable:
            # numpy zeroes them (a read-only array is a broadcast, whose zeros are real)
            data = F.with_contiguous_strides(data)
        strides = tuple(s // data.itemsize for s in data.strides)
        return strides if dim is None else strides[dim]

    def data_ptr(self):
        return self._data.__array_interface__["data"][0]

    def storage_offset(self):
        if self._base is None:
            return 0
        return (self.data_ptr() - self._base.data_ptr()) // self._data.itemsize

    @property
    def _version(self):
        return self._vc[0]

    def is_inference(self):
        return self._inference

    # -- autograd flags ----------------------------------------------------------------------
    @property
    def requires_grad(self):
        if self._grad_fn is not None:
            return True
        # a forward-only dual tensor requires grad internally only (runtime.forward_ad)
        return self._requires_grad and (self._meta is None or not self._meta.fw_only)

    @requires_grad.setter
    def requires_grad(self, flag):
        if flag is not True and flag is not False:
            raise RuntimeError(f"requires_grad must be set to True or False, not "
                               f"{type(flag).__name__}")
        if self.grad_fn is not None:
            hint = "" if flag else (" To use a computed tensor where no gradient should flow, "
                                    "take var.detach() instead.")
            raise RuntimeError("requires_grad can only be changed on leaf tensors; this tensor "
                               "was computed by an operation." + hint)
        if flag and self._dtype.category != dtypes.FLOAT:  # floating point or complex
            raise RuntimeError(f"only floating point (and complex) tensors can require "
                               f"gradients; this one is {self._dtype}")
        self._set_leaf_requires_grad(flag)

    def _set_leaf_requires_grad(self, flag):
        m = self._meta
        if m is not None and m.fw_only:
            if not flag:
                return  # it does not require grad, as far as the user can tell
            m.fw_only = False  # from now on a real leaf (a view: its own flag)
            if self._base is None:
                return
        if flag and self._inference and not _state.inference:
            raise RuntimeError("an inference tensor cannot be made to require grad outside "
                               "inference_mode; clone() it first")
        if self._base is not None:
            set_view_requires_grad(self, flag)
            return
        changed = self._requires_grad is not flag
        self._requires_grad = flag
        if changed and self._meta is not None:
            views_follow_base(self)

    @requires_grad.deleter
    def requires_grad(self):
        raise RuntimeError("the requires_grad attribute of a tensor cannot be deleted")

    @property
    def _backward_hooks(self):
        m = self._meta
        return None if m is None else m.hooks

    @_backward_hooks.deleter
    def _backward_hooks(self):
        raise RuntimeError("the hooks of a tensor cannot be deleted; remove them with the "
                           "handle register_hook returned")

    def requires_grad_(self, requires_grad=True):
        if requires_grad is not True and requires_grad is not False:
            raise TypeError(f"requires_grad_() takes a bool, not {type(requires_grad).__name__}")
        if self.grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError("requires_grad can only be changed on leaf tensors; this tensor "
                               "was computed by an operation. To use a computed tensor where "
                               "no gradient should flow, take var.detach() instead.")
        if requires_grad and self._dtype.category != dtypes.FLOAT:
            raise RuntimeError(f"only floating point tensors can require gradients; this one "
                               f"is {self._dtype}")
        self._set_leaf_requires_grad(requires_grad)
        return self

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad_fn(self):
        if self._base is not None and self._meta.view_version != self._vc[0]:
            # the base or a view of it changed in place since this view's history was made
            return regenerated_view_fn(self)
        return self._grad_fn

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        if self._grad is None and self._grad_fn is not None and not self.retains_grad:
            warnings.warn(
                "reading .grad of a non-leaf tensor: it is not filled in by backward(), so "
                "this is None. Call .retain_grad() on the tensor before backward() if you "
                "want its gradient, or read .grad of the leaf tensor you meant.",
                UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is None:
            self._grad = None
            return
        if not is_tensor(value):
            raise TypeError(f"a tensor's .grad must be a Tensor or None, not "
                            f"{type(value).__name__}")
        if value is self:
            raise RuntimeError("a tensor cannot be its own gradient")
        if value._data.shape != self._data.shape:
            raise RuntimeError(f"cannot assign a gradient of shape {list(value._data.shape)} "
                               f"to a tensor of shape {list(self._data.shape)}; they must match")
        if value._dtype is not self._dtype:
            raise RuntimeError(f"cannot assign a gradient of dtype {value._dtype} to a tensor "
                               f"of dtype {self._dtype}; convert it first")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        m = self._meta
        return m is not None and m.retains_grad and self.grad_fn is not None

    def retain_grad(self):
        if not self.requires_grad:
            raise RuntimeError("retain_grad() needs a tensor that requires grad")
        gf = self.grad_fn
        if gf is None or self.retains_grad:
            return
        meta_of(self).retains_grad = True
        gf._hook_table().retain[self._output_nr] = weakref.ref(self)

    def _accumulator(self):
        return accumulator_of(self)

    # -- hooks -------------------------------------------------------------------------------
    def register_hook(self, hook):
        if not self.requires_grad:
            raise RuntimeError("register_hook() needs a tensor that requires grad")
        gf = self.grad_fn
        if gf is None:
            m = meta_of(self)
            if m.hooks is None:
                m.hooks = {}
            table = m.hooks
        else:
            table = gf._hook_table().tensor_pre.setdefault(self._output_nr, {})
        handle = RemovableHandle(table)
        table[handle.id] = hook
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        if not self.requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook() needs a tensor that "
                               "requires grad")
        if self.grad_fn is not None:
            raise RuntimeError("post-accumulate-grad hooks can only be registered on leaf "
                               "tensors")
        m = meta_of(self)
        if m.post_acc_hooks is None:
            m.post_acc_hooks = {}
        handle = RemovableHandle(m.post_acc_hooks)
        m.post_acc_hooks[handle.id] = hook
        return handle

    # -- backward ----------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from runtime import autograd

        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # -- detach / data -----------------------------------------------------------------------
    @property
    def real(self):
        return F.real(self)

    @property
    def imag(self):
        return F.imag(self)

    def conj(self):
        return F.conj(self)

    def angle(self):
        return F.angle(self)

    def sgn(self):
        return F.sgn(self)

    def resolve_conj(self):
        return self

    def is_conj(self):
        return False

    def _is_view(self):
        """Whether this tensor is a view that autograd tracks (its `_base` is set)."""
        return self._base is not None

    def equal(self, other):
        return F.equal(self, other)

    def detach(self):
        out = Tensor._wrap(self._data, self._dtype)
        out._vc = self._vc
        return out

    def detach_(self):
        if self._base is not None:
            raise RuntimeError("detach_() cannot be used on a view; use detach() to get a new "
                               "tensor instead")
        had_grad = self._requires_grad or self._grad_fn is not None
        if self._grad_fn is not None:
            meta_of(self).detached = True
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        if had_grad and self._meta is not None:
            views_follow_base(self)
        return self

    @property
    def data(self):
        out = Tensor._wrap(self._data, self._dtype)
        return out

    @data.deleter
    def data(self):
        raise RuntimeError("the data of a tensor cannot be deleted")

    @data.setter
    def data(self, value):
        if not is_tensor(value):
            raise TypeError(f"data must be set to a Tensor, not {type(value).__name__}")
        if self.requires_grad and not value._dtype.is_floating_point:
            raise RuntimeError("a tensor that requires grad can only hold floating point data")
        self._data = value._data
        self._dtype = value._dtype

    # -- conversions -------------------------------------------------------------------------
    def numpy(self, force=False):
        if self.requires_grad and _state.enabled and not force:
            raise RuntimeError("numpy() is not available on a tensor that requires grad; call "
                               "tensor.detach().numpy() instead")
        return self._data

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"item() needs a tensor with one element, this one has "
                               f"{self._data.size}")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        if self._data.size != 1:
            raise ValueError(_ONE_ELEMENT)
        if self.requires_grad and not _warned_float:
            _warned_float.append(True)  # once per process, as PyTorch's TORCH_WARN_ONCE
            warnings.warn("converting a tensor that requires grad to a Python float drops its "
                          "autograd history; call tensor.detach() first to make that explicit",
                          UserWarning, stacklevel=2)
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError(_ONE_ELEMENT)
        return int(self.item())

    def __index__(self):
        if self._dtype.category == dtypes.FLOAT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"the truth value of a tensor with {self._data.size} elements is "
                               f"ambiguous; use .any() or .all()")
        return bool(self._data.reshape(()))

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-dim tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-dim tensor")
        return iter(F.unbind(self, 0))

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()  # refused for a tensor that requires grad, as numpy() is
        if dtype is not None:
            return data.astype(dtype, copy=bool(copy))
        return data.copy() if copy else data

    def __hash__(self):
        return id(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None):
        from runtime.printing import format_tensor

        return format_tensor(self._data, self._repr_suffixes())

    def _repr_suffixes(self):
        """PyTorch's suffixes: dtype (when not implied), then grad_fn or requires_grad."""
        default = get_default_dtype()
        if self._data.size == 0:
            shows_dtype = self._dtype is not default
        else:
            shows_dtype = self._dtype not in (default, dtypes.int64, dtypes.bool_,
                                              dtypes.promote_types(default, dtypes.complex64))
        suffixes = [f"dtype={self._dtype!r}"] if shows_dtype else []
        gf = self.grad_fn
        if gf is not None:
            suffixes.append(f"grad_fn=<{type(gf).__name__}>")
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        tangent = self._meta.tangent if self._meta is not None else None
        if tangent is not None:
            shown = tangent.item() if tangent.dim() == 0 else repr(tangent)
            suffixes.append(f"tangent={shown}")
        return suffixes

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (_rebuild, (self._data.copy(), self._requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("only leaf tensors can be deep-copied")
        out = type(self).__new__(type(self))
        Tensor._init_from(out, self._data.copy(), self._dtype)
        out._requires_grad = self._requires_grad
        if self._grad is not None:
            out._grad = self._grad.clone()
        memo[id(self)] = out
        return out

    # -- dtype conversion --------------------------------------------------------------------
    def to(self, *args, **kwargs):
        unknown = set(kwargs) - _TO_KEYWORDS
        if unknown:
            raise TypeError(f"to() got an unexpected keyword argument '{min(unknown)}'; it "
                            f"takes dtype, device, non_blocking, copy and memory_format")
        dt = kwargs.get("dtype")
        copy = kwargs.get("copy", False)
        for a in args:
            if isinstance(a, dtypes.dtype):
                dt = a
            elif is_tensor(a):
                dt = a._dtype
            elif isinstance(a, str) and a.split(":")[0] != "cpu":
                raise RuntimeError(f"to(): {a!r} is not a device this library has (only "
                                   f"'cpu'); a dtype is given as torch.float64, not a string")
        return self if dt is None else F.to_dtype(self, dt, copy)

    def type(self, dtype=None):
        if dtype is None:
            return "torch." + self._dtype.tensor_type
        return F.to_dtype(self, dtype)

    def float(self):
        return F.to_dtype(self, dtypes.float32)

    def double(self):
        return F.to_dtype(self, dtypes.float64)

    def half(self):
        return F.to_dtype(self, dtypes.float16)

    def long(self):
        return F.to_dtype(self, dtypes.int64)

    def int(self):
        return F.to_dtype(self, dtypes.int32)

    def short(self):
        return F.to_dtype(self, dtypes.int16)

    def char(self):
        return F.to_dtype(self, dtypes.int8)

    def byte(self):
        return F.to_dtype(self, dtypes.uint8)

    def bool(self):
        return F.to_dtype(self, dtypes.bool_)

    def cpu(self):
        return self

    def cuda(self, *args, **kwargs):
        raise AssertionError("adcompile runs on the CPU only; there is no CUDA device")

    def contiguous(self):
        return F.contiguous(self)

    def clone(self, memory_format=None):
        return F.clone(self)

    def type_as(self, other):
        return F.to_dtype(self, other._dtype)

    def new_tensor(self, data, dtype=None, requires_grad=False):
        from runtime.creation import tensor

        return tensor(data, dtype=dtype or self._dtype, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None):
        from runtime.creation import zeros

        return zeros(*size, dtype=dtype or self._dtype)

    def new_ones(self, *size, dtype=None):
        from runtime.creation import ones

        return ones(*size, dtype=dtype or self._dtype)

    def new_full(self, size, fill_value, dtype=None):
        from runtime.creation import full

        return full(size, fill_value, dtype=dtype or self._dtype)

    def new_empty(self, *size, dtype=None):
        from runtime.creation import empty

        return empty(*size, dtype=dtype or self._dtype)

    # -- operators ---------------------------------------------------------------------------
    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.rsub(self, F.check_operand(other, "sub"))

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.rdiv(self, F.check_operand(other, "div"))

    def __floordiv__(self, other):
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return F.rfloor_divide(self, other)

    def __mod__(self, other):
        return F.remainder(self, other)

    def __rmod__(self, other):
        return F.rremainder(self, other)

    def __pow__(self, other):
        return F.pow(self, other)

    def __rpow__(self, other):
        return F.rpow(self, F.check_operand(other, "pow"))

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.abs(self)

    def __invert__(self):
        if self._dtype is dtypes.bool_:
            return F.logical_not(self)
        return F.wrap(np.invert(self._data), self._dtype)

    def __and__(self, other):
        return F.bitwise(np.bitwise_and, self, other)

    def __or__(self, other):
        return F.bitwise(np.bitwise_or, self, other)

    def __xor__(self, other):
        return F.bitwise(np.bitwise_xor, self, other)

    __rand__ = __and__
    __ror__ = __or__
    __rxor__ = __xor__

    def __eq__(self, other):
        return F.eq(self, other)

    def __ne__(self, other):
        return F.ne(self, other)

    def __lt__(self, other):
        return F.lt(self, other)

    def __le__(self, other):
        return F.le(self, other)

    def __gt__(self, other):
        return F.gt(self, other)

    def __ge__(self, other):
        return F.ge(self, other)

    # -- in-place operators ------------------------------------------------------------------
    def _inplace(self, result_fn, *args):
        recording = _recording(self, args)
        check_inplace(self, recording)
        vc = self._vc
        aliased = False
        for a in args:  # sharing memory: a view of it, or a .data of it (a counter of its own)
            if getattr(a, "_vc", None) is vc or (isinstance(a, Tensor)
                                                 and np.may_share_memory(a._data, self._data)):
                aliased = True
        if aliased:
            check_partial_overlap(self, args, result_fn)
        inplace_order.check_shape(self, result_fn, args)
        if aliased:  # an operand reading elements the op writes first: PyTorch's element order
            result_fn = inplace_order.ordered(self, result_fn, args) or result_fn
        if not recording:
            direct = _DIRECT.get(result_fn)
            if direct is not None and not overlapping(self._data) \
                    and self._data.flags.writeable and direct(self._data, *args):
                vc[0] += 1
                return self
        check_internal_overlap(self, result_fn, args)
        if recording and self._dtype.category != dtypes.FLOAT:
            return on_integer_target(self._write, result_fn, args, recording, aliased)
        return self._write(result_fn, args, recording, aliased)

    def _write(self, result_fn, args, recording, aliased):
        result = result_fn(self, *args)
        if not recording:
            result._grad_fn = None
        if result._dtype is not self._dtype and result._dtype.category > self._dtype.category:
            raise RuntimeError(f"the result of an in-place operation has dtype "
                               f"{result._dtype}, which cannot be stored in a tensor of dtype "
                               f"{self._dtype}")
        # the target as its own operand (a.mul_(a)) stays saved as it is, so backward finds
        # it modified, as PyTorch does; another alias (v = a.detach(); v.mul_(a)) is saved
        # on its own, and the target's old value as a copy
        return apply_inplace(self, result, recording and any(a is self for a in args), args)

    def __iadd__(self, other):
        return self._inplace(F.add, other)

    def __isub__(self, other):
        return self._inplace(F.sub, other)

    def __imul__(self, other):
        return self._inplace(F.mul, other)

    def __itruediv__(self, other):
        return self._inplace(F.div, other)

    def __ipow__(self, other):
        return self._inplace(F.pow, other)

    def __ifloordiv__(self, other):
        return self._inplace(F.floor_divide, other)

    def __imod__(self, other):
        return self._inplace(F.remainder, other)

    def floor_divide_(self, other):
        return self._inplace(F.floor_divide, other)

    def add_(self, other, alpha=1):
        return self._inplace(F.add, other, alpha)

    def sub_(self, other, alpha=1):
        return self._inplace(F.sub, other, alpha)

    def mul_(self, other):
        return self._inplace(F.mul, other)

    def div_(self, other, rounding_mode=None):
        return self._inplace(F.div, other, rounding_mode)

    def pow_(self, other):
        return self._inplace(F.pow, other)

    def clamp_(self, min=None, max=None):
        return self._inplace(F.clamp, min, max)

    clip_ = clamp_

    def exp_(self):
        return self._inplace(F.exp)

    def log_(self):
        return self._inplace(F.log)

    def neg_(self):
        return self._inplace(F.neg)

    def relu_(self):
        return self._inplace(F.relu)

    def sin_(self):
        return self._inplace(F.sin)

    def cos_(self):
        return self._inplace(F.cos)

    def sqrt_(self):
        return self._inplace(F.sqrt)

    def tanh_(self):
        return self._inplace(F.tanh)

    def sigmoid_(self):
        return self._inplace(F.sigmoid)

    def abs_(self):
        return self._inplace(F.abs)

    def floor_(self):
        return self._inplace(F.floor)

    def round_(self):
        return self._inplace(F.round)

    def zero_(self):
        return self._inplace(F.zero_like_op)

    def fill_(self, value):
        return self._inplace(F.fill_like_op, value)

    def copy_(self, src, non_blocking=False):
        return self._inplace(F.copy_like_op, src)

    def addcmul_(self, tensor1, tensor2, value=1):
        return self._inplace(F.addcmul, tensor1, tensor2, value)

    def addcdiv_(self, tensor1, tensor2, value=1):
        return self._inplace(F.addcdiv, tensor1, tensor2, value)

    def lerp_(self, end, weight):
        F.check_lerp_target(self, end, weight)
        return self._inplace(F.lerp, end, weight)

    def where(self, condition, other):
        """self where condition holds, other elsewhere (torch.where(condition, self, other))."""
        return F.where(condition, self, other)

    def masked_fill_(self, mask, value):
        return self._inplace(F.masked_fill, mask, value)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        from runtime import random

        return self._fill_random(random.uniform_, a, b, generator)

    def normal_(self, mean=0.0, std=1.0, generator=None):
        from runtime import random

        return self._fill_random(random.normal_, mean, std, generator)

    def _fill_random(self, fn, a, b, generator):
        check_inplace(self, _recording(self, ()))
        fn(self._data, a, b, generator=generator)
        self._vc[0] += 1
        return self

    # -- indexing ----------------------------------------------------------------------------
    def __getitem__(self, key):
        return F.getitem(self, key)

    def __setitem__(self, key, value):
        F.setitem(self, key, value)


def _recording(t, args):
    """Whether an in-place op on `t` with `args` must be recorded in the graph (a view's
    `_requires_grad` already says whether its base requires grad). As in PyTorch, an integer
    or bool target starts to require grad too (`fill_`, `masked_fill_` and `index_put_` of a
    value that requires grad), except through `copy_` (copy_like_op), which checks."""
    if not _state.enabled:
        return False
    if t._requires_grad or t._grad_fn is not None:
        return True
    return any(getattr(a, "_requires_grad", False) or getattr(a, "_grad_fn", None) is not None
               for a in args)


def _rebuild(data, requires_grad):
    t = Tensor._wrap(data)
    t._requires_grad = requires_grad
    return t


def _install_methods():
    """Methods that are plain calls into runtime.ops (one line each, so a table)."""
    names = [
        "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "log1p", "sqrt", "rsqrt",
        "sin", "cos", "tan", "tanh", "sigmoid", "relu", "clamp", "reciprocal", "sign", "floor",
        "ceil", "trunc", "round", "square", "maximum", "minimum", "masked_fill", "eq", "ne", "lt",
        "le", "gt", "ge", "logical_not", "logical_and", "logical_or", "isnan", "isinf",
        "isfinite", "sum", "mean", "prod", "max", "min", "argmax", "argmin", "norm", "var", "std",
        "dot", "vdot", "mm", "mv", "bmm", "matmul", "outer", "view", "reshape", "flatten", "t",
        "transpose", "permute", "squeeze", "unsqueeze", "expand", "expand_as", "select",
        "narrow", "split", "chunk", "unbind", "diag", "amax", "amin", "all", "any", "cumsum",
        "softmax", "log_softmax", "remainder", "floor_divide", "addmm", "view_as", "reshape_as",
        "repeat", "flip", "masked_select", "gather", "index_select", "log2", "log10",
        "expm1", "sinh", "cosh", "asin", "acos", "atan", "erf", "fmod", "sort", "topk",
        "argsort", "nonzero", "float_power", "lerp", "clip", "sub", "logsumexp", "cumprod",
        "addcmul", "addcdiv", "swapaxes", "swapdims", "clamp_min", "clamp_max",
    ]
    for name in names:
        fn = getattr(F, name, None)
        if fn is not None and not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: F.permute(self, tuple(reversed(range(self._data.ndim)))))
    Tensor.mT = property(F.matrix_transpose)
    Tensor.mH = property(lambda self: F.matrix_transpose(self).conj() if self.is_complex()
                         else F.matrix_transpose(self))
    Tensor.subtract = Tensor.sub
    Tensor.multiply = Tensor.mul
    Tensor.divide = Tensor.div
    Tensor.true_divide = Tensor.div
    Tensor.absolute = Tensor.abs
    Tensor.negative = Tensor.neg
    Tensor.greater = Tensor.gt
    Tensor.less = Tensor.lt
    Tensor.clip = Tensor.clamp


_install_methods()
_core._wrap_tensor = Tensor._wrap
# `import adcompile as torch` code prints type(t) and expects PyTorch's spelling
Tensor.__module__ = "torch"
_DIRECT = _direct_inplace.build(F)
_elementwise._wrap_tensor = Tensor._wrap
# the commonest operators call their op directly: a method that only forwards to it is one
# more Python call on every `x * 2` and `x + y` (~0.1 us of a 0-dim op's ~6)
Tensor.__add__ = Tensor.__radd__ = F.add
Tensor.__mul__ = Tensor.__rmul__ = F.mul
