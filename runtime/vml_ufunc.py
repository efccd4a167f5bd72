"""MKL's vector-math functions as numpy ufuncs (runtime/mkl.py's fast route to them).

A ctypes call costs ~0.9 us even with prebuilt arguments, against ~0.2 us for a numpy ufunc
on a 0-dim value, and benchmarks/eager_overhead.py's 0-dim chain makes three such calls per
four ops (sin, its backward's cos, tanh). So each VML function becomes a real ufunc:
numpy's `PyUFunc_FromFuncAndData`, reached through the `_UFUNC_API` capsule, gets one inner
loop per dtype (float32, float64) compiled here with llvmlite, and the VML entry point as
the loop's data. The loop computes what mkl.py's ctypes route computes, bit for bit:

- a run dense in input and output is one `vm?<Name>(n, in, out, mode)` call (in runs of at
  most MKL_INT's largest value, as PyTorch does), in place where numpy passes in == out;
- any other run (strided, broadcast, reversed) is gathered into a stack buffer in blocks,
  computed there and scattered back: VML's high-accuracy results depend only on each
  element's value, not on where it sits in a run (tests/test_mkl.py checks it);
- the loop clears the floating-point exception flags it raised: VML is called with
  VML_ERRMODE_IGNORE (PyTorch warns about nothing), and numpy would otherwise warn about an
  `inf` or `nan` it reads in the flags after the loop. It clears only the flags numpy reads
  that were not set before it ran, testing them first (clearing them on every call cost
  ~50 ns, a quarter of a 0-dim call).

`ufunc(name)` is None where llvmlite cannot compile the loops or the capsule's table is not
the one this module was written for (its first entry must be `np.ufunc` itself): mkl.py then
keeps its ctypes route. Nothing here loads MKL; the caller passes the VML entry points.
The ufuncs, the loops and every buffer numpy was handed live as long as the process.
"""

import ctypes
import functools
import threading

import numpy as np

from runtime.mkl import VML_MODE

_INT_MAX = 2**31 - 1  # MKL_INT of the LP64 interface
_BLOCK = 256  # elements gathered per VML call for a strided run
_FE_CHECKED = 0x1D  # x86's FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW: numpy's
_TYPES = ((np.dtype(np.float32), "float", 4, "vms"), (np.dtype(np.float64), "double", 8, "vmd"))
_FROM_FUNC_AND_DATA = 1  # PyUFunc_FromFuncAndData's index in numpy's __ufunc_api.h (1.x, 2.x)
_PY_UFUNC_NONE = -1  # no identity

_LOCK = threading.Lock()
_KEEP = []  # every array numpy keeps a pointer into, the library among them


def ufunc(lib, name):
    """MKL's vms<name> and vmd<name> in `lib` (a ctypes.CDLL) as one numpy ufunc with a
    float32 and a float64 loop, or None where the loops cannot be built."""
    maker, loops = _machinery()
    if maker is None:
        return None
    entries = [ctypes.cast(getattr(lib, prefix + name), ctypes.c_void_p).value
               for _, _, _, prefix in _TYPES]
    functions = (ctypes.c_void_p * 2)(*loops)
    data = (ctypes.c_void_p * 2)(*entries)
    signatures = bytes(n for dtype, *_ in _TYPES for n in (dtype.num, dtype.num))  # in -> out
    types = ctypes.create_string_buffer(signatures)
    title = ctypes.create_string_buffer(f"mkl_{name.lower()}".encode())
    doc = ctypes.create_string_buffer(f"MKL's vm?{name} (VML_HA), elementwise.".encode())
    with _LOCK:
        _KEEP.append((functions, data, types, title, doc, lib))
    return maker(functions, data, types, 2, 1, 1, _PY_UFUNC_NONE, title, doc, 0)


@functools.cache
def _machinery():
    """(numpy's PyUFunc_FromFuncAndData as a ctypes function, the two loops' addresses), or
    (None, None)."""
    try:
        with _LOCK:
            return _from_func_and_data(), _compile()
    except Exception:  # no llvmlite, no native target, another numpy: the ctypes route
        return None, None


def _from_func_and_data():
    try:
        from numpy._core import _multiarray_umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath
    capsule = _multiarray_umath._UFUNC_API
    name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
        ("PyCapsule_GetName", ctypes.pythonapi))(capsule)
    table = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", ctypes.pythonapi))(capsule, name)
    entries = (ctypes.c_void_p * 2).from_address(table)
    if entries[0] != id(np.ufunc):
        raise RuntimeError("numpy's ufunc API table is laid out differently")
    i, p = ctypes.c_int, ctypes.c_void_p
    return ctypes.PYFUNCTYPE(ctypes.py_object, p, p, p, i, i, i, i, p, p, i)(
        entries[_FROM_FUNC_AND_DATA])


def _compile():
    from runtime.simd_compiled import jit_library

    text = "".join(_loop(t, size) for _, t, size, _ in _TYPES) + _DECLARE
    symbols = [f"vml_loop_{t}" for _, t, _, _ in _TYPES]
    # no IR passes: the loops are written as wanted, and the passes would cost ~100 ms
    found = jit_library(text, symbols, "runtime_vml_ufunc", opt=2, ir_passes=False)
    return [found[symbol] for symbol in symbols]


_DECLARE = """
declare i64 @llvm.smin.i64(i64, i64)
declare i32 @feclearexcept(i32)
declare i32 @fetestexcept(i32)
"""


def _loop(t, size):
    """numpy's inner loop `void loop(char **args, npy_intp *n, npy_intp *steps, void *vml)`
    for element type t: dense runs straight to VML, others through a gathered buffer."""
    return f"""
define void @vml_loop_{t}(ptr %args, ptr %dims, ptr %steps, ptr %vml) {{
entry:
  %buf = alloca [{_BLOCK} x {t}], align 64
  %before = call i32 @fetestexcept(i32 {_FE_CHECKED})
  %n = load i64, ptr %dims
  %src = load ptr, ptr %args
  %dst_at = getelementptr inbounds ptr, ptr %args, i64 1
  %dst = load ptr, ptr %dst_at
  %is = load i64, ptr %steps
  %os_at = getelementptr inbounds i64, ptr %steps, i64 1
  %os = load i64, ptr %os_at
  %dense_in = icmp eq i64 %is, {size}
  %dense_out = icmp eq i64 %os, {size}
  %dense = and i1 %dense_in, %dense_out
  br i1 %dense, label %runs, label %blocks

runs:
  %done = phi i64 [0, %entry], [%done_next, %run]
  %more = icmp slt i64 %done, %n
  br i1 %more, label %run, label %exit

run:
  %left = sub i64 %n, %done
  %len = call i64 @llvm.smin.i64(i64 %left, i64 {_INT_MAX})
  %len32 = trunc i64 %len to i32
  %offset = mul i64 %done, {size}
  %a = getelementptr inbounds i8, ptr %src, i64 %offset
  %r = getelementptr inbounds i8, ptr %dst, i64 %offset
  call void %vml(i32 %len32, ptr %a, ptr %r, i64 {VML_MODE})
  %done_next = add i64 %done, %len
  br label %runs

blocks:
  %start = phi i64 [0, %entry], [%start_next, %scatter_end]
  %more_blocks = icmp slt i64 %start, %n
  br i1 %more_blocks, label %block, label %exit

block:
  %rest = sub i64 %n, %start
  %count = call i64 @llvm.smin.i64(i64 %rest, i64 {_BLOCK})
  br label %gather

{_strided_copy(t, "gather", "block", "compute", "src", "is", to_buffer=True)}
compute:
  %count32 = trunc i64 %count to i32
  call void %vml(i32 %count32, ptr %buf, ptr %buf, i64 {VML_MODE})
  br label %scatter

{_strided_copy(t, "scatter", "compute", "scatter_end", "dst", "os", to_buffer=False)}
scatter_end:
  %start_next = add i64 %start, %count
  br label %blocks

exit:
  %raised = call i32 @fetestexcept(i32 {_FE_CHECKED})
  %kept = xor i32 %before, -1
  %ours = and i32 %raised, %kept
  %quiet = icmp eq i32 %ours, 0
  br i1 %quiet, label %finish, label %clear

clear:
  %ignored = call i32 @feclearexcept(i32 %ours)
  br label %finish

finish:
  ret void
}}
"""


def _strided_copy(t, label, before, after, base, stride, to_buffer):
    """Block `label` of the loop: elements start .. start + count of the run at `base` with
    byte step `stride` copied into the buffer (to_buffer) or back out of it."""
    strided, buffered = f"%{label}_mem", f"%{label}_buf"
    source, target = (strided, buffered) if to_buffer else (buffered, strided)
    return f"""{label}:
  %{label}_i = phi i64 [0, %{before}], [%{label}_next, %{label}]
  %{label}_at = add i64 %start, %{label}_i
  %{label}_off = mul i64 %{label}_at, %{stride}
  {strided} = getelementptr i8, ptr %{base}, i64 %{label}_off
  {buffered} = getelementptr inbounds {t}, ptr %buf, i64 %{label}_i
  %{label}_value = load {t}, ptr {source}, align 1
  store {t} %{label}_value, ptr {target}, align 1
  %{label}_next = add i64 %{label}_i, 1
  %{label}_more = icmp slt i64 %{label}_next, %count
  br i1 %{label}_more, label %{label}, label %{after}
"""
