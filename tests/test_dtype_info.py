"""torch.finfo / iinfo / promote_types / can_cast / result_type, differential against PyTorch
2.13 over every dtype (pair) both libraries have."""

import pytest
import torch

import adcompile

NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
         "complex64", "complex128"]
FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]
PAIRS = [(a, b) for a in NAMES for b in NAMES]


def _facts(info, fields):
    return {name: getattr(info, name) for name in fields} | {"repr": repr(info)}


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    fields = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")
    theirs = _facts(torch.finfo(getattr(torch, name)), fields)
    assert _facts(adcompile.finfo(getattr(adcompile, name)), fields) == theirs


def test_finfo_default_dtype_and_equality():
    assert repr(adcompile.finfo()) == repr(torch.finfo())
    assert adcompile.finfo(adcompile.float) == adcompile.finfo(adcompile.float32)
    assert adcompile.finfo(adcompile.float16) != adcompile.finfo(adcompile.float32)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    fields = ("bits", "max", "min", "dtype")
    theirs = _facts(torch.iinfo(getattr(torch, name)), fields)
    assert _facts(adcompile.iinfo(getattr(adcompile, name)), fields) == theirs


@pytest.mark.parametrize("fn", ["promote_types", "can_cast"])
def test_pairwise(fn):
    for a, b in PAIRS:
        theirs = getattr(torch, fn)(getattr(torch, a), getattr(torch, b))
        ours = getattr(adcompile, fn)(getattr(adcompile, a), getattr(adcompile, b))
        assert str(ours) == str(theirs), (a, b)


OPERANDS = [
    lambda L: (L.ones(2, dtype=L.int32), 2.0),
    lambda L: (2, 3.0),
    lambda L: (True, 3),
    lambda L: (L.tensor(1.0, dtype=L.float64), L.ones(2, dtype=L.int64)),
    lambda L: (L.ones(2, dtype=L.float16), L.tensor(1.0, dtype=L.float64)),
    lambda L: (L.ones(2, dtype=L.uint8), L.tensor(-1, dtype=L.int8)),
    lambda L: (L.ones(2), 1j),
    lambda L: (L.ones(2, dtype=L.bool), L.tensor(3)),
]


@pytest.mark.parametrize("which", range(len(OPERANDS)))
def test_result_type(which):
    theirs = torch.result_type(*OPERANDS[which](torch))
    assert str(adcompile.result_type(*OPERANDS[which](adcompile))) == str(theirs)
