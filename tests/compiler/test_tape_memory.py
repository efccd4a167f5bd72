"""Tapes past memory.TAPE_SMALL bytes live in large blocks (LLVM backend): taken from the call's
free blocks and given back when outgrown or when the call ends, so the next call takes them
from the process's cache, at the capacity the tape ended with last time. Gradients of while
loops with such tapes agree across the backends and with the closed form, call after call, at
growing and shrinking sizes, after an error exit, and a repeated call faults no fresh pages in.
"""

import importlib.util
import math
import pathlib
import resource
import sys

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import memory

BACKENDS = ["interp", "python", "llvm"]


def _gradbench_det():
    """GradBench det's module (benchmarks/gradbench/det.py), whose det_by_minors walks the
    expansion in a while loop over an explicit stack, taping the row, the column, the partial
    product and the last row's column every step."""
    folder = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "gradbench"
    sys.path.insert(0, str(folder))  # det.py imports its harness
    try:
        spec = importlib.util.spec_from_file_location("gradbench_det", folder / "det.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


det_by_minors = _gradbench_det().det_by_minors


def recurrence_then_index(x, stop):
    """`stop` trips tape a float each; the index after the loop raises for some `stop`."""
    s = 0.0
    i = 0
    while i < stop:
        s = math.sin(s + x[i % 7]) * 0.9
        i += 1
    return s + x[stop % 8]


def carried_rows(w, steps):
    """A while loop carrying an array: a tape of arrays (owners, shapes, strides) per trip."""
    h = w[:3] * 0.5
    i = 0
    while i < steps:
        h = np.tanh(h * w[3:] + 0.1)
        i += 1
    return np.sum(h * h)


@pytest.fixture(autouse=True)
def no_disk_cache(monkeypatch):
    # TAPE_SMALL is not part of the cache key: programs are built from scratch
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")


def _cofactors(a):
    return np.linalg.det(a) * np.linalg.inv(a).T


def _matrix(ell, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 1.0, (ell, ell))


def test_det_tapes_outgrow_the_small_size():
    # ell = 7 walks 12300 steps: each tape of a machine word holds about 98 KB
    assert 12000 * 8 > memory.TAPE_SMALL


@pytest.mark.parametrize("backend", BACKENDS)
def test_det_gradient_is_the_cofactor_matrix(backend):
    a = _matrix(7)
    grad = ac.grad(ac.adcompile(det_by_minors, backend=backend, verify=True))
    np.testing.assert_allclose(grad(a), _cofactors(a), rtol=1e-9, atol=1e-12)
    value = ac.adcompile(det_by_minors, backend=backend)(a)
    assert value == pytest.approx(np.linalg.det(a), rel=1e-10)


def test_repeated_calls_at_changing_sizes_give_the_same_gradients():
    grad = ac.grad(ac.adcompile(det_by_minors))
    first = {}
    for ell in (7, 5, 8, 7, 6, 8, 7):  # hints larger and smaller than what the call needs
        a = _matrix(ell, ell)
        g = grad(a)
        np.testing.assert_allclose(g, _cofactors(a), rtol=1e-9, atol=1e-12)
        if ell in first:
            assert np.array_equal(g, first[ell])
        first.setdefault(ell, g)


def test_an_error_exit_gives_the_tapes_back():
    x = np.random.default_rng(1).uniform(-1.0, 1.0, 7)
    grad = ac.grad(ac.adcompile(recurrence_then_index), argnums=0)
    interp = ac.grad(ac.adcompile(recurrence_then_index, backend="python"), argnums=0)
    expected = interp(x, 20000)
    for stop in (20000, 20007, 30007, 20000, 10000):
        if stop % 8 == 7:
            with pytest.raises(IndexError):
                grad(x, stop)
        else:
            np.testing.assert_allclose(grad(x, stop), interp(x, stop), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grad(x, 20000), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("steps", [3, 4000])
def test_a_large_tape_of_arrays_keeps_its_items(steps):
    w = np.random.default_rng(2).uniform(-1.0, 1.0, 6)
    results = [ac.grad(ac.adcompile(carried_rows, backend=b), argnums=0)(w, steps)
               for b in BACKENDS]
    llvm = ac.grad(ac.adcompile(carried_rows), argnums=0)
    for _ in range(3):
        results.append(llvm(w, steps))
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], rtol=1e-12, atol=1e-15)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="minor faults as Linux counts")
def test_a_repeated_call_faults_no_tape_pages_in():
    a = _matrix(8)  # 110000 steps: about 0.9 MB a tape, 3 MB in all (some 800 pages)
    grad = ac.grad(ac.adcompile(det_by_minors))
    grad(a)
    grad(a)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        grad(a)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 3
    assert faults < 100
