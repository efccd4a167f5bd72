"""The LLVM backend (see lower.py): scalar programs for now."""

from adcompile.backends.llvm.lower import Compiled  # noqa: F401
