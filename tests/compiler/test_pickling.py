"""Compiled functions and transforms pickle by reference: round trips in this process and
through a process pool (whose workers must find their code in the shared on-disk cache), and
clear errors for functions that cannot be found by name."""

import functools
import multiprocessing
import pickle
import sys
import types
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import adcompile as ac
from adcompile import adcompile
from adcompile.pickling import FunctionNotFound
from tests.compiler import pickled_functions as pf

RNG = np.random.default_rng(0)
W, X, Y = RNG.normal(size=3), RNG.normal(size=(7, 3)), RNG.normal(size=7)
V = RNG.uniform(-1.0, 1.0, 6)
A32 = RNG.normal(size=5).astype(np.float32)

# name: (make the object, its arguments). Made lazily: the pool test pickles them after the
# parent has called them once, so the cache directory (shared through the environment) is warm.
OBJECTS = {
    "decorated": (lambda: pf.least_squares, (W, X, Y)),
    "adcompile(f)": (lambda: adcompile(pf.rosenbrock), (V,)),
    "fastmath": (lambda: adcompile(pf.rosenbrock, fastmath=True), (V,)),
    "boundscheck=False": (lambda: adcompile(pf.rosenbrock, boundscheck=False), (V,)),
    "backend=python": (lambda: adcompile(pf.scaled, backend="python"), (A32, 2.0)),
    "backend=interp": (lambda: adcompile(pf.scaled, backend="interp"), (V, 3)),
    "grad": (lambda: ac.grad(pf.rosenbrock), (V,)),
    "grad argnums tuple": (lambda: ac.grad(pf.least_squares, argnums=(0, 2)), (W, X, Y)),
    "value_and_grad": (lambda: ac.value_and_grad(pf.least_squares), (W, X, Y)),
    "value_and_grad fastmath": (
        lambda: ac.value_and_grad(adcompile(pf.rosenbrock, fastmath=True)), (V,)),
    "jvp program": (lambda: functools.partial(ac.jvp, pf.least_squares),
                    ((W, X, Y), (V[:3], None, None))),
    "jvp of grad (hvp)": (lambda: functools.partial(ac.jvp, ac.grad(pf.rosenbrock)),
                          ((V,), (V[::-1].copy(),))),
    "vjp pullback": (lambda: ac.vjp(pf.residuals, W, X, Y)[1], (Y,)),
    "jacobian": (lambda: ac.jacobian(pf.residuals), (W, X, Y)),
    "hessian": (lambda: ac.hessian(pf.rosenbrock), (V[:4],)),
}


def _bits(value):
    """A value's exact contents: types, shapes, dtypes and bytes of every leaf."""
    if isinstance(value, tuple):
        return ("tuple", tuple(_bits(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return (type(value).__name__, np.asarray(value).tobytes())


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_round_trip_in_process(name):
    make, args = OBJECTS[name]
    obj = make()
    expected = obj(*args)
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj)
    assert _bits(again(*args)) == _bits(expected)


@pytest.mark.parametrize("name", ["decorated", "fastmath", "grad", "value_and_grad"])
def test_round_trip_in_process_gives_back_the_object(name):
    obj = OBJECTS[name][0]()
    assert pickle.loads(pickle.dumps(obj)) is obj


def test_options_travel():
    fast = pickle.loads(pickle.dumps(adcompile(pf.rosenbrock, fastmath=True, boundscheck=False)))
    assert (fast.options.fastmath, fast.options.boundscheck) == (True, False)
    plain = pickle.loads(pickle.dumps(adcompile(pf.rosenbrock)))
    assert (plain.options.fastmath, plain.options.boundscheck) == (False, True)
    transform = pickle.loads(pickle.dumps(ac.value_and_grad(pf.least_squares, argnums=(0, 1))))
    assert (transform.argnums, transform.with_value) == ((0, 1), True)


def _spawn_pool():
    return ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))


def test_round_trip_through_a_process_pool_is_warm():
    """Each worker is a fresh interpreter: it imports the function's module, and its first
    call must load IR and object code from the on-disk cache (compiling raises there)."""
    from adcompile.backends.llvm import pool as thread_pool

    payloads, expected = {}, {}
    for name, (make, args) in OBJECTS.items():
        obj = make()
        expected[name] = _bits(obj(*args))  # compiles here, fills the shared cache
        payloads[name] = pickle.dumps(obj)
    thread_pool.store_in_cache()  # built earlier in this process with the cache off, maybe
    with _spawn_pool() as pool:
        futures = {name: pool.submit(pf.call_warm, payloads[name], OBJECTS[name][1])
                   for name in OBJECTS}
        results = {name: _bits(pickle.loads(f.result())) for name, f in futures.items()}
    assert results == expected


def _closure():
    def inner(x):
        return x * 2.0

    return adcompile(inner)


def test_closure_is_refused_with_advice():
    with pytest.raises(pickle.PicklingError) as info:
        pickle.dumps(_closure())
    message = str(info.value)
    assert "'_closure.<locals>.inner'" in message and "inside another function" in message
    assert "top level of a module" in message and "test_pickling.py:" in message
    with pytest.raises(pickle.PicklingError, match="inside another function"):
        pickle.dumps(ac.grad(_closure()))


def test_rebound_name_is_refused():
    old = pf.rosenbrock
    compiled = adcompile(old)
    try:
        pf.rosenbrock = pf.scaled
        with pytest.raises(FunctionNotFound, match="rosenbrock is now another object"):
            pickle.dumps(compiled)
    finally:
        pf.rosenbrock = old


def test_missing_name_is_refused():
    ghost = types.FunctionType(pf.scaled.__code__, pf.__dict__, "ghost")
    ghost.__qualname__ = "ghost"
    with pytest.raises(FunctionNotFound, match="not found as tests.compiler.pickled_functions"):
        pickle.dumps(adcompile(ghost))


def _main_function():
    """A compiled function of this process's __main__ (as a script's would be)."""
    fn = types.FunctionType(pf.scaled.__code__, {"np": np}, "from_main")
    fn.__module__, fn.__qualname__ = "__main__", "from_main"
    return fn


def test_function_of_another_main_is_refused_where_unpickled(monkeypatch):
    fn = _main_function()
    monkeypatch.setattr(sys.modules["__main__"], "from_main", fn, raising=False)
    payload = pickle.dumps(adcompile(fn))
    assert pickle.loads(payload).fn is fn  # this process's __main__ has it
    with _spawn_pool() as pool:
        kinds, message = pool.submit(pf.unpickle_error, payload).result()
    assert "PicklingError" in kinds and "UnpicklingError" in kinds
    assert "'from_main'" in message and "__main__ module of the process that pickled it" in message
    assert "client.upload_file" in message
