"""The LLVM backend: lower.py (IR -> LLVM IR kernel), entry.py (the CPython entry point),
capi.py (the interpreter ABI it relies on), jit.py (optimise, cache, link), native.py (the
callable with one variant per array layout)."""

from adcompile.backends.llvm.native import NativeFunction, Options  # noqa: F401
