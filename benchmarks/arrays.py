"""Whole-array programs compiled by adcompile (LLVM backend) against JAX, numpy and
adcompile's own scalar loops, in one run (issue 13's measurements):

1. Vectorised Rosenbrock, np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
   n = 1e6 float64: adcompile value_and_grad against jax.jit(jax.value_and_grad) (target
   <= 0.6), against adcompile's value_and_grad of the same function written as a loop (target
   <= 1.2), and numpy's value and gradient by hand against adcompile (target >= 10).
   adcompile is shown on one thread too.
2. An MLP loss (784-256-10, tanh, softmax cross-entropy, batch 64, float64): adcompile grad
   against jax.jit(jax.grad) (target <= 1.2).
3. matmul of two 512 x 512 float64 matrices: adcompile against numpy.matmul (target <= 1.2),
   BLAS on one thread for both (measured in a child process started with
   OPENBLAS_NUM_THREADS=1 and ADCOMPILE_NUM_THREADS=1).
4. Cold compile time of the MLP gradient (fresh cache directory, in this process).

How each comparison is timed (`interleaved`), the same way for every tool:
- every callable is called WARMUP times first (compilation, JAX's tracing, the thread
  pools' start, the first page faults of results and caches are not timed);
- then ROUNDS rounds; in each round every tool of the comparison runs NUMBER calls in a row,
  timed with time.perf_counter (wall clock) and time.process_time (CPU time of every thread
  of this process, JAX's and adcompile's pool threads included), and the order of the tools
  is rotated from round to round, so neither a drift of the machine's load nor cache state
  left by the tool before favours one of them;
- a tool's time is the median over the rounds of its per-call time (wall and CPU); a ratio
  is the median over the rounds of the ratio of the two tools' times in that round (each
  round's two numbers were taken seconds apart, under the same load), and the spread of
  those per-round ratios (lowest - highest) is printed beside it;
- every tool may use the machine's cores as it does by default: JAX its thread pool,
  adcompile get_num_threads() threads (the cores this process may run on) for its array
  loops, numpy its own single thread for elementwise work; BLAS products are one thread in
  adcompile (its bits must not depend on the thread count) and XLA's own in JAX.
Wall-clock ratios mean something only on an idle machine: the load average is printed with
every comparison, and the CPU-time ratio beside the wall-clock one. Every gradient is checked
against JAX's (max relative error printed). Timings are printed, never asserted.

Run: python benchmarks/arrays.py [--quick] [--rounds N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# steady-state timings: the quick tier's code is compiled again with O3 after the first call
# (native.Variant.tier_up), and the timing waits for that (native.settle) after the warm-up
os.environ.setdefault("ADCOMPILE_TIER_UP", "1")
import adcompile  # noqa: E402
from adcompile.backends.llvm import native  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiled import Summary  # noqa: E402


# -- functions given to adcompile (module level: adcompile reads their source) ----------------

def rosenbrock(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_loop(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


def rosenbrock_numpy(x):
    """Value and gradient by hand, in numpy."""
    d = x[1:] - x[:-1] ** 2
    e = 1 - x[:-1]
    g = np.zeros_like(x)
    g[:-1] = -400 * d * x[:-1] - 2 * e
    g[1:] += 200 * d
    return np.sum(100 * d ** 2 + e ** 2), g


def mlp_loss(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    top = np.max(z, axis=1, keepdims=True)
    log_norm = top[:, 0] + np.log(np.sum(np.exp(z - top), axis=1))
    return np.mean(log_norm - np.sum(z * y, axis=1))


def matmul(a, b):
    return a @ b


def rel_err(got, ref):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    return float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))


def jax_functions():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def rosen(x):
        return jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    def mlp(w1, b1, w2, b2, x, y):
        h = jnp.tanh(x @ w1 + b1)
        z = h @ w2 + b2
        top = jnp.max(z, axis=1, keepdims=True)
        log_norm = top[:, 0] + jnp.log(jnp.sum(jnp.exp(z - top), axis=1))
        return jnp.mean(log_norm - jnp.sum(z * y, axis=1))

    return jax, jnp, jax.jit(jax.value_and_grad(rosen)), \
        jax.jit(jax.grad(mlp, argnums=(0, 1, 2, 3)))


WARMUP = 3


def interleaved(tools, rounds, number):
    """{name: (wall seconds per call, CPU seconds per call) for each round} of the callables
    `tools`, timed as the module's docstring says."""
    names = list(tools)
    for fn in tools.values():
        for _ in range(WARMUP):
            fn()
    native.settle()
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = tools[name]
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append(((time.perf_counter() - wall) / number,
                                (time.process_time() - cpu) / number))
    return times


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def per_call(times, name, cpu=False):
    """The median over the rounds of one tool's seconds per call (wall, or CPU)."""
    return median([t[cpu] for t in times[name]])


def ratio(times, a, b, cpu=False):
    """(median, lowest, highest) over the rounds of a's time / b's time in the same round."""
    each = [p[cpu] / q[cpu] for p, q in zip(times[a], times[b])]
    return median(each), min(each), max(each)


def ratio_note(times, a, b):
    wall, low, high = ratio(times, a, b)
    cpu = ratio(times, a, b, cpu=True)[0]
    return wall, f"{wall:.2f} (rounds {low:.2f}-{high:.2f}; CPU time {cpu:.2f})"


def time_note(times, name):
    return (f"{per_call(times, name) * 1e3:.3f} ms wall, "
            f"{per_call(times, name, cpu=True) * 1e3:.3f} ms CPU")


def one_thread(fn):
    """fn run with adcompile's array loops on one thread."""
    def run():
        threads = adcompile.get_num_threads()
        adcompile.set_num_threads(1)
        try:
            return fn()
        finally:
            adcompile.set_num_threads(threads)

    return run


def load_note():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"load average {load} on {cores} cores (wall-clock ratios need an idle machine)"


def bench_rosenbrock(summary, n, rounds, number, jax_parts):
    jax, jnp, jax_vg, _ = jax_parts
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    ours = adcompile.value_and_grad(rosenbrock)
    loop = adcompile.value_and_grad(rosenbrock_loop)
    xj = jnp.asarray(x)
    threads = adcompile.get_num_threads()
    value, grad = one_thread(lambda: ours(x))()
    parallel_value, parallel_grad = ours(x)
    same = bool(value == parallel_value and np.array_equal(grad, parallel_grad))
    ref_value, ref_grad = jax_vg(xj)
    loop_value, loop_grad = loop(x)
    times = interleaved({"ours": lambda: ours(x), "ours, 1 thread": one_thread(lambda: ours(x)),
                         "loop": lambda: loop(x),
                         "jax": lambda: jax_vg(xj)[1].block_until_ready(),
                         "numpy": lambda: rosenbrock_numpy(x)}, rounds, number)
    print(f"1. vectorised Rosenbrock value_and_grad, n = {n}; {load_note()}")
    print(f"   adcompile, {threads} threads: {time_note(times, 'ours')}; one thread: "
          f"{time_note(times, 'ours, 1 thread')}")
    print(f"   adcompile loop {time_note(times, 'loop')}; jax.jit {time_note(times, 'jax')}; "
          f"numpy by hand {time_note(times, 'numpy')}")
    print(f"   {threads} threads give the bits of one: {same}; max rel err vs JAX: value "
          f"{rel_err(value, ref_value):.1e}, gradient {rel_err(grad, ref_grad):.1e}; vs the "
          f"loop {rel_err(grad, loop_grad):.1e}")
    to_jax, jax_note = ratio_note(times, "ours", "jax")
    to_loop, loop_note = ratio_note(times, "ours", "loop")
    numpy_ratio = ratio(times, "numpy", "ours")
    print(f"   adcompile/jax {jax_note} "
          f"{summary.add('rosenbrock arrays adcompile/jax', to_jax, '.2f', '<=', 0.6)}")
    print(f"   adcompile/loop {loop_note} "
          f"{summary.add('rosenbrock arrays adcompile/loop', to_loop, '.2f', '<=', 1.2)}")
    print(f"   numpy/adcompile {numpy_ratio[0]:.1f} (rounds {numpy_ratio[1]:.1f}-"
          f"{numpy_ratio[2]:.1f}; CPU time {ratio(times, 'numpy', 'ours', cpu=True)[0]:.1f}) "
          f"{summary.add('rosenbrock arrays numpy/adcompile', numpy_ratio[0], '.1f', '>=', 10)}")


def bench_mlp(summary, rounds, number, jax_parts):
    jax, jnp, _, jax_grad = jax_parts
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((784, 256)) * 0.05, np.zeros(256),
            rng.standard_normal((256, 10)) * 0.05, np.zeros(10),
            rng.standard_normal((64, 784)), np.eye(10)[rng.integers(0, 10, 64)])
    with tempfile.TemporaryDirectory() as cache:
        saved = os.environ.get("ADCOMPILE_CACHE_DIR")
        os.environ["ADCOMPILE_CACHE_DIR"] = cache
        start = time.perf_counter()
        ours = adcompile.grad(adcompile.adcompile(mlp_loss), argnums=(0, 1, 2, 3))
        grads = ours(*args)
        cold = time.perf_counter() - start
        if saved is None:
            del os.environ["ADCOMPILE_CACHE_DIR"]
        else:
            os.environ["ADCOMPILE_CACHE_DIR"] = saved
    jargs = [jnp.asarray(a) for a in args]
    ref = jax_grad(*jargs)
    err = max(rel_err(g, r) for g, r in zip(grads, ref))
    times = interleaved({"ours": lambda: ours(*args), "jax": lambda: [
        g.block_until_ready() for g in jax_grad(*jargs)]}, rounds, number)
    to_jax, note = ratio_note(times, "ours", "jax")
    print(f"2. MLP 784-256-10 loss gradient, batch 64; {load_note()}")
    print(f"   adcompile {time_note(times, 'ours')}; jax.jit {time_note(times, 'jax')}; max "
          f"rel err vs JAX {err:.1e}")
    print(f"   adcompile/jax {note} "
          f"{summary.add('mlp grad adcompile/jax', to_jax, '.2f', '<=', 1.2)}")
    print(f"4. cold compile of the MLP gradient: {cold:.2f} s "
          f"{summary.add('mlp grad cold compile (s)', cold, '.2f', '<=', 1.0)}")


def matmul_times(rounds, number):
    """(adcompile/numpy per-round ratios' median, adcompile's and numpy's median ms per
    call, equal bit for bit) for a 512 x 512 product, in this process."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    ours = adcompile.adcompile(matmul)
    same = bool(np.array_equal(ours(a, b), a @ b))
    times = interleaved({"ours": lambda: ours(a, b), "numpy": lambda: a @ b}, rounds, number)
    return (list(ratio(times, "ours", "numpy")), per_call(times, "ours") * 1e3,
            per_call(times, "numpy") * 1e3, same)


def bench_matmul(summary, rounds, number):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", ADCOMPILE_NUM_THREADS="1")
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--matmul",
                            str(rounds), str(number)], env=env, capture_output=True,
                           text=True, check=True)
    (value, low, high), t_ours, t_numpy, same = json.loads(child.stdout.strip().splitlines()[-1])
    print(f"3. matmul 512 x 512 float64, BLAS on one thread; {load_note()}")
    print(f"   adcompile {t_ours:.3f} ms, numpy {t_numpy:.3f} ms, equal to numpy bit for bit: "
          f"{same}; adcompile/numpy {value:.2f} (rounds {low:.2f}-{high:.2f}) "
          f"{summary.add('matmul 512 adcompile/numpy', value, '.2f', '<=', 1.2)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--rounds", type=int, help="rounds of every comparison (default 15, "
                        "5 with --quick)")
    parser.add_argument("--matmul", type=int, nargs=2, metavar=("ROUNDS", "NUMBER"),
                        help=argparse.SUPPRESS)  # the child process of measurement 3
    args = parser.parse_args()
    if args.matmul:
        print(json.dumps(matmul_times(*args.matmul)))
        return
    n, rounds = (100_000, 5) if args.quick else (1_000_000, 15)
    rounds = args.rounds or rounds
    jax_parts = jax_functions()
    summary = Summary()
    bench_rosenbrock(summary, n, rounds, 5, jax_parts)
    bench_mlp(summary, rounds, 10, jax_parts)
    bench_matmul(summary, rounds, 5)
    summary.print()


if __name__ == "__main__":
    main()
