"""What the eval modules, run.py and tool.py share: the compile call, compile-time measurement,
GradBench's error measure, best-of-N timing and JSON encoding of outputs."""

import functools
import math
import os
import tempfile
import time

import numpy as np

# steady-state timings: the quick tier's code (native.Variant.tier_up) is compiled again with
# O3 after the first call, and timings wait for it (native.settle) after that call
os.environ.setdefault("ADCOMPILE_TIER_UP", "1")
import adcompile as ac  # noqa: E402
from adcompile.backends.llvm import native  # noqa: E402

# tool.py turns this off: a GradBench session compiles once with the user's cache and has no
# use for a cold compile per workload.
MEASURE_COMPILE = True
# the clock of best_seconds: wall-clock time, or (run.py --cpu-time) cpu_seconds, the
# process's CPU time, which other jobs on a shared machine disturb far less
CLOCK = time.perf_counter
# best_seconds times batches of calls lasting at least this many seconds, never single calls
# (see best_seconds)
BATCH = 0.02
# compile_seconds' warm seconds: the least of this many new compiled objects
WARM_TRIES = 3
# run.py --fastmath sets this while it prepares the second, fastmath=True set of adcompile
# figures; strict IEEE (False) is the default, the headline and what tool.py always runs
FASTMATH = False


def adcompile(fn):
    """`adcompile.adcompile(fn)` as the eval modules' Adcompile classes compile: with
    fastmath=True (LLVM may reorder float operations; subnormals flushed, FTZ/DAZ, as JAX's
    CPU code always runs) while FASTMATH is set."""
    return ac.adcompile(fn, fastmath=FASTMATH)


def _small(a, b):
    return np.sum(a @ b)


@functools.cache
def start_up_seconds():
    """Wall seconds of adcompile's start-up in this process, paid once by its first compile
    and measured once: LLVM's initialisation, the runtime library (compiled into an empty
    cache here, as a cold compile's) and scipy's BLAS bindings, with the compile of a small
    program using them. compile_seconds pays it first, so its cold seconds are the
    derivative's own; run.py prints it on its own line."""
    saved = os.environ.get("ADCOMPILE_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="adcompile-start-") as directory:
        os.environ["ADCOMPILE_CACHE_DIR"] = directory
        try:
            start = time.perf_counter()
            ac.adcompile(_small)(np.ones((2, 2)), np.ones((2, 2)))
            seconds = time.perf_counter() - start
            native.settle()  # (its tier-up, which would take a core from the next compile)
            return seconds
        finally:
            _restore("ADCOMPILE_CACHE_DIR", saved)


def _restore(name, value):
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def compile_seconds(build, args):
    """Compile seconds of a derivative, cold (empty on-disk cache) and warm (the cache the cold
    compile filled, in a new compiled object), and the warm callable.

    `build()` returns a fresh callable (e.g. `ac.grad(adcompile(f))`, with whatever scratch
    the tool prepares: untimed); a compile is the first
    call's time beyond that of the faster of two more calls, on the wall clock even under
    run.py --cpu-time: LLVM compiles the parts of a large module on all cores at once, so
    the wait is what the user sees (the process's CPU time adds the parts up; on a loaded
    machine the wall clock reads several times either). Two more calls, not one, because the difference of
    two calls of a long-running derivative is mostly the noise of either (results.md's warm
    0.32-0.45 s for ba10, ba12 and gmm d=64,k=100, whose derivatives take 0.17-0.32 s a
    call; lstm's one 0.25 s was more likely the collection of the cold compile's garbage,
    which native.release now mostly spares). The warm seconds are the least of WARM_TRIES
    such objects: a warm compile (loading and linking, 5-8 ms for ba14's Jacobian) is a
    small part of such a first call, whose own run varies by up to 0.1 s (ba14's call takes
    0.17 s; its warm seconds read 0.003-0.30 one object at a time). The code
    compiled does not depend on the workload's sizes (the IR has no sizes in it), so every
    size of an eval compiles the same modules. The cold seconds are those of the first call,
    whose code that runs once per call is compiled quickly; its O3 compile (the tier-up,
    native.Variant.tier_up) runs after that call, in a thread of its own, and is waited for
    before the ordinary calls, out of the count. Without MEASURE_COMPILE only the ordinary
    first call is made and both seconds are None. The process's start-up is paid before,
    out of the count (start_up_seconds)."""
    if not MEASURE_COMPILE:
        derivative = build()
        derivative(*args)
        native.settle()
        return None, None, derivative
    start_up_seconds()
    seconds = []
    saved = os.environ.get("ADCOMPILE_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="adcompile-gradbench-") as directory:
        os.environ["ADCOMPILE_CACHE_DIR"] = directory
        try:
            for _ in range(1 + WARM_TRIES):
                derivative = build()
                first = _wall_seconds(derivative, args)
                native.settle()  # (a tier-up it started, before the ordinary calls)
                ordinary = min(_wall_seconds(derivative, args) for _ in range(2))
                seconds.append(max(first - ordinary, 0.0))
        finally:
            _restore("ADCOMPILE_CACHE_DIR", saved)
    return seconds[0], min(seconds[1:]), derivative


def _wall_seconds(fn, args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def best_seconds(fn, budget=1.0, least=3, most=1000):
    """The fastest time per call of fn() over batches of calls, after one warm-up call.

    A sample is a batch of back-to-back calls lasting at least BATCH seconds (one call when
    a call takes that long), divided by its number of calls: at least `least` batches (one
    when the warm-up alone took `budget`, none past 5 * `budget`: then the warm-up's time),
    then more while the batches so far took less than `budget` seconds (at most `most`).
    Every tool is timed this way. A batch, not a call, because a tool's work may run on
    threads other than the caller's (JAX's CPU client runs a computation on a worker thread
    and the caller waits): timed one call at a time, the fastest call is too often one
    whose worker time the clock missed (see cpu_seconds), and a clock read may cost tens of
    microseconds."""
    start = CLOCK()
    fn()
    warmup = CLOCK() - start
    native.settle()  # (see the imports)
    if warmup >= 5 * budget:
        return warmup  # a slow call: run.py has called it once already, to check it
    if warmup >= budget:
        least = 1
    best, spent, batches = warmup, 0.0, 0
    while batches < least or (spent + warmup < budget and batches < most):
        calls = max(1, math.ceil(BATCH / max(best, 1e-9)))
        start = CLOCK()
        for _ in range(calls):
            fn()
        seconds = CLOCK() - start
        best, spent, batches = min(best, seconds / calls), spent + seconds, batches + 1
    return best if batches else warmup


def cpu_seconds():
    """CPU seconds of this process's live threads, each read from its own thread clock.

    `time.process_time()` reads the process clock, which adds up the time each thread had
    when the kernel last accounted it: a thread that is running on another core at that
    moment (a JAX worker that has just handed its result over and not yet gone to sleep)
    is counted as of its last accounting, up to its whole computation short. A thread's own
    clock is brought up to date when read. Threads that ended are not counted (the tools'
    worker threads live as long as the process). Where there is no /proc (not Linux), the
    process clock."""
    if not os.path.isdir("/proc/self/task"):
        return time.process_time()
    total = 0.0
    for tid in os.listdir("/proc/self/task"):
        try:
            total += time.clock_gettime(_thread_clock(int(tid)))
        except OSError:  # the thread ended since the listing
            pass
    return total


def _thread_clock(tid):
    """Linux's clock id of thread `tid`'s CPU time (scheduler-precise): the bits of
    make_thread_cpuclock(tid, CPUCLOCK_SCHED) in the kernel's posix-timers.h."""
    return (~tid << 3) | 0b110


def spec_error(ours, ref):
    """The largest |a - e| / max(1, |a| + |e|) over corresponding numbers of two outputs
    (GradBench's validation measure, SPEC.md section 0). Structures must match as GradBench
    requires (same keys, same lengths; int and float are both numbers); a mismatch or a NaN
    gives inf, where GradBench would let a NaN pass."""
    if isinstance(ref, dict):
        if not isinstance(ours, dict) or set(ours) != set(ref):
            return math.inf
        return max((spec_error(ours[key], ref[key]) for key in ref), default=0.0)
    if isinstance(ref, (list, tuple)) and not _numeric(ref):
        if not isinstance(ours, (list, tuple)) or len(ours) != len(ref):
            return math.inf
        return max((spec_error(a, e) for a, e in zip(ours, ref)), default=0.0)
    try:
        a = np.asarray(ours, dtype=np.float64)
        e = np.asarray(ref, dtype=np.float64)
    except (TypeError, ValueError):
        return math.inf
    if a.shape != e.shape:
        return math.inf
    worst = float(np.max(np.abs(a - e) / np.maximum(1.0, np.abs(a) + np.abs(e)), initial=0.0))
    return math.inf if math.isnan(worst) else worst


def _numeric(items):
    """A list of numbers or of numeric arrays (compared as one array), not of structures."""
    return all(not isinstance(item, (dict, str)) for item in items) and _rectangular(items)


def _rectangular(items):
    try:
        np.asarray(items, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def to_json(value):
    """An output as plain JSON values: numpy arrays become lists, numpy scalars numbers."""
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@functools.cache
def njit(fn):
    """numba.njit(fn), compiled once per process (each size of an eval reuses it)."""
    import numba

    return numba.njit(fn)
