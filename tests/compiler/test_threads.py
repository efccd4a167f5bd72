"""One compiled function called from many threads at once: the first calls race to compile
the same signature (it must be compiled once), and every call gives the single-threaded
result bit for bit."""

import sys
import threading

import numpy as np
import pytest

import adcompile as ac
from adcompile import adcompile, api
from tests.compiler import pickled_functions as pf

THREADS = 8
CALLS = 200


def _hammer(call, inputs):
    """Run call(*inputs[k]) from THREADS threads released together, CALLS times each;
    returns each thread's results."""
    start = threading.Barrier(THREADS)
    results = [None] * THREADS
    errors = []

    def work(t):
        try:
            start.wait()
            results[t] = [call(*inputs[(t + k) % len(inputs)]) for k in range(CALLS)]
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def _inputs(n):
    rng = np.random.default_rng(n)
    return [(rng.normal(size=3), rng.normal(size=(40, 3)), rng.normal(size=40))
            for _ in range(n)]


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("transform", ["primal", "grad", "value_and_grad"])
def test_first_calls_compile_once_and_agree(transform, monkeypatch):
    built = []
    real = api._specialization

    def counting(cf, key, build, exact=None):
        built.append(key[0])
        return real(cf, key, build, exact)

    monkeypatch.setattr(api, "_specialization", counting)
    f = adcompile(pf.least_squares.fn)  # a fresh object: nothing compiled in this process
    call = {"primal": f, "grad": ac.grad(f), "value_and_grad": ac.value_and_grad(f)}[transform]
    inputs = _inputs(5)
    results = _hammer(call, inputs)
    assert sorted(built) == sorted({"primal": ["primal"], "grad": ["primal", "grad"],
                                    "value_and_grad": ["primal", "value_and_grad"]}[transform])
    expected = [call(*args) for args in inputs]
    for t, got in enumerate(results):
        for k, value in enumerate(got):
            assert _same(value, expected[(t + k) % len(inputs)])


def test_arrays_allocated_inside_calls_do_not_mix():
    """Each call allocates, returns and frees its own arrays (the gradient here) while other
    threads do the same."""
    g = ac.grad(pf.rosenbrock)
    inputs = [(np.linspace(-1.0, 1.0, n),) for n in (3, 50, 1000, 7)]
    expected = [g(*args) for args in inputs]
    for t, got in enumerate(_hammer(g, inputs)):
        for k, value in enumerate(got):
            assert _same(value, expected[(t + k) % len(inputs)])


def _progress_during_calls(f, x):
    """How far a spinning Python thread counts while this thread is inside f(x), most of
    three calls. The switch interval is long, so while the GIL is held the spinner is not
    switched in during these short calls."""
    state = {"in_call": False, "count": 0}
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            if state["in_call"]:
                state["count"] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.5)
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        moved = []
        for _ in range(3):
            state["count"] = 0
            state["in_call"] = True
            f(x)
            state["in_call"] = False
            moved.append(state["count"])
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)
    return max(moved)


def test_the_gil_is_released_while_compiled_code_runs():
    f = adcompile(pf.scaled)  # sin of 3e6 numbers: tens of milliseconds in native code
    x = np.linspace(-1.0, 1.0, 3_000_000)
    f(x, 2.0)
    assert _progress_during_calls(lambda v: f(v, 2.0), x) > 0
