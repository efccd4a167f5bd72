"""Golden files for the IR text: the printer is stable and the pipeline's output is reviewed.

Run with ADCOMPILE_UPDATE_GOLDEN=1 to rewrite the files after an intended change, then review
the diff."""

import os
import pathlib

import numpy as np
import pytest

from adcompile import adcompile
from tests.compiler import corpus as c

GOLDEN = pathlib.Path(__file__).parent / "golden"
V = np.arange(5.0)
M = np.ones((2, 3))

CASES = {
    "poly": (c.poly, (2.0,)),
    "sign": (c.sign, (1.0,)),
    "piecewise": (c.piecewise, (1.0,)),
    "sum_range": (c.sum_range, (3,)),
    "gcd": (c.gcd, (4, 6)),
    "break_loop": (c.break_loop, (3,)),
    "continue_loop": (c.continue_loop, (3,)),
    "return_in_loop": (c.return_in_loop, (9,)),
    "dot": (c.dot, (V, V)),
    "matvec": (c.matvec, (M, V[:3])),
    "recurrence": (c.recurrence, (V,)),
    "calls_with_control": (c.calls_with_control, (V,)),
    "float32_accumulate": (c.float32_accumulate, (V.astype(np.float32),)),
    "bool_ops": (c.bool_ops, (1, 2)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ir_matches_golden(name):
    fn, args = CASES[name]
    text = adcompile(fn, verify=True).ir(*args)
    text = text.replace(str(pathlib.Path(c.__file__)), "corpus.py")
    path = GOLDEN / f"{name}.ir"
    if os.environ.get("ADCOMPILE_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


def test_printer_is_deterministic():
    first = adcompile(c.matmul).ir(M, M.T)
    second = adcompile(c.matmul).ir(M, M.T)
    assert first == second


DERIVATIVES = {
    "grad_poly": lambda: ac_grad_source(c.poly, (2.0,)),
    "grad_piecewise": lambda: ac_grad_source(c.piecewise, (0.5,)),
    "grad_dot": lambda: ac_grad_source(c.dot, (V, V)),
    "grad_series_exp": lambda: ac_grad_source(c.series_exp, (0.5,)),
    "grad_recurrence_sum": lambda: ac_grad_source(recurrence_sum, (V,)),
    "jvp_dot": lambda: __import__("adcompile").api.jvp_source(c.dot, (V, V), (V, None)),
}


def recurrence_sum(x):
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.size):
        y[i] = 0.9 * y[i - 1] + 0.1 * x[i]
    s = 0.0
    for v in y:
        s += v * v
    return s


def ac_grad_source(fn, args):
    import adcompile

    return adcompile.grad(fn).source(*args)


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivative_source_matches_golden(name):
    text = DERIVATIVES[name]()
    text = text.replace(str(pathlib.Path(c.__file__)), "corpus.py")
    text = text.replace(str(pathlib.Path(__file__)), "test_golden.py")
    path = GOLDEN / f"{name}.py.txt"
    if os.environ.get("ADCOMPILE_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text)
    assert text == path.read_text()
