"""Spreading compiled gradients over cores: Dask worker processes, threads, worker start-up.

1. Throughput of the sharded GMM value_and_grad (examples/dask_gmm.py) on a LocalCluster of
   2 worker processes against the same shards in 1 process (a loop in this process), and on
   1 worker process (the cluster's own cost); best of --repeat, in points per second.
2. Scheduling overhead per task: a task on a 10-point shard (the work is negligible), per
   task, minus the compute time of the same call in this process.
3. Threads: the same shards over 2 threads calling one compiled function (the GIL is
   released in compiled code) against 1 thread.
4. Worker start-up with a warm shared cache: a new interpreter unpickles each compiled
   function and makes its first call; milliseconds per function, compiling disabled there
   (it would raise); importing adcompile and the functions' modules, and the once-per-process
   set-up (LLVM's JIT, the C-API probe, the compiler's source digest), timed apart.

Results are noisy where the machine is shared: the cores' load is printed alongside.
Run: python benchmarks/distributed.py [--points 4000000] [--shards 16] [--repeat 3]
Needs the dask extra: pip install -e '.[dask]'.
"""

import argparse
import logging
import os
import pickle
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# this file's name would hide the `distributed` package from `dask.distributed`
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)
import dask_gmm  # noqa: E402
import gmm  # noqa: E402

import adcompile as ac  # noqa: E402
from tests.compiler import pickled_functions as pf  # noqa: E402


def best(repeat, run):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def cpu_per_run(repeat, run, client=None):
    """CPU seconds per run: (this process, the workers' processes together)."""
    def workers():
        return sum(client.run(time.process_time).values()) if client is not None else 0.0

    here, there = time.process_time(), workers()
    for _ in range(repeat):
        run()
    return (time.process_time() - here) / repeat, (workers() - there) / repeat


def sizes(points, shards):
    return [points // shards + (i < points % shards) for i in range(shards)]


def one_process(params, data):
    return dask_gmm.add_up([gmm.nll_and_grad(*params, x) for x in data])


def threads(params, data, n):
    with ThreadPoolExecutor(n) as pool:
        return dask_gmm.add_up(list(pool.map(lambda x: gmm.nll_and_grad(*params, x), data)))


def cluster_seconds(workers, params, points, shards, repeat):
    """(seconds per sharded gradient, seconds per scheduled tiny task, CPU seconds per
    gradient here and in the workers) on `workers` processes."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        data = dask_gmm.make_shards(client, points, shards)
        def run():
            return dask_gmm.sharded_value_and_grad(client, params, data)

        run()  # workers load the code
        seconds = best(repeat, run)
        cpu = cpu_per_run(repeat, run, client)
        tiny = dask_gmm.make_shards(client, 10 * 200, 200)
        dask_gmm.sharded_value_and_grad(client, params, tiny)
        per_task = best(repeat, lambda: dask_gmm.sharded_value_and_grad(
            client, params, tiny)) / len(tiny)
    return seconds, per_task, cpu


STARTUP = r"""
import pickle, sys, time
clocks = lambda: (time.perf_counter(), time.process_time())
since = lambda t: " ".join(f"{(b - a) * 1e3:.1f}" for a, b in zip(t, clocks()))
t = clocks()
import adcompile
print("import adcompile", since(t))
sys.path[:0] = PATHS
t = clocks()
import gmm, tests.compiler.pickled_functions
print("import the functions' modules", since(t))
t = clocks()
from adcompile import api, cache
from adcompile.backends.llvm import capi, jit
jit.target_machine(), capi.symbols(), capi.blas_symbols(), cache.compiler_digest()
print("process set-up (LLVM JIT, C-API probe, BLAS from scipy, compiler digest)", since(t))
def refuse(*a, **k):
    raise AssertionError("compiled in a worker whose cache is warm")
api.lower_function = api.jvp_function = api.vjp_function = jit.emit_object = refuse
cases = pickle.loads(CASES)
for name, payload, args in cases:
    t = clocks()
    f = pickle.loads(payload)
    f(*args)
    print(name, since(t))
"""


def startup_ms(params):
    """ms per compiled function for a new interpreter's first call, warm cache."""
    w, x, y = np.ones(3), np.ones((4, 3)), np.ones(4)
    objects = [("gmm_nll", gmm.gmm_nll, (*params, np.ones(5))),
               ("value_and_grad(gmm_nll)", gmm.nll_and_grad, (*params, np.ones(5))),
               ("least_squares", pf.least_squares, (w, x, y)),
               ("grad(least_squares)", ac.grad(pf.least_squares), (w, x, y)),
               ("grad(rosenbrock loop)", ac.grad(pf.rosenbrock), (np.ones(4),))]
    for _, f, args in objects:
        f(*args)  # fills the cache
    cases = pickle.dumps([(name, pickle.dumps(f), args) for name, f, args in objects])
    paths = [ROOT, os.path.join(ROOT, "examples")]
    code = STARTUP.replace("PATHS", repr(paths)).replace("CASES", repr(cases))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=dict(os.environ))
    return [line.rsplit(" ", 2) for line in done.stdout.splitlines()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=4_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("ADCOMPILE_CACHE_DIR", tempfile.mkdtemp(prefix="adcompile-bench-"))
    print(f"cores: {os.cpu_count()}, load average now: {os.getloadavg()[0]:.1f} "
          f"(other processes share these cores: ratios are noisy)")
    params = list(gmm.initial_parameters())
    data = [gmm.shard(i, n) for i, n in enumerate(sizes(args.points, args.shards))]
    expected = one_process(params, data)

    print(f"\n1. sharded GMM value_and_grad, {args.points:.0e} points in {args.shards} shards")
    single = best(args.repeat, lambda: one_process(params, data))
    alone, _ = cpu_per_run(args.repeat, lambda: one_process(params, data))
    rate = args.points / single
    print(f"   1 process (loop here)   {single * 1e3:8.1f} ms   {rate / 1e6:6.2f} M points/s"
          f"   CPU {alone * 1e3:.0f} ms")
    overheads = {}
    for workers in (1, 2):
        seconds, overheads[workers], (here, there) = cluster_seconds(
            workers, params, args.points, args.shards, args.repeat)
        print(f"   {workers} worker process{'es' if workers > 1 else '  '}      "
              f"{seconds * 1e3:8.1f} ms   {args.points / seconds / 1e6:6.2f} M points/s   "
              f"x{single / seconds:.2f} vs 1 process   CPU {there * 1e3:.0f} ms in workers "
              f"+ {here * 1e3:.0f} ms here (scheduler, client)")
        if workers == 2:
            print(f"   on {workers} idle cores the CPU times allow at most "
                  f"x{workers * alone / max(there, here * workers, 1e-9):.2f}")

    tiny = gmm.shard(0, 10)
    compute = best(args.repeat, lambda: [gmm.nll_and_grad(*params, tiny) for _ in range(200)])
    print("\n2. scheduling overhead per task (10-point shards, 200 tasks; compute "
          f"{compute / 200 * 1e6:.0f} us per task subtracted)")
    for workers, per_task in overheads.items():
        print(f"   {workers} worker process{'es' if workers > 1 else '  '}      "
              f"{(per_task - compute / 200) * 1e3:6.2f} ms per task")
    payload = pickle.dumps(gmm.nll_and_grad)
    ours = best(args.repeat, lambda: [pickle.loads(payload) for _ in range(1000)]) / 1000
    print(f"   of which unpickling the compiled value_and_grad: {ours * 1e6:.0f} us "
          f"({len(payload)} bytes)")

    print("\n3. threads: the same shards, one compiled function")
    assert threads(params, data, 2)[1][0].tobytes() == expected[1][0].tobytes()
    one = best(args.repeat, lambda: threads(params, data, 1))
    two = best(args.repeat, lambda: threads(params, data, 2))
    print(f"   1 thread  {one * 1e3:8.1f} ms\n   2 threads {two * 1e3:8.1f} ms   "
          f"x{one / two:.2f}")

    print("\n4. worker start-up, warm shared cache, in a new interpreter: once per process, "
          "then unpickle + first call per compiled function (wall ms, CPU ms)")
    for name, wall, cpu in startup_ms(params):
        print(f"   {name:56} {float(wall):7.1f} {float(cpu):7.1f}")


if __name__ == "__main__":
    main()
