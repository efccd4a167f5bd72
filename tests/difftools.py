"""Helpers shared by the differential test files of the linear-algebra and autograd-tool
families (imported, not collected: the name does not start with test_)."""

import torch

import adcompile

LIBS = (torch, adcompile)


def error_kinds(call):
    """The exception class name `call(lib)` raises under torch and under adcompile (None: no
    error). PyTorch's private spellings (torch._C._LinAlgError) compare by the public name."""
    kinds = []
    for lib in LIBS:
        try:
            call(lib)
            kinds.append(None)
        except Exception as e:  # noqa: BLE001 - the type is what we compare
            kinds.append(type(e).__name__.lstrip("_"))
    return kinds


def assert_same_error(call):
    theirs, ours = error_kinds(call)
    assert theirs is not None, "torch raises here"
    assert ours == theirs
