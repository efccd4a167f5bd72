"""The compiler (LLVM backend) against numba, JAX, PyTorch and numpy, in one run.

Four measurements, each printed with its ratio and target, then a summary table:

1. Rosenbrock written as a plain loop, value + gradient, n = 1e6 float64: adcompile
   value_and_grad vs a hand-written numba @njit loop (target adcompile/numba <= 1.2) vs
   jax.jit(jax.grad) of the same loop as lax.fori_loop (target jax/adcompile >= 20; also
   jit(value_and_grad)), each with strict IEEE arithmetic (the default) and with fastmath=True
   (adcompile and numba; reductions may be reordered), with PyTorch eager and numpy on the
   vectorised form for reference. All gradients are checked against numba's (max relative
   error, target <= 1e-9).
2. Gradient cost / primal cost of six corpus-style functions (loops, branches, arrays, nested
   loops, a recurrence, a stencil), adcompile grad and value_and_grad vs the adcompile primal.
   Target <= 3.
3. Per-call overhead of a compiled dot product on two 8-element float64 arrays, against numba,
   an empty Python function and np.dot. Target adcompile <= 0.5 us.
4. Compile time of value + gradient of a 30-line function (thirty_lines from compile_time.py),
   from value_and_grad() to the first result, in a fresh process: cold on-disk cache (target
   <= 150 ms) and warm cache (target <= 15 ms). Median of 3.

Timings are never asserted, only printed. Everything runs single-threaded (torch is set to
one thread; the loops of adcompile, numba and JAX are sequential anyway).

Run: python benchmarks/compiled.py [--quick]
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

import adcompile

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH_DIR)
from compile_time import thirty_lines  # noqa: E402  (the 30-line function, shared)

# Only numpy and adcompile are imported at module level: measurement 4 imports this module in
# a fresh process, and numba / JAX / torch are imported where they are used.


# -- functions given to adcompile (module level: adcompile reads their source) ----------------

def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def dot(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def piecewise(x):
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v < -1.0:
            s += -v * v
        elif v < 1.0:
            s += v
        else:
            s += math.sqrt(v)
    return s


def matvec_sq(a, x):
    n, m = a.shape
    y = np.zeros(n)
    for i in range(n):
        t = 0.0
        for j in range(m):
            t += a[i, j] * x[j]
        y[i] = t
    s = 0.0
    for i in range(n):
        s += y[i] ** 2
    return s


def recurrence(x):
    y = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        y = 0.9 * y + 0.1 * x[i]
        s += y * y
    return s


def stencil(x):
    s = 0.0
    for i in range(1, x.shape[0] - 1):
        s += (x[i - 1] - 2.0 * x[i] + x[i + 1]) ** 2
    return s


def thirty_lines_loss(x, y, n):
    """thirty_lines returns a tuple; value_and_grad needs a scalar (the call is inlined)."""
    total, best, spread = thirty_lines(x, y, n)
    return total + best + spread


# -- hand-written references ------------------------------------------------------------------

def rosenbrock_vg_loop(x):
    """Value and gradient of rosenbrock by hand, accumulate form (compiled with numba)."""
    n = x.shape[0]
    g = np.zeros(n)
    s = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        s += 100.0 * a * a + b * b
        g[i] += -400.0 * a * x[i] - 2.0 * b
        g[i + 1] += 200.0 * a
    return s, g


def rosenbrock_vg_numpy(x):
    """Vectorised value and hand-written vectorised gradient."""
    a = x[1:] - x[:-1] ** 2
    b = 1.0 - x[:-1]
    value = np.sum(100.0 * a * a + b * b)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * a * x[:-1] - 2.0 * b
    g[1:] += 200.0 * a
    return value, g


def rosenbrock_jax(x):
    """The same loop for JAX: lax.fori_loop with a static trip count (lowered to a scan)."""
    import jax

    def body(i, s):
        return s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2

    return jax.lax.fori_loop(0, x.shape[0] - 1, body, 0.0)


def empty(x, y):
    pass


# -- timing helpers ---------------------------------------------------------------------------

def best_time(fn, repeat, warmup=1):
    """Best of `repeat` single calls, in seconds, after `warmup` calls (the first compiles)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_times(fns, repeat):
    """best_time for several functions, interleaved: each round calls every function once, so
    a transient slowdown of the machine does not fall on one contender only."""
    for fn in fns.values():
        fn()
    times = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name] = min(times[name], time.perf_counter() - t0)
    return times


def per_call(fn, args, number, repeat=5):
    """Seconds per call of fn(*args): timeit over `number` calls, best of `repeat`."""
    fn(*args)
    timer = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
    return min(timer.repeat(repeat=repeat, number=number)) / number


def rel_err(got, ref):
    """Max absolute difference relative to the largest reference entry (inf-norm relative)."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


class Summary:
    """Rows of (measurement, value, target, PASS/MISS) for the final table."""

    def __init__(self):
        self.rows = []

    def add(self, name, value, fmt, op, target):
        ok = value <= target if op == "<=" else value >= target
        self.rows.append((name, format(value, fmt), f"{op} {format(target, fmt)}",
                          "PASS" if ok else "MISS"))
        return "PASS" if ok else "MISS"

    def print(self):
        widths = [max(len(r[k]) for r in self.rows + [self.header]) for k in range(4)]
        print()
        print("Summary")
        for row in [self.header] + self.rows:
            print("  " + "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                                   for k, (c, w) in enumerate(zip(row, widths))))

    header = ("measurement", "value", "target", "result")


# -- 1. Rosenbrock: adcompile vs numba vs JAX (+ torch, numpy) --------------------------------

def bench_rosenbrock(summary, n, repeat, jax_repeat):
    import jax
    import torch
    from numba import njit

    jax.config.update("jax_enable_x64", True)
    torch.set_num_threads(1)

    x = np.random.default_rng(0).uniform(-1.5, 1.5, n)

    ours = adcompile.value_and_grad(rosenbrock)
    ours_fast = adcompile.value_and_grad(adcompile.adcompile(rosenbrock, fastmath=True))
    numba_vg = njit(rosenbrock_vg_loop)
    numba_fast = njit(fastmath=True)(rosenbrock_vg_loop)
    jax_grad = jax.jit(jax.grad(rosenbrock_jax))
    jax_vg = jax.jit(jax.value_and_grad(rosenbrock_jax))
    x_jax = jax.device_put(x)  # on the device once, outside the timed calls
    x_torch = torch.tensor(x)

    def jax_grad_step():
        g = jax_grad(x_jax)
        g.block_until_ready()
        return g

    def jax_step():
        value, g = jax_vg(x_jax)
        g.block_until_ready()
        return value, g

    def torch_step():
        xt = x_torch.detach().requires_grad_()
        loss = (100.0 * (xt[1:] - xt[:-1] ** 2) ** 2 + (1.0 - xt[:-1]) ** 2).sum()
        loss.backward()
        return loss.detach(), xt.grad

    # Correctness first (these calls also warm up / compile everything).
    v_ref, g_ref = numba_vg(x)
    results = {
        "adcompile": ours(x),
        "adcompile fast": ours_fast(x),
        "numba fast": numba_fast(x),
        "jax grad": (v_ref, jax_grad_step()),  # grad gives no value: only its gradient counts
        "jax": jax_step(),
        "pytorch": torch_step(),
        "numpy": rosenbrock_vg_numpy(x),
    }
    errors = {}
    for name, (v, g) in results.items():
        errors[name] = max(rel_err(float(v), v_ref), rel_err(np.asarray(g), g_ref))

    times = best_times({"adcompile": lambda: ours(x), "numba": lambda: numba_vg(x),
                        "adcompile fast": lambda: ours_fast(x),
                        "numba fast": lambda: numba_fast(x)}, repeat)
    # tens of ms a call: fewer repeats, interleaved
    times.update(best_times({"jax grad": jax_grad_step, "jax": jax_step}, jax_repeat))
    times.update(best_times({"pytorch": torch_step,
                             "numpy": lambda: rosenbrock_vg_numpy(x)}, repeat))
    notes = {"adcompile": "value_and_grad of the loop",
             "numba": "hand-written loop, @njit",
             "adcompile fast": "the same, fastmath=True",
             "numba fast": "the same, @njit(fastmath=True)",
             "jax grad": "jit(grad(fori_loop))",
             "jax": "jit(value_and_grad(fori_loop))",
             "pytorch": "eager, vectorised",
             "numpy": "vectorised, hand-written gradient"}

    print(f"1. Rosenbrock loop, value + gradient, n = {n:,} float64 (best of {repeat}; "
          f"jax best of {jax_repeat})")
    for name, t in times.items():
        err = "(reference)" if name == "numba" else f"max rel err vs numba {errors[name]:.1e}"
        print(f"  {name:15s} {t * 1e3:9.2f} ms   {notes[name]:34s} {err}")
    r_numba = times["adcompile"] / times["numba"]
    r_jax = times["jax grad"] / times["adcompile"]
    r_jax_fast = times["jax grad"] / times["adcompile fast"]
    r_numba_fast = times["adcompile fast"] / times["numba fast"]
    worst = max(errors.values())
    print(f"  ratio adcompile/numba = {r_numba:.2f}  (target <= 1.20)  "
          f"{summary.add('rosenbrock adcompile/numba', r_numba, '.2f', '<=', 1.2)}")
    print(f"  ratio jax grad/adcompile = {r_jax:.1f}  (target >= 20; strict IEEE, the "
          f"default)  {summary.add('rosenbrock jax/adcompile', r_jax, '.1f', '>=', 20.0)}")
    print(f"  ratio jax grad/adcompile fastmath = {r_jax_fast:.1f}  (target >= 20)  "
          f"{summary.add('rosenbrock jax/adcompile fastmath', r_jax_fast, '.1f', '>=', 20.0)}")
    print(f"  ratio adcompile/numba, both fastmath = {r_numba_fast:.2f}  (for reference)")
    print(f"  max rel gradient/value error vs numba = {worst:.1e}  (target <= 1e-9)  "
          f"{summary.add('rosenbrock max rel err vs numba', worst, '.1e', '<=', 1e-9)}")
    print()


# -- 2. Gradient cost / primal cost -----------------------------------------------------------

def bench_ratios(summary, n, m, repeat):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.5, 1.5, n)
    y = rng.standard_normal(n)
    a = rng.standard_normal((m, m))
    xm = rng.standard_normal(m)
    cases = [  # (name, function, args, argnums)
        ("rosenbrock", rosenbrock, (x,), 0),
        ("dot", dot, (x, y), (0, 1)),
        ("piecewise (if/elif/else)", piecewise, (1.5 * y,), 0),
        ("matvec_sq (nested loops)", matvec_sq, (a, xm), (0, 1)),
        ("recurrence", recurrence, (x,), 0),
        ("stencil", stencil, (x,), 0),
    ]
    print(f"2. Gradient cost / primal cost, adcompile (n = {n:,}, matvec {m}x{m}; "
          f"best of {repeat})")
    print(f"  {'function':26s} {'primal':>9s} {'grad':>9s} {'v&g':>9s} "
          f"{'grad/primal':>12s} {'v&g/primal':>11s}")
    for name, fn, args, argnums in cases:
        primal = adcompile.adcompile(fn)
        grad = adcompile.grad(fn, argnums=argnums)
        vg = adcompile.value_and_grad(fn, argnums=argnums)
        times = best_times({"primal": lambda: primal(*args), "grad": lambda: grad(*args),
                            "vg": lambda: vg(*args)}, repeat)
        t_p, t_g, t_vg = times["primal"], times["grad"], times["vg"]
        # grad and value_and_grad are two separate programs: they must agree.
        g1 = grad(*args)
        v2, g2 = vg(*args)
        g1 = g1 if isinstance(g1, tuple) else (g1,)
        g2 = g2 if isinstance(g2, tuple) else (g2,)
        mismatch = max(rel_err(p, q) for p, q in zip(g1, g2))
        mismatch = max(mismatch, rel_err(v2, primal(*args)))
        flag = "" if mismatch <= 1e-12 else f"  grad vs value_and_grad differ: {mismatch:.1e}"
        r_g, r_vg = t_g / t_p, t_vg / t_p
        result = summary.add(f"{name.split()[0]} grad/primal", r_g, ".2f", "<=", 3.0)
        summary.add(f"{name.split()[0]} value_and_grad/primal", r_vg, ".2f", "<=", 3.0)
        small = "  (primal < 0.5 ms)" if t_p < 0.5e-3 else ""
        print(f"  {name:26s} {t_p * 1e3:6.2f} ms {t_g * 1e3:6.2f} ms {t_vg * 1e3:6.2f} ms "
              f"{r_g:12.2f} {r_vg:11.2f}  {result}{small}{flag}")
    print("  target: grad/primal <= 3")
    print()


# -- 3. Per-call overhead ---------------------------------------------------------------------

def bench_overhead(summary, number):
    from numba import njit

    x, y = np.random.default_rng(2).standard_normal((2, 8))
    compiled = adcompile.adcompile(dot)
    numba_dot = njit(dot)
    if rel_err(compiled(x, y), numba_dot(x, y)) > 1e-12:
        print(f"  dot: adcompile {compiled(x, y)!r} != numba {numba_dot(x, y)!r}")
    times = {
        "adcompile": per_call(compiled, (x, y), number),
        "numba @njit": per_call(numba_dot, (x, y), number),
        "empty Python function": per_call(empty, (x, y), number),
        "np.dot": per_call(np.dot, (x, y), number),
    }
    print(f"3. Per-call overhead, dot product of two 8-element float64 arrays "
          f"({number:,} calls, best of 5)")
    for name, t in times.items():
        print(f"  {name:22s} {t * 1e6:6.3f} us/call")
    t = times["adcompile"] * 1e6
    print(f"  adcompile = {t:.3f} us  (target <= 0.5 us)  "
          f"{summary.add('per-call overhead adcompile (us)', t, '.3f', '<=', 0.5)}")
    print()


# -- 4. Compile time in a fresh process -------------------------------------------------------

# Imports (numpy, llvmlite.binding, adcompile, this module) happen before the timer; the timer
# covers value_and_grad() creation (reading the source) through compilation to the first result.
CHILD = """
import sys, time
sys.path.insert(0, {bench_dir!r})
import numpy as np
import llvmlite.binding
import adcompile
from compiled import thirty_lines_loss
x, y = np.random.default_rng(0).standard_normal((2, 100))
t0 = time.perf_counter()
vg = adcompile.value_and_grad(thirty_lines_loss, argnums=(0, 1))
value, grads = vg(x, y, 100)
t1 = time.perf_counter()
print(t1 - t0, repr(value))
"""


def compile_once(cache_dir):
    # as on a user's machine, Python may cache bytecode (a first, untimed run writes it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["ADCOMPILE_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", CHILD.format(bench_dir=BENCH_DIR)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), out[1]


def bench_compile(summary, runs):
    cold, warm, values = [], [], set()
    with tempfile.TemporaryDirectory(prefix="adcompile-bench-") as cache_dir:
        compile_once(cache_dir)  # untimed: imports compile to bytecode once
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="adcompile-bench-") as cache_dir:
            t, v = compile_once(cache_dir)  # fresh, empty cache: everything compiles
            cold.append(t)
            values.add(v)
            t, v = compile_once(cache_dir)  # new process, same directory: object from cache
            warm.append(t)
            values.add(v)
    t_cold, t_warm = statistics.median(cold) * 1e3, statistics.median(warm) * 1e3
    print(f"4. Compile time, value_and_grad of thirty_lines (30 lines) to first result, "
          f"fresh process (median of {runs})")
    print(f"  cold cache {t_cold:7.1f} ms   runs: " + ", ".join(f"{t * 1e3:.1f}" for t in cold))
    print(f"  warm cache {t_warm:7.1f} ms   runs: " + ", ".join(f"{t * 1e3:.1f}" for t in warm))
    print(f"  cold = {t_cold:.1f} ms  (target <= 150 ms)  "
          f"{summary.add('compile cold cache (ms)', t_cold, '.1f', '<=', 150.0)}")
    print(f"  warm = {t_warm:.1f} ms  (target <= 15 ms)  "
          f"{summary.add('compile warm cache (ms)', t_warm, '.1f', '<=', 15.0)}")
    if len(values) != 1:
        print(f"  value differs between runs: {sorted(values)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes and fewer repeats (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        n, m, repeat, jax_repeat, calls, runs = 100_000, 300, 3, 2, 20_000, 1
    else:
        n, m, repeat, jax_repeat, calls, runs = 1_000_000, 1000, 20, 7, 200_000, 3

    summary = Summary()
    bench_rosenbrock(summary, n, repeat, jax_repeat)
    bench_ratios(summary, n, m, repeat)
    bench_overhead(summary, calls)
    bench_compile(summary, runs)
    summary.print()


if __name__ == "__main__":
    main()
