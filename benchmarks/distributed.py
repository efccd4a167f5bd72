"""Spreading compiled gradients over cores: Dask worker processes, threads, worker start-up.

1. The sharded GMM value_and_grad (examples/dask_gmm.py) in 1 process on 1 core (one thread,
   one BLAS thread: the fair baseline) and on a LocalCluster of 2 single-threaded worker
   processes, each with glibc's and Dask's defaults and then with the example's recipe
   (dask_gmm.CLUSTER_CONFIG: malloc keeping freed memory, Dask's periodic work rare); a task
   computes its shard in one compiled call ("whole shards") or in cache-sized blocks
   (gmm.shard_nll_and_grad, the example's task: "blocks"). Per gradient: wall
   ms, CPU ms in the compiled calls, in the whole process(es) (event loop, profiler,
   messages) and in this process (the scheduler, the nannies and the client: they share the
   2 cores with the workers), minor page faults, and the cores kept busy (CPU over wall:
   2 workers keep less than 2 busy where other processes hold the cores). Then the
   throughput ratio, measured (wall), and the one the CPU times give on 2 idle cores: the
   calls' and the tasks' CPU spread over 2 cores less what the idle cluster takes.
2. Scheduling overhead per task: a task on a 10-point shard (the work is negligible), wall
   per task minus the compute time of the same call in this process, and CPU per task here
   and in the workers.
3. Threads: the same shards over 2 threads calling one compiled function (the GIL is
   released in compiled code) against 1 thread of the same pool, with their CPU.
4. Worker start-up with a warm shared cache: a new interpreter unpickles each compiled
   function and makes its first call; milliseconds per function, compiling disabled there
   (it would raise); importing adcompile and the functions' modules, and the once-per-process
   set-up (LLVM's JIT, the C-API probe, the compiler's source digest), timed apart.

Wall-clock figures are only meaningful on idle cores: the load average is printed with them;
the CPU figures hold under load up to the contention for caches and memory.
Run: python benchmarks/distributed.py [--points 8000000] [--shards 16] [--repeat 3]
     python benchmarks/distributed.py --ratio --repeat 5   # only the recipe's throughput ratio,
                                                           # beside the machine's own ceiling
Needs the dask extra: pip install -e '.[dask]'. Linux (page faults from getrusage).
"""

import argparse
import contextlib
import logging
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

for _blas in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")  # before numpy loads its BLAS: the baseline's one core

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# this file's name would hide the `distributed` package from `dask.distributed`
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)
import dask_gmm  # noqa: E402
import gmm  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

import adcompile as ac  # noqa: E402
from tests.compiler import pickled_functions as pf  # noqa: E402


def best(repeat, run):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def usage():
    """(CPU seconds, minor page faults) of this process so far, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt


# what a task runs on its shard: the compiled value_and_grad on the whole shard in one call,
# or the example's, one call per cache-sized block
TASKS = {"whole shards": gmm.nll_and_grad, "blocks": gmm.shard_nll_and_grad}


def timed_call(task, *args):
    """The task and the CPU seconds of its thread (what the worker computes)."""
    started = time.thread_time()
    out = task(*args)
    return out, time.thread_time() - started


class Gradients:
    """Runs sharded gradients on a map (a loop here, or a client's) and totals per gradient:
    wall, CPU in the compiled calls, in the workers' processes, here, page faults there."""

    def __init__(self, params, shards, task, client=None):
        self.params, self.shards, self.task, self.client = params, shards, task, client
        self.calls = 0.0

    def map(self):
        copies = [[p] * len(self.shards) for p in self.params]
        tasks = [self.task] * len(self.shards)
        if self.client is None:
            return [timed_call(*a) for a in zip(tasks, *copies, self.shards)]
        return self.client.gather(self.client.map(timed_call, tasks, *copies, self.shards,
                                                  pure=False))

    def run(self):
        results = self.map()
        self.calls += sum(cpu for _, cpu in results)
        return gmm.add_up([out for out, _ in results])

    def workers(self):
        if self.client is None:
            return {"here": usage()}
        return self.client.run(usage)

    def measure(self, repeat):
        """Per gradient: wall (the best), CPU of the calls, of each worker, here, page
        faults; and the cores it kept busy (all that CPU over the mean wall time: under 2
        for 2 workers where other processes hold the cores)."""
        self.run()  # loads the code, warms the allocator
        self.calls, here, there = 0.0, usage()[0], self.workers()
        started = time.perf_counter()
        wall = best(repeat, self.run)
        elapsed = time.perf_counter() - started
        after = self.workers()
        cpu = {w: (after[w][0] - there[w][0]) / repeat for w in there}
        faults = sum(after[w][1] - there[w][1] for w in there) / repeat
        here = (usage()[0] - here) / repeat if self.client is not None else 0.0
        cores = (sum(cpu.values()) + here) * repeat / elapsed
        return wall, self.calls / repeat, cpu, here, faults, cores


@contextlib.contextmanager
def one_core():
    """This thread (and threads it starts) on one core, as a single-core baseline."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cores)


def sizes(points, shards):
    return [points // shards + (i < points % shards) for i in range(shards)]


def threads(params, data, n, task):
    with ThreadPoolExecutor(n) as pool:
        return gmm.add_up(list(pool.map(lambda x: task(*params, x), data)))


def one_process(params, data, repeat):
    """measure()'s figures for each task, in this process on one core."""
    return {name: one_process_figures(Gradients(params, data, task), repeat)
            for name, task in TASKS.items()}


def one_process_figures(gradients, repeat):
    with one_core():
        return gradients.measure(repeat)


def idle_rate(client, seconds=2.0):
    """CPU seconds per second the cluster spends with no task running (event loops,
    heartbeats, memory monitors, the profiler where on): here (the scheduler, the nannies,
    the client) and in the workers together."""
    there, here = client.run(usage), usage()[0]
    time.sleep(seconds)
    after = client.run(usage)
    here = usage()[0] - here
    return here / seconds, sum(after[w][0] - there[w][0] for w in there) / seconds


def two_workers(recipe):
    """A LocalCluster of 2 worker processes, on Dask's defaults or the example's recipe."""
    options = dict(dashboard_address=None, silence_logs=logging.CRITICAL)
    if recipe:
        return dask_gmm.local_cluster(2, **options)
    return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, **options)


def cluster(recipe, params, points, shards, repeat):
    """On 2 worker processes, Dask's defaults or the example's recipe: the sharded
    gradient (measure()'s figures, for each task), a 10-point task (wall s; CPU s here and
    in the workers, less the idle rates) and the idle rates (here, in the workers)."""
    with two_workers(recipe) as local, Client(local) as client:
        data = dask_gmm.make_shards(client, points, shards)
        idle_here, idle_there = idle_rate(client)
        figures = {name: Gradients(params, data, task, client).measure(repeat)
                   for name, task in TASKS.items()}
        tiny = Gradients(params, dask_gmm.make_shards(client, 10 * 200, 200),
                         gmm.nll_and_grad, client)
        started = time.perf_counter()
        wall, _, cpu, here = tiny.measure(repeat)[:4]
        span = (time.perf_counter() - started) / (repeat + 1)  # per map, the warm-up too
    task = (wall / 200, (here - idle_here * span) / 200,
            (sum(cpu.values()) - idle_there * span) / 200)
    return figures, task, (idle_here, idle_there)


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


def rows(name, figures):
    for task, (wall, calls, cpu, here, faults, cores) in figures.items():
        workers = " + ".join(f"{c * 1e3:.0f}" for c in cpu.values())
        print(f"   {name + ', ' + task:48} {wall * 1e3:7.0f} {calls * 1e3:7.0f}   "
              f"{workers:>11} {here * 1e3:6.0f} {faults:9.0f} {cores:6.2f}")


def ratio(name, alone, spread, task, tasks):
    """The measured wall ratio, and the one the CPU times give on 2 idle cores: the
    compiled calls and each task's CPU spread over 2 cores less the idle rate."""
    (_, per_task_here, per_task_there), idle = spread[1], sum(spread[2])
    alone = alone[task]
    wall, calls = spread[0][task][0], spread[0][task][1]
    idle_wall = (calls + tasks * (per_task_here + per_task_there)) / (2 - idle)
    print(f"   {name}, {task}: x{alone[0] / wall:.2f} measured (load {os.getloadavg()[0]:.1f});\n"
          f"      on 2 idle cores x{sum(alone[2].values()) / idle_wall:.2f}: "
          f"({calls * 1e3:.0f} ms of calls + {tasks} tasks x "
          f"{(per_task_here + per_task_there) * 1e3:.2f} ms) / (2 - {idle:.3f} cores idle "
          f"overhead) = {idle_wall * 1e3:.0f} ms")


def gradients(args, params, data):
    """Section 1; returns the per-task figures of each cluster."""
    print(f"\n1. sharded GMM value_and_grad, {args.points:.0e} points in {args.shards} shards, "
          f"a task on a whole shard or in blocks of {gmm.BLOCK} points, per gradient, ms\n"
          f"   {'':48} {'wall':>7} {'CPU: calls':>10} {'processes':>11} {'here':>6} "
          f"{'page faults':>11} {'cores':>6}")
    alone = one_process(params, data, args.repeat)
    rows("1 process, 1 core, glibc defaults", alone)
    default = cluster(False, params, args.points, args.shards, args.repeat)
    rows("2 workers, Dask defaults", default[0])
    dask_gmm.keep_freed_memory()  # for good in this process: measured after the defaults
    kept = one_process(params, data, args.repeat)
    rows("1 process, 1 core, memory kept", kept)
    recipe = cluster(True, params, args.points, args.shards, args.repeat)
    rows("2 workers, the example's recipe", recipe[0])
    again = one_process(params, data, args.repeat)
    rows("1 process, memory kept, again", again)
    for task in TASKS:
        best_alone = min((kept, again), key=lambda f: sum(f[task][2].values()))
        ratio("2 workers (recipe) vs 1 process (memory kept)", best_alone, recipe, task,
              args.shards)
        ratio("2 workers (Dask defaults) vs 1 process (glibc defaults)", alone, default, task,
              args.shards)
    return {"Dask defaults": default[1:], "the recipe": recipe[1:]}


def scheduling(args, params, tasks):
    tiny = gmm.shard(0, 10)
    compute = best(args.repeat, lambda: [gmm.nll_and_grad(*params, tiny) for _ in range(200)])
    print("\n2. scheduling overhead per task (10-point shards, 200 tasks per map; compute "
          f"{compute / 200 * 1e6:.0f} us per task subtracted from the wall time)")
    for name, ((wall, here, there), (idle_here, idle_there)) in tasks.items():
        print(f"   2 workers, {name:14} {(wall - compute / 200) * 1e3:6.2f} ms wall; CPU "
              f"{here * 1e3:.2f} ms here + {there * 1e3:.2f} ms in the workers; idle, the "
              f"cluster takes {idle_here * 1e3:.0f} ms CPU per second here + "
              f"{idle_there * 1e3:.0f} ms in the workers")
    payload = pickle.dumps(gmm.nll_and_grad)
    ours = best(args.repeat, lambda: [pickle.loads(payload) for _ in range(1000)]) / 1000
    print(f"   of which unpickling the compiled value_and_grad: {ours * 1e6:.0f} us "
          f"({len(payload)} bytes)")


def thread_scaling(args, params, data, expected):
    print("\n3. threads: the same shards, one compiled function, memory kept (wall ms, "
          "CPU ms, page faults)")
    for name, task in TASKS.items():
        assert threads(params, data, 2, task)[1][0].tobytes() == expected[name][1][0].tobytes()
        walls = {}
        for n in (1, 2):
            before = usage()
            walls[n] = best(args.repeat, lambda: threads(params, data, n, task))
            cpu, faults = (b - a for a, b in zip(before, usage()))
            print(f"   {name:12} {n} thread{'s' if n > 1 else ' '} {walls[n] * 1e3:8.1f} "
                  f"{cpu / args.repeat * 1e3:8.0f} {faults / args.repeat:8.0f}"
                  + (f"   x{walls[1] / walls[2]:.2f}" if n > 1 else ""))


CONTROL = """
import time, numpy as np
a = np.random.default_rng(0).random(100_000)  # 0.8 MB: inside a core's L2, no shared memory
start = time.perf_counter()
for _ in range(1500):
    np.sin(a, out=a)
print(time.perf_counter() - start)
"""


def machine_ceiling(rounds=3):
    """What 2 cores of this machine give any 2-process job: the same CPU-bound loop (numpy's
    sin over an L2-resident array, no memory traffic, nothing shared) in 1 process alone and
    in 2 independent processes at once, pinned to one core each; the ratio 2 * alone / the
    slower of the pair (the best of `rounds` each). On a virtual machine whose 2 cores share
    a physical core or a busy host this is well under 2, and it caps any scheme's ratio."""
    def run(cores):
        procs = [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", CONTROL],
                                  stdout=subprocess.PIPE, text=True) for c in cores]
        return max(float(p.communicate()[0]) for p in procs)
    alone = min(run([0]) for _ in range(rounds))
    pair = min(run([0, 1]) for _ in range(rounds))
    return alone, pair, 2 * alone / pair


def throughput(args, params, data):
    """--ratio: the example's recipe (workers keeping freed memory, tasks in blocks) on 2
    worker processes against 1 process on 1 core measured before the cluster starts and
    after it stops (the better of the two: the ratio errs low); the best wall time of
    --repeat gradients each, and per task the CPU of the compiled calls and the page faults;
    then machine_ceiling(), the ratio this machine gives two independent processes."""
    dask_gmm.keep_freed_memory()
    alone = Gradients(params, data, gmm.shard_nll_and_grad)
    expected = alone.run()
    before = one_process_figures(alone, args.repeat)
    with two_workers(True) as local, Client(local) as client:
        shards = dask_gmm.make_shards(client, args.points, args.shards)
        spread = Gradients(params, shards, gmm.shard_nll_and_grad, client)
        assert [g.tobytes() for g in spread.run()[1]] == [g.tobytes() for g in expected[1]]
        two = spread.measure(args.repeat)
    after = one_process_figures(alone, args.repeat)
    print(f"sharded GMM value_and_grad, {args.points:.0e} points in {args.shards} shards, "
          f"blocks of {gmm.BLOCK} points; best of {args.repeat} gradients")
    for name, (wall, calls, _, _, faults, _) in (("1 process, 1 core, before", before),
                                                  ("2 worker processes", two),
                                                  ("1 process, 1 core, after", after)):
        print(f"   {name:28} {wall * 1e3:6.0f} ms per gradient; per task "
              f"{calls / args.shards * 1e3:5.1f} ms CPU in the compiled calls, "
              f"{faults / args.shards:6.1f} minor page faults")
    print(f"throughput, 2 worker processes / 1 process: x{min(before[0], after[0]) / two[0]:.2f}"
          f" (load average {os.getloadavg()[0]:.1f}: meaningful on idle cores only)")
    alone, pair, ceiling = machine_ceiling()
    print(f"this machine's ceiling for 2 processes: x{ceiling:.2f} (an independent CPU-bound "
          f"loop: {alone * 1e3:.0f} ms alone, {pair * 1e3:.0f} ms for the slower of 2 at once)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=8_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ratio", action="store_true",
                        help="only the throughput ratio of the example's recipe (run it idle)")
    args = parser.parse_args()
    # every thread of this process on the main arena (only before a second thread starts),
    # as in the recipe's workers; the 1-process loop runs on the main thread, on that arena
    # whatever the setting
    dask_gmm.keep_freed_memory(["MALLOC_ARENA_MAX"])
    os.environ.setdefault("ADCOMPILE_CACHE_DIR", tempfile.mkdtemp(prefix="adcompile-bench-"))
    print(f"cores: {os.cpu_count()}, load average now: {os.getloadavg()[0]:.1f} "
          f"(other processes share these cores: wall-clock ratios are noisy)")
    params = list(gmm.initial_parameters())
    data = [gmm.shard(i, n) for i, n in enumerate(sizes(args.points, args.shards))]
    if args.ratio:
        return throughput(args, params, data)
    expected = {name: gmm.add_up([task(*params, x) for x in data])
                for name, task in TASKS.items()}
    tasks = gradients(args, params, data)
    scheduling(args, params, tasks)
    thread_scaling(args, params, data, expected)
    print("\n4. worker start-up, warm shared cache, in a new interpreter: once per process, "
          "then unpickle + first call per compiled function (wall ms, CPU ms)")
    for name, wall, cpu in startup_ms(params):
        print(f"   {name:56} {float(wall):7.1f} {float(cpu):7.1f}")


if __name__ == "__main__":
    main()
