"""Parallel array loops (LLVM backend, parallel.py and pool.py): the same bits as one thread.

Every check compiles a function twice, with parallel=False (no parallel code at all) and with
the default parallel=True, and runs the parallel one with the pool forced to split even tiny
loops (min_work 1, pairwise unit 256) on 1, 2 and 3 threads: values, gradients and the
arguments a function writes into must be bit-identical, and errors the same exception with the
same message. Cases: the whole array corpus (values), a slice of it and Rosenbrock (value and
gradient), random array programs (tests/compiler/test_array_hypothesis.py's generator), long
pairwise sums of many layouts against numpy, errors raised inside pieces, arguments whose rows
overlap, several Python threads calling at once, a forked child, and the options.
Run single-process (-p no:xdist): the pool's settings are process-wide.
"""

import os
import threading

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import adcompile as ac
from adcompile.backends.llvm import pool
from tests.compiler import array_corpus as corpus
from tests.compiler.test_array_hypothesis import SETTINGS, _arguments, _load, programs

THREADS = (1, 2, 3)
# cheap to differentiate on native code, and covering sums, stores, broadcasts, views, float32
GRADIENT_CASES = {"sum_of_squares-strided", "vector_norm-f32", "rows_dot_squared",
                  "quadratic_form", "sum_axis_tuple", "even_minus_odd-strided", "normalize",
                  "vector_sum_axis0", "stores_then_sum", "rows_updated_in_place", "mse",
                  "rosenbrock", "huber", "softmax_entropy", "layer_norm"}
CASES = {name: (fn, args, diff) for name, fn, args, diff in corpus.CASES}
# every third case in CI (two compilations each); ADCOMPILE_PARALLEL_FULL=1 runs them all
FULL = bool(os.environ.get("ADCOMPILE_PARALLEL_FULL"))
CORPUS = sorted(CASES) if FULL else sorted(CASES)[::3]


@pytest.fixture(autouse=True)
def split_everything():
    """Split every loop the pool may split (restored afterwards)."""
    saved = pool.settings()
    pool.configure(min_work=1, unit=256)
    yield
    pool.configure(**saved)


def pair(fn):
    return ac.adcompile(fn, parallel=False), ac.adcompile(fn)


def outcome(f, args):
    """(result, arguments afterwards) or (exception type, message)."""
    try:
        return f(*args), args
    except Exception as e:  # the same failure is part of the same result
        return type(e), str(e)


def assert_same_bits(got, want, what):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for g, w in zip(got, want):
            assert_same_bits(g, w, what)
        return
    if isinstance(want, (type, str)):
        assert got == want, f"{what}: {got!r} != {want!r}"
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {g.dtype}{g.shape} != " \
                                                     f"{w.dtype}{w.shape}"
    assert g.tobytes() == w.tobytes(), f"{what}: the bits differ\n{g!r}\n{w!r}"


def each_thread_count(serial, parallel, args, what):
    want = outcome(serial, args())
    for n in THREADS:
        pool.configure(threads=n)
        assert_same_bits(outcome(parallel, args()), want, f"{what}, {n} threads")


# -- the array corpus ------------------------------------------------------------------------

@pytest.mark.parametrize("name", CORPUS)
def test_corpus_values(name):
    fn, args, _ = CASES[name]
    each_thread_count(*pair(fn), args, name)


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_corpus_gradients(name):
    fn, args, diff = CASES[name]
    serial, parallel = pair(fn)
    each_thread_count(ac.value_and_grad(serial, argnums=diff),
                      ac.value_and_grad(parallel, argnums=diff), args, name)


def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@pytest.mark.parametrize("n", [2, 513, 4099, 100_003])
def test_rosenbrock_value_and_grad(n):
    x = np.random.default_rng(n).uniform(-1.0, 1.0, n)
    serial, parallel = pair(rosenbrock)
    each_thread_count(ac.value_and_grad(serial), ac.value_and_grad(parallel), lambda: (x,),
                      f"rosenbrock n={n}")


# -- random array programs -------------------------------------------------------------------

@settings(max_examples=60 if FULL else 8, **SETTINGS)
@given(program=programs())
def test_random_programs(tmp_path_factory, program):
    expr, shape, x_shape, y_shape, strided, seed = program
    module, source = _load(tmp_path_factory.mktemp("parallel"), expr, shape)

    def args():
        return _arguments(x_shape, y_shape, strided, seed)

    with np.errstate(all="ignore"):
        each_thread_count(*pair(module.program), args, source)
        serial, parallel = pair(module.loss)
        each_thread_count(ac.grad(serial, argnums=(0, 1, 2)),
                          ac.grad(parallel, argnums=(0, 1, 2)), args, source)


# -- pairwise sums: pieces of numpy's tree ---------------------------------------------------

def total(x):
    return np.sum(x)


def mean(x):
    return np.mean(x)


def expression_sum(x):
    return np.sum(x * x + 0.5)


def row_sums(x):
    return np.sum(x, axis=1)


LAYOUTS = {
    "contiguous": lambda x: x,
    "strided": lambda x: x[::3],
    "reversed": lambda x: x[::-1],
    "float32": lambda x: x.astype(np.float32),
    "matrix": lambda x: x[: x.size // 7 * 7].reshape(-1, 7),
    "transposed": lambda x: x[: x.size // 7 * 7].reshape(-1, 7).T,
}


@pytest.mark.parametrize("fn", [total, mean, expression_sum])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("n", [511, 1024, 4099, 70_001])
def test_pairwise_sums_are_numpys(fn, layout, n):
    x = LAYOUTS[layout](np.random.default_rng(n).standard_normal(n) * 1e3)
    want = fn(x)
    parallel = ac.adcompile(fn)
    for k in THREADS:
        pool.configure(threads=k)
        assert_same_bits(parallel(x), want, f"{fn.__name__} of {layout} x[{n}], {k} threads")


def max_rows(x):
    return np.max(x, axis=1)


def argmin_columns(x):
    return np.argmin(x, axis=0)


def prod_rows(x):
    return np.prod(x, axis=1, keepdims=True)


def mean_columns(x):
    return np.mean(x, axis=0)


def integer_row_sums(x):
    return np.sum((x * 100).astype(np.int64), axis=1)


@pytest.mark.parametrize("fn", [max_rows, argmin_columns, prod_rows, mean_columns, row_sums,
                                integer_row_sums])
@pytest.mark.parametrize("order", ["C", "F"])
def test_axis_reductions_are_numpys(fn, order):
    x = np.asarray(np.random.default_rng(3).uniform(0.5, 1.5, (1001, 37)), order=order)
    parallel = ac.adcompile(fn)
    for k in THREADS:
        pool.configure(threads=k)
        assert_same_bits(parallel(x), fn(x), f"{fn.__name__} of a {order} matrix, {k} threads")


def test_row_sums_of_long_rows():
    x = np.random.default_rng(0).standard_normal((3, 20_011))
    each_thread_count(*pair(row_sums), lambda: (x,), "row sums")
    assert_same_bits(ac.adcompile(row_sums)(x), np.sum(x, axis=1), "row sums vs numpy")


# -- matrix products: bands of rows on one-thread BLAS ----------------------------------------

def product(a, c):
    return a @ c


def product_loss(a, c):
    return np.sum(np.tanh(a @ c) ** 2)


def batched_product(a, c):
    return np.matmul(a, c)


def transposed_product(a, c):
    return a.T @ c.T


PRODUCTS = {  # shapes large enough to cut into bands (linalg.BAND_WORK), and one that is not
    "banded": (product, [(1000, 64), (64, 96)]),
    "uneven": (product, [(1037, 130), (130, 70)]),
    "one band": (product, [(20, 30), (30, 40)]),
    "transposed": (transposed_product, [(300, 900), (40, 300)]),
    "batched": (batched_product, [(3, 600, 64), (3, 64, 80)]),
}


def bands(m, k, n):
    """How many bands linalg.gemm_bands cuts an (m x k) @ (k x n) product into, by the rule
    architecture.md states: rows in multiples of BAND_ROWS, each at least BAND_WORK
    multiply-adds."""
    from adcompile.backends.llvm.linalg import BAND_ROWS, BAND_WORK

    rows = -(-BAND_WORK // (n * k))
    rows = -(-rows // BAND_ROWS) * BAND_ROWS
    return -(-m // rows)


def test_the_product_table_cuts_where_it_says():
    """The shapes above still reach the banded path (and "one band" does not), whatever
    BAND_WORK and BAND_ROWS become."""
    for name, (fn, shapes) in PRODUCTS.items():
        (*_, m, k), (*_, k2, n) = shapes if name != "transposed" else [s[::-1] for s in shapes]
        assert k == k2
        assert (bands(m, k, n) > 1) == (name != "one band"), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_are_the_same_on_every_thread_count(name, dtype):
    fn, shapes = PRODUCTS[name]
    rng = np.random.default_rng(7)
    values = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if name == "transposed":
        values = [np.ascontiguousarray(v.T).T for v in values]  # Fortran-ordered operands

    def args():
        return tuple(v.copy() for v in values)

    each_thread_count(*pair(fn), args, name)
    np.testing.assert_allclose(pair(fn)[1](*args()), fn(*args()),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)


def test_product_gradients_are_the_same_on_every_thread_count():
    rng = np.random.default_rng(8)
    a, c = rng.standard_normal((700, 64)), rng.standard_normal((64, 90)) / 8
    serial, parallel = pair(product_loss)
    each_thread_count(ac.value_and_grad(serial, argnums=(0, 1)),
                      ac.value_and_grad(parallel, argnums=(0, 1)),
                      lambda: (a.copy(), c.copy()), "product_loss")


def test_compiled_code_calls_a_private_one_thread_blas():
    """Compiled code's BLAS is a copy of scipy's OpenBLAS on one thread (blaslib); scipy's
    own copy keeps its thread count."""
    import ctypes

    from adcompile.backends.llvm import blaslib, capi

    path = blaslib.library()
    if path is None:
        pytest.skip("scipy is not built with its own OpenBLAS here")
    shared = ctypes.CDLL(path)
    before = shared.scipy_openblas_get_num_threads()
    used = capi.blas_symbols()["adc_blas_dgemm"]
    assert blaslib.threads() == 1
    assert used != ctypes.cast(shared.scipy_dgemm_, ctypes.c_void_p).value
    assert shared.scipy_openblas_get_num_threads() == before
    assert pair(product)[1](np.eye(300), np.eye(300)).tobytes() == np.eye(300).tobytes()


BLAS_CHILD = """
import ctypes, json, sys
import scipy.linalg.cython_blas
from adcompile.backends.llvm import blaslib
shared = ctypes.CDLL(blaslib.library())
before = shared.scipy_openblas_get_num_threads()
lib = blaslib._copy(blaslib.library())
mapped = {line.split(None, 5)[-1].strip() for line in open("/proc/self/maps")}
print(json.dumps({"threads": lib.scipy_openblas_get_num_threads(),
                  "shared": shared.scipy_openblas_get_num_threads() == before,
                  "copies": sorted(m for m in mapped if m.startswith(sys.argv[1])
                                   or "adcompile-openblas" in m)}))
"""


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "memory"])
def test_the_private_blas_comes_from_the_cache_or_memory(cached, tmp_path):
    """The private copy is mapped from a copy of scipy's file in the on-disk cache, made by
    the first process and reused by the next, or from memory when the cache is off; either
    way on one thread, scipy's copy untouched."""
    import json
    import subprocess
    import sys

    from adcompile.backends.llvm import blaslib

    if blaslib.library() is None and not _scipy_openblas():
        pytest.skip("scipy is not built with its own OpenBLAS here")
    env = dict(os.environ, ADCOMPILE_CACHE_DIR=str(tmp_path) if cached else "off",
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", BLAS_CHILD, str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    copies = list(tmp_path.glob("*/*.so"))
    for run in runs:
        assert run["threads"] == 1 and run["shared"]
        if cached:
            assert run["copies"] == [str(copies[0])]
        else:
            assert len(run["copies"]) == 1 and "adcompile-openblas" in run["copies"][0]
    assert len(copies) == (1 if cached else 0)


def _scipy_openblas():
    import scipy.linalg.cython_blas  # noqa: F401 (maps scipy's OpenBLAS)

    from adcompile.backends.llvm import blaslib

    return blaslib.library() is not None


def test_private_blas_can_be_turned_off(monkeypatch):
    from adcompile.backends.llvm import blaslib

    monkeypatch.setenv("ADCOMPILE_PRIVATE_BLAS", "0")
    assert blaslib.private({"adc_blas_dgemm": 1234}) == {"adc_blas_dgemm": 1234}


# -- errors inside pieces --------------------------------------------------------------------

def int_power(a, b):
    return a ** b


def power_in_place(a, b):
    a **= b
    return a


def test_error_inside_a_piece_is_the_serial_error():
    a = np.arange(1000, dtype=np.int64) % 7
    b = np.ones(1000, dtype=np.int64)
    b[[700, 950]] = -1
    serial, parallel = pair(int_power)
    each_thread_count(serial, parallel, lambda: (a, b), "a ** b")
    kind, message = outcome(parallel, (a, b))
    assert kind is ValueError and "negative integer powers" in message
    b[:] = 2  # the pool is not stuck after a failure
    assert_same_bits(parallel(a, b), a ** 2, "after the error")


def test_failing_store_into_an_argument_leaves_what_a_serial_run_leaves():
    b = np.full(1000, 2, dtype=np.int64)
    b[600] = -1
    serial, parallel = pair(power_in_place)
    for k in THREADS:
        pool.configure(threads=k)
        ours, theirs = np.arange(1000) % 5, np.arange(1000) % 5
        assert outcome(parallel, (ours, b))[0] is ValueError
        assert outcome(serial, (theirs, b))[0] is ValueError
        assert_same_bits(ours, theirs, f"the argument after the error, {k} threads")


# -- arguments whose rows overlap --------------------------------------------------------------

def add_into(a, v):
    a += v
    return a


def test_overlapping_rows_are_not_split():
    v = np.random.default_rng(1).standard_normal((400, 10))

    def args():
        buffer = np.linspace(0.0, 1.0, 500)
        return np.lib.stride_tricks.as_strided(buffer, (400, 10), (8, 8)), v

    each_thread_count(*pair(add_into), args, "a += v, rows of a overlapping")


# -- several callers ---------------------------------------------------------------------------

def test_python_threads_calling_at_once():
    serial, parallel = pair(rosenbrock)
    vg_serial, vg_parallel = ac.value_and_grad(serial), ac.value_and_grad(parallel)
    inputs = [np.random.default_rng(k).uniform(-1, 1, 50_000 + k) for k in range(6)]
    wanted = [vg_serial(x) for x in inputs]
    pool.configure(threads=3)
    failures = []

    def run(k):
        for _ in range(5):
            try:
                assert_same_bits(vg_parallel(inputs[k]), wanted[k], f"caller {k}")
            except AssertionError as e:
                failures.append(e)

    callers = [threading.Thread(target=run, args=(k,)) for k in range(len(inputs))]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not failures, failures[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_computes_alone_and_right():
    x = np.random.default_rng(5).uniform(-1, 1, 30_000)
    parallel = ac.value_and_grad(ac.adcompile(rosenbrock))
    pool.configure(threads=3)
    want = parallel(x)
    assert pool.started_workers() >= 1
    pid = os.fork()
    if pid == 0:  # the child: no workers until it needs them, then the same bits
        ok = pool.started_workers() == 0
        got = parallel(x)
        ok = ok and got[0] == want[0] and got[1].tobytes() == want[1].tobytes()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# -- options -----------------------------------------------------------------------------------

def twice(x):
    return 2.0 * x


def test_options():
    x = np.ones(10)
    assert "adc_parallel_for" not in ac.adcompile(twice, parallel=False).llvm_ir(x)
    assert "adc_parallel_for" in ac.adcompile(twice).llvm_ir(x)
    assert_same_bits(ac.adcompile(twice, parallel=2)(x), 2.0 * x, "parallel=2")
    for bad in (0, -1, 1.5, "yes"):
        with pytest.raises(ValueError, match="parallel must be"):
            ac.adcompile(twice, parallel=bad)
    saved = ac.get_num_threads()
    try:
        ac.set_num_threads(3)
        assert ac.get_num_threads() == 3
        with pytest.raises(ValueError, match="at least 1"):
            ac.set_num_threads(0)
    finally:
        ac.set_num_threads(saved)


def test_default_thread_count(monkeypatch):
    monkeypatch.setenv("ADCOMPILE_NUM_THREADS", "5")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert pool.default_threads() == 5
    monkeypatch.delenv("ADCOMPILE_NUM_THREADS")
    assert pool.default_threads() == 1  # what dask's workers set
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert pool.default_threads() == len(os.sched_getaffinity(0))


def test_pieces_that_call_libm_count_as_more_work():
    """A piece calling libm (a call, or an intrinsic LLVM makes one) counts LIBM_WORK
    elements of work per element, so an MLP's tanh of 16384 elements is split."""
    import llvmlite.ir as ir

    from adcompile.backends.llvm import parallel

    module = ir.Module()
    f64 = ir.DoubleType()
    callees = {"tanh": ir.Function(module, ir.FunctionType(f64, [f64]), "tanh"),
               "llvm.pow.f32": ir.Function(module, ir.FunctionType(ir.FloatType(), [
                   ir.FloatType()] * 2), "llvm.pow.f32"),
               "llvm.fabs.f64": ir.Function(module, ir.FunctionType(f64, [f64]), "llvm.fabs.f64"),
               "adc.buffer": ir.Function(module, ir.FunctionType(f64, [f64]), "adc.buffer")}
    expected = {"tanh": True, "llvm.pow.f32": True, "llvm.fabs.f64": False, "adc.buffer": False}
    for name, callee in callees.items():
        fn = ir.Function(module, ir.FunctionType(f64, [f64]), f"piece.{name}")
        b = ir.IRBuilder(fn.append_basic_block())
        args = [b.fptrunc(fn.args[0], ir.FloatType())] * 2 if "f32" in name else [fn.args[0]]
        b.ret(b.fpext(b.call(callee, args), f64) if "f32" in name else b.call(callee, args))
        assert parallel._calls_libm(fn) == expected[name], name
    assert parallel.LIBM_WORK > 1
