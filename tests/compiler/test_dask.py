"""examples/dask_gmm.py on a LocalCluster of 2 worker processes computes the same loss and
gradient as one process, bit for bit, for the same sharding; its cluster starts as the
example's recipe says (glibc's malloc keeping freed memory; Dask's periodic work rare). Skipped
without the dask extra."""

import os
import pathlib
import platform
import resource
import subprocess
import sys

import dask
import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
sys.path.append(str(EXAMPLES))  # workers are spawned with this process's sys.path
import dask_gmm  # noqa: E402
import gmm  # noqa: E402

POINTS, SHARDS = 60_001, 6


def _one_process(params):
    sizes = [POINTS // SHARDS + (i < POINTS % SHARDS) for i in range(SHARDS)]
    return gmm.add_up([gmm.shard_nll_and_grad(*params, gmm.shard(i, size))
                       for i, size in enumerate(sizes)])


def _bits(value, grads):
    return np.float64(value).tobytes(), [g.tobytes() for g in grads]


@pytest.fixture(scope="module")
def client():
    gmm.nll_and_grad(*gmm.initial_parameters(), gmm.shard(0, 10))  # warm the shared cache
    # as a cluster started earlier in this process leaves it: the recipe must still win
    with dask_gmm.environ({"MALLOC_TRIM_THRESHOLD_": "65536"}):
        cluster = dask_gmm.local_cluster(2, dashboard_address=None)
    with distributed.Client(cluster) as c:
        c.wait_for_workers(2)
        yield c
    cluster.close()


def test_two_workers_give_the_bits_of_one_process(client):
    shards = dask_gmm.make_shards(client, POINTS, SHARDS)
    holders = {key: w for w, keys in client.has_what().items() for key in keys}
    assert len({holders[f.key] for f in shards}) == 2  # both workers hold shards
    pids = client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    params = list(gmm.initial_parameters())
    for _ in range(2):  # two points: the start, and after an Adam step
        value, grads = dask_gmm.sharded_value_and_grad(client, params, shards)
        assert _bits(value, grads) == _bits(*_one_process(params))
        dask_gmm.Adam(params, 0.2).step([g / POINTS for g in grads])


def test_fit_takes_steps_that_lower_the_loss(client, capsys):
    params = dask_gmm.fit(client, POINTS, SHARDS, steps=12, lr=0.2)
    losses = [float(line.split()[5]) for line in capsys.readouterr().out.splitlines()]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert all(p.shape == (4,) and np.isfinite(p).all() for p in params)


def test_main_with_a_scheduler_address(client, capsys):
    """--scheduler connects to a running cluster and ships examples/gmm.py to its workers
    (which then import the compiled function from their copy)."""
    dask_gmm.main(["--scheduler", client.scheduler.address, "--points", "20000",
                   "--shards", "4", "--steps", "2"])
    out = capsys.readouterr().out
    assert "step   1" in out and out.count("true") == 3
    assert all(client.run(_has_copy_of_gmm).values())


def _has_copy_of_gmm(dask_worker):
    return os.path.exists(os.path.join(dask_worker.local_directory, "gmm.py"))


def _faults_of_a_repeated_gradient():
    from adcompile.backends.llvm import native

    params, x = gmm.initial_parameters(), gmm.shard(0, 500_000)
    gmm.nll_and_grad(*params, x)
    # the first call's tier-up (a long call starts one) compiles now, not during the count:
    # LLVM's own memory is no temporary of the gradient
    native.settle()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    gmm.nll_and_grad(*params, x)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")
def test_workers_keep_freed_memory(client):
    """The recipe's workers: a gradient's temporaries (16 MB each here), made on the task
    thread, come from memory kept since the last call, not from new zero-filled pages
    (Dask's defaults take 4·10^4 page faults here)."""
    # the workers' addresses asked of the scheduler now (the client's cached scheduler_info
    # is refreshed only every few seconds under the recipe's rare ticks)
    faults = [client.submit(_faults_of_a_repeated_gradient, workers=[w], pure=False)
              for w in client.run(os.getpid)]
    assert max(client.gather(faults)) < 200


def test_cluster_runs_with_the_quiet_settings(client):
    """The workers and the scheduler have the recipe's settings (rare ticks and monitors, no
    profiler, no work stealing), which Dask's defaults do not."""
    for key, value in dask_gmm.QUIET_CONFIG.items():
        assert dask.config.get(key) != value  # the test process: Dask's defaults
        assert set(client.run(dask.config.get, key).values()) == {value}
    assert "stealing" not in client.run_on_scheduler(_scheduler_extensions)


def _scheduler_extensions(dask_scheduler):
    return list(dask_scheduler.extensions)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the settings are glibc's")
def test_blocks_take_no_page_faults_on_dask_defaults():
    """gmm.shard_nll_and_grad's calls are small: on a thread, with Dask's malloc setting
    (MALLOC_TRIM_THRESHOLD_=65536) and no other, a repeated shard takes no page faults."""
    code = ("import resource, threading, gmm\n"
            "p, x = gmm.initial_parameters(), gmm.shard(0, 500_000)\n"
            "def run():\n"
            "    global faults\n"
            "    gmm.shard_nll_and_grad(*p, x)\n"
            "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "    gmm.shard_nll_and_grad(*p, x)\n"
            "    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
            "t = threading.Thread(target=run)\n"
            "t.start()\n"
            "t.join()\n"
            "print(faults)\n")
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(EXAMPLES), str(EXAMPLES.parent)])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert int(out) < 50
