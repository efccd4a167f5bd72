"""Whole-array programs compiled by adcompile (LLVM backend) against JAX, numpy and
adcompile's own scalar loops, in one run (issue 13's measurements):

1. Vectorised Rosenbrock, np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2),
   n = 1e6 float64: adcompile value_and_grad against jax.jit(jax.value_and_grad) (target
   <= 0.6: JAX spreads its work over the machine's cores, and so does adcompile: one thread
   and adcompile.get_num_threads() threads are both shown, wall-clock and CPU time, with the
   load average, since wall-clock ratios mean something only on an idle machine), against
   adcompile's value_and_grad of the same function written as a loop (target <= 1.2), and
   numpy's value and gradient by hand against adcompile (target >= 10).
2. An MLP loss (784-256-10, tanh, softmax cross-entropy, batch 64, float64): adcompile grad
   against jax.jit(jax.grad) (target <= 1.2).
3. matmul of two 512 x 512 float64 matrices: adcompile against numpy.matmul (target <= 1.2),
   BLAS on one thread for both (measured in a child process started with
   OPENBLAS_NUM_THREADS=1; the other measurements let BLAS use every core, as JAX does).
4. Cold compile time of the MLP gradient (fresh cache directory, in this process).

Every gradient is checked against JAX's (max relative error printed). Timings are best-of-N
and never asserted.

Run: python benchmarks/arrays.py [--quick]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import adcompile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiled import Summary, best_time  # noqa: E402


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


def wall_and_cpu(fn, repeat):
    """(best wall-clock seconds of one call, CPU seconds per call of every thread of this
    process, averaged over the same calls): CPU time is what a busy machine cannot hide."""
    fn()
    best = float("inf")
    cpu = time.process_time()
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best, (time.process_time() - cpu) / repeat


def load_note():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return f"load average {load} on {cores} cores (wall-clock ratios need an idle machine)"


def bench_rosenbrock(summary, n, repeat, jax_parts):
    jax, jnp, jax_vg, _ = jax_parts
    x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    ours = adcompile.value_and_grad(rosenbrock)
    loop = adcompile.value_and_grad(rosenbrock_loop)
    xj = jnp.asarray(x)
    threads = adcompile.get_num_threads()
    adcompile.set_num_threads(1)
    value, grad = ours(x)
    adcompile.set_num_threads(threads)
    parallel_value, parallel_grad = ours(x)
    same = bool(value == parallel_value and np.array_equal(grad, parallel_grad))
    ref_value, ref_grad = jax_vg(xj)
    loop_value, loop_grad = loop(x)
    times = {}
    for k in sorted({1, threads}):
        adcompile.set_num_threads(k)
        times[k] = wall_and_cpu(lambda: ours(x), repeat)
    adcompile.set_num_threads(threads)
    t_ours, cpu_ours = times[threads]
    t_loop, cpu_loop = wall_and_cpu(lambda: loop(x), repeat)
    t_jax, cpu_jax = wall_and_cpu(lambda: jax_vg(xj)[1].block_until_ready(), repeat)
    t_numpy = best_time(lambda: rosenbrock_numpy(x), repeat)
    print(f"1. vectorised Rosenbrock value_and_grad, n = {n}; {load_note()}")
    for k, (wall, cpu) in times.items():
        print(f"   adcompile, {k} thread{'s' if k > 1 else ''}: {wall * 1e3:.3f} ms wall, "
              f"{cpu * 1e3:.3f} ms CPU")
    print(f"   adcompile loop {t_loop * 1e3:.3f} ms wall ({cpu_loop * 1e3:.3f} CPU), jax.jit "
          f"{t_jax * 1e3:.3f} ms wall ({cpu_jax * 1e3:.3f} CPU), numpy by hand "
          f"{t_numpy * 1e3:.3f} ms")
    print(f"   {threads} threads give the bits of one: {same}; max rel err vs JAX: value "
          f"{rel_err(value, ref_value):.1e}, gradient {rel_err(grad, ref_grad):.1e}; vs the "
          f"loop {rel_err(grad, loop_grad):.1e}")
    print(f"   adcompile/jax {t_ours / t_jax:.2f} "
          f"{summary.add('rosenbrock arrays adcompile/jax', t_ours / t_jax, '.2f', '<=', 0.6)}"
          f" (CPU time {cpu_ours / cpu_jax:.2f}), adcompile/loop {t_ours / t_loop:.2f} "
          f"{summary.add('rosenbrock arrays adcompile/loop', t_ours / t_loop, '.2f', '<=', 1.2)}"
          f", numpy/adcompile {t_numpy / t_ours:.1f} "
          f"{summary.add('rosenbrock arrays numpy/adcompile', t_numpy / t_ours, '.1f', '>=', 10)}")


def bench_mlp(summary, repeat, jax_parts):
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
    t_ours = best_time(lambda: ours(*args), repeat)
    t_jax = best_time(lambda: [g.block_until_ready() for g in jax_grad(*jargs)], repeat)
    print("2. MLP 784-256-10 loss gradient, batch 64")
    print(f"   adcompile {t_ours * 1e3:.3f} ms, jax.jit {t_jax * 1e3:.3f} ms, max rel err vs JAX "
          f"{err:.1e}; adcompile/jax {t_ours / t_jax:.2f} "
          f"{summary.add('mlp grad adcompile/jax', t_ours / t_jax, '.2f', '<=', 1.2)}")
    print(f"4. cold compile of the MLP gradient: {cold:.2f} s "
          f"{summary.add('mlp grad cold compile (s)', cold, '.2f', '<=', 1.0)}")


def matmul_times(repeat):
    """(adcompile, numpy, equal bit for bit) for a 512 x 512 product, in this process."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    ours = adcompile.adcompile(matmul)
    same = bool(np.array_equal(ours(a, b), a @ b))
    return best_time(lambda: ours(a, b), repeat), best_time(lambda: a @ b, repeat), same


def bench_matmul(summary, repeat):
    # one thread on both sides (read when numpy, scipy and adcompile's pool load): adcompile's
    # BLAS is always one thread, but its pool may run a large product's bands on several
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", ADCOMPILE_NUM_THREADS="1")
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--matmul",
                            str(repeat)], env=env, capture_output=True, text=True, check=True)
    t_ours, t_numpy, same = json.loads(child.stdout.strip().splitlines()[-1])
    print("3. matmul 512 x 512 float64, BLAS on one thread")
    print(f"   adcompile {t_ours * 1e3:.3f} ms, numpy {t_numpy * 1e3:.3f} ms, equal to numpy bit "
          f"for bit: {same}; adcompile/numpy {t_ours / t_numpy:.2f} "
          f"{summary.add('matmul 512 adcompile/numpy', t_ours / t_numpy, '.2f', '<=', 1.2)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--matmul", type=int, metavar="REPEAT",
                        help=argparse.SUPPRESS)  # the child process of measurement 3
    args = parser.parse_args()
    if args.matmul:
        print(json.dumps(matmul_times(args.matmul)))
        return
    n, repeat = (100_000, 5) if args.quick else (1_000_000, 30)
    jax_parts = jax_functions()
    summary = Summary()
    bench_rosenbrock(summary, n, repeat, jax_parts)
    bench_mlp(summary, repeat, jax_parts)
    bench_matmul(summary, repeat)
    summary.print()


if __name__ == "__main__":
    main()
