"""Fit a Gaussian mixture to 10^7 points with Dask: data-parallel compiled gradients.

The data set is cut into shards that the workers make themselves (examples/gmm.py draws
each from its own seed) and keep. Each step sends the parameters, maps the compiled
value_and_grad over the shards (a task runs it block by block: cache-sized calls), adds the
results up in shard order on the driver (so any cluster gives the same bits for the same
sharding) and takes an Adam step.

Run:  python examples/dask_gmm.py                       # a LocalCluster of 2 worker processes
      python examples/dask_gmm.py --scheduler tcp://HOST:8786   # a running cluster (any size)
Needs the dask extra: pip install -e '.[dask]'. Compiled functions pickle by reference, so the
workers import examples/gmm.py: on a LocalCluster it is on their path; for a remote cluster
this script ships it with client.upload_file (adcompile must be installed there). Point
ADCOMPILE_CACHE_DIR at a shared directory and workers load the compiled code instead of
compiling it.

A cluster for compiled kernels: CLUSTER_CONFIG below, which the LocalCluster gets; start the
processes of another cluster with the same settings, e.g.
  export DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s \
    DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL=2s \
    DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL=1s \
    DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False \
    DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING=False
  dask scheduler
  MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 \
    dask worker tcp://HOST:8786 --nthreads 1
(idle, a scheduler and 2 workers took 92 ms of CPU per second on Dask's defaults, 18 ms so;
and on Dask's defaults a worker computing whole shards in one call spent about 45% of its
CPU on page faults).
"""

import argparse
import contextlib
import ctypes
import ctypes.util
import os
import sys
import time

import dask
import numpy as np
from dask.distributed import Client, LocalCluster, wait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gmm  # noqa: E402


# How workers that run compiled kernels should start (measured in benchmarks/distributed.py).
# A kernel mallocs its temporaries (here 8 bytes x points x components each) on every call:
# in gmm.BLOCK-point calls they stay small and are reused without faults on any settings;
# larger calls need these.
# Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also stops glibc raising its
# mmap threshold: every temporary of 128 KiB or more is then a new mapping, zero-filled page
# by page and unmapped when freed. And a worker runs tasks on a thread, whose glibc arena
# grows in heaps of at most 64 MiB that are unmapped whenever one empties. So: one arena (the
# main one, which grows without that limit), blocks up to 32 MiB (glibc's ceiling) from the
# heap, freed memory kept (a worker keeps its peak). One thread per worker and one BLAS
# thread (Dask's default).
MALLOC_ENVIRON = {"MALLOC_ARENA_MAX": "1", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                  "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
WORKER_ENVIRON = {**MALLOC_ENVIRON,
                  "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# Dask's periodic work, made rare: every server (scheduler, nanny, worker) ticks every 20 ms
# to notice a blocked event loop, workers read their memory every 100 ms and the system's every
# 500 ms, the sampling profiler wakes every 10 ms, and the scheduler looks for work to steal
# (a task here runs where its shard is: moving it would move the shard). Idle, 2 workers and
# the scheduler took 92 ms of CPU per second on Dask's defaults, 18 ms so (under load 10).
QUIET_CONFIG = {"distributed.admin.tick.interval": "1s",
                "distributed.admin.system-monitor.interval": "2s",
                "distributed.worker.memory.monitor-interval": "1s",
                "distributed.worker.profile.enabled": False,
                "distributed.scheduler.work-stealing": False}
# and the environment variables set before the worker's interpreter starts (glibc reads them
# then)
CLUSTER_CONFIG = {**QUIET_CONFIG, "distributed.nanny.pre-spawn-environ": WORKER_ENVIRON}
MALLOPT = {"MALLOC_ARENA_MAX": -8, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_TRIM_THRESHOLD_": -1}


def keep_freed_memory(names=tuple(MALLOC_ENVIRON)):
    """MALLOC_ENVIRON's settings (those named) in this running process, by mallopt; False
    where the C library has none. A thread that has an arena keeps it: MALLOC_ARENA_MAX
    only counts before the process starts its second thread."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "mallopt"):
        return False
    return all(libc.mallopt(MALLOPT[name], int(MALLOC_ENVIRON[name])) for name in names)


def local_cluster(workers, **options):
    """A LocalCluster of `workers` single-threaded processes started as CLUSTER_CONFIG says."""
    with dask.config.set(CLUSTER_CONFIG), environ(WORKER_ENVIRON):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            **options)


@contextlib.contextmanager
def environ(values):
    """os.environ with `values` while the nannies read it: Dask lets a variable already set
    there win over its configuration, and a cluster started earlier in this process leaves
    Dask's own MALLOC_TRIM_THRESHOLD_ there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def make_shards(client, points, shards, seed=0):
    """Futures of the shards, made on the workers (the data never passes through here) and
    dealt out in turn over the workers' threads, so that each thread holds as many shards as
    any other. Left to the scheduler, 16 shards landed 9 and 7 on 2 workers, and the worker
    with 9 set the pace of every gradient (the gradient tasks run where their shard is)."""
    sizes = [points // shards + (i < points % shards) for i in range(shards)]
    slots = [address for address, info in sorted(client.scheduler_info()["workers"].items())
             for _ in range(info["nthreads"])]
    futures = [client.submit(gmm.shard, seed + i, size, workers=[slots[i % len(slots)]],
                             allow_other_workers=False)
               for i, size in enumerate(sizes)]
    wait(futures)
    return futures


def sharded_value_and_grad(client, params, shards):
    """The loss and gradient of the whole data set: one task per shard, summed in order. A
    task runs the compiled value_and_grad over its shard in cache-sized blocks
    (gmm.shard_nll_and_grad): on the whole shard at once a call is memory-bound, and the calls
    of 2 workers on 2 idle cores took 23% more CPU than those of one process."""
    copies = [[p] * len(shards) for p in params]
    futures = client.map(gmm.shard_nll_and_grad, *copies, shards, pure=False)
    return gmm.add_up(client.gather(futures))


class Adam:
    """Adam on a list of numpy arrays, updated in place."""

    def __init__(self, params, lr=0.05, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        b1, b2 = self.betas
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            m_hat = m / (1 - b1 ** self.t)
            v_hat = v / (1 - b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def fit(client, points, shards, steps, lr):
    data = make_shards(client, points, shards)
    params = list(gmm.initial_parameters())
    # compile here once: workers sharing the on-disk cache (ADCOMPILE_CACHE_DIR) load the code
    gmm.nll_and_grad(*params, gmm.shard(0, 10))
    adam = Adam(params, lr)
    for step in range(steps):
        started = time.perf_counter()
        value, grads = sharded_value_and_grad(client, params, data)
        adam.step([g / points for g in grads])
        if step % 10 == 0 or step == steps - 1:
            print(f"step {step:3d}  nll per point {value / points:.6f}  "
                  f"({time.perf_counter() - started:.3f} s)")
    return params


def report(params):
    logits, means, log_sigmas = params
    weights = np.exp(logits - logits.max())
    order = np.argsort(means)
    print("weights", np.round((weights / weights.sum())[order], 3), "true", gmm.TRUE_WEIGHTS)
    print("means  ", np.round(means[order], 3), "true", gmm.TRUE_MEANS)
    print("sigmas ", np.round(np.exp(log_sigmas)[order], 3), "true", gmm.TRUE_SIGMAS)


def connect(args):
    if args.scheduler:
        client = Client(args.scheduler)
        # the workers import the compiled function from this module: put a copy on their path
        # (load=False: a worker that has it already keeps its own, and its compiled code)
        client.upload_file(gmm.__file__, load=False)
        return client
    return Client(local_cluster(args.workers))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler", help="address of a running Dask scheduler "
                        "(default: start a LocalCluster)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--shards", type=int, default=20)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.2)
    args = parser.parse_args(argv)
    with connect(args) as client:
        report(fit(client, args.points, args.shards, args.steps, args.lr))


if __name__ == "__main__":
    main()
