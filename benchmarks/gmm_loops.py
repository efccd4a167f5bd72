"""Reverse mode through nested loops: GradBench's GMM and LSTM written as plain loops.

GMM is written the way GradBench's C++ reference writes it: per point, per component, centre
the point into a scratch array, apply the triangular factor Q_k into a second scratch array
(its strictly-lower part walked with a counter, `idx += 1`), sum the squares, then a
log-sum-exp over the components. LSTM is `benchmarks/gradbench/lstm.py`'s scalar loops
(`lstm_loops`). Inputs come from GradBench's generators (`gradbench/gmm.py`, `lstm.py`).

For each size this prints the objective (adcompile's compiled primal, and numba's @njit of
the same loops), the gradient (adcompile `grad`, and JAX `jit(grad)` of the vectorised form
from `gradbench/`), gradient / objective, adcompile / JAX, the gradient's error against
JAX's (GradBench's measure) and the gradient's peak extra memory: the resident memory the
call adds at its peak, measured in a fresh process (Linux: VmHWM reset through clear_refs)
after the program was compiled on a small input (strict mode only: fastmath keeps the same
tapes). Each table comes twice: strict IEEE (the default) and fastmath=True, under which
adcompile's kernels also run with subnormal numbers flushed to zero (FTZ/DAZ), as XLA's CPU code
(JAX) always does. That matters for GMM at d = 64: the log-sum-exp weight of most components
underflows (45% are exactly 0, 3.6% subnormal), and on x86 each multiplication by a subnormal
number in their adjoints is a microcode assist. Timings are the best of repeated calls in
CPU seconds of the process (time.process_time: on a shared machine, time spent waiting for a
core is not counted; every contender runs on one thread); nothing is asserted.

Run: python benchmarks/gmm_loops.py [--quick] [--no-jax] [--no-memory] [--budget S]
     [--evals gmm,lstm] [--modes ieee,fastmath]
"""

import argparse
import math
import os
import subprocess
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(HERE, "gradbench")]  # this checkout first

import adcompile as ac  # noqa: E402
import gmm  # noqa: E402
import lstm  # noqa: E402
from harness import spec_error  # noqa: E402


def gmm_reference_loops(alpha, mu, q, l, x, gamma, m, constant):
    """GradBench's GMM objective as the C++ reference computes it (SPEC.md section 1)."""
    n, d = x.shape
    k_count = alpha.shape[0]
    xc = np.empty(d)
    qx = np.empty(d)
    main = np.empty(k_count)
    slse = 0.0
    for i in range(n):
        for k in range(k_count):
            for j in range(d):
                xc[j] = x[i, j] - mu[k, j]
            for j in range(d):
                qx[j] = math.exp(q[k, j]) * xc[j]
            idx = 0
            for c in range(d):
                for r in range(c + 1, d):
                    qx[r] += l[k, idx] * xc[c]
                    idx += 1
            squares = 0.0
            sum_q = 0.0
            for j in range(d):
                squares += qx[j] * qx[j]
                sum_q += q[k, j]
            main[k] = alpha[k] + sum_q - 0.5 * squares
        top = main[0]
        for k in range(1, k_count):
            top = max(top, main[k])
        total = 0.0
        for k in range(k_count):
            total += math.exp(main[k] - top)
        slse += top + math.log(total)
    top = alpha[0]
    for k in range(1, k_count):
        top = max(top, alpha[k])
    total = 0.0
    for k in range(k_count):
        total += math.exp(alpha[k] - top)
    lse_alpha = top + math.log(total)
    frobenius = 0.0
    sum_all_q = 0.0
    for k in range(k_count):
        for j in range(d):
            frobenius += math.exp(q[k, j]) ** 2
            sum_all_q += q[k, j]
        for j in range(l.shape[1]):
            frobenius += l[k, j] * l[k, j]
    return constant + slse - n * lse_alpha - 0.5 * gamma * gamma * frobenius + m * sum_all_q


# -- the two evals: arguments, the adcompile gradient, the JAX reference ----------------------

GMM_SIZES = [dict(d=2, k=5), dict(d=10, k=25), dict(d=20, k=50), dict(d=64, k=100)]
LSTM_SIZES = [dict(l=2, c=1024), dict(l=4, c=4096)]


class Gmm:
    name = "gmm"
    sizes = GMM_SIZES
    quick = GMM_SIZES[:2]
    function = staticmethod(gmm_reference_loops)
    argnums = (0, 1, 2, 3)
    jax_module = gmm

    @staticmethod
    def label(d, k):
        return f"n=1000 d={d} k={k}"

    @staticmethod
    def args(d, k):
        inp = gmm.make_input(d, k, 1000)
        return inp, (*gmm._arrays(inp), *gmm._scalars(inp))

    @staticmethod
    def small_args(d, k):
        return Gmm.args(2, 2)[1]

    @staticmethod
    def as_output(grads):
        return dict(zip(("alpha", "mu", "q", "l"), grads))


class Lstm:
    name = "lstm"
    sizes = LSTM_SIZES
    quick = LSTM_SIZES[:1]
    function = staticmethod(lstm.lstm_loops)
    argnums = (0, 1)
    jax_module = lstm

    @staticmethod
    def label(l, c):
        return f"l={l} c={c}"

    @staticmethod
    def args(l, c):
        inp = lstm.make_input(l, c)
        return inp, lstm._arrays(inp)

    @staticmethod
    def small_args(l, c):
        return Lstm.args(1, 4)[1]

    @staticmethod
    def as_output(grads):
        return np.concatenate([g.ravel() for g in grads])


EVALS = {"gmm": Gmm, "lstm": Lstm}
MODES = {"ieee": "strict IEEE (the default)",
         "fastmath": "fastmath=True (adcompile and numba; adcompile then also flushes subnormals "
                     "to zero, as JAX's CPU code always does)"}


# -- measurements ------------------------------------------------------------------------------

def best_seconds(fn, budget, least=3):
    """The fewest CPU seconds of one call of fn(), over at least `least` calls after a
    warm-up, and more while they took less than `budget` seconds in all."""
    fn()
    times = []
    while len(times) < least or sum(times) < budget:
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def measure(ev, size, budget, use_jax, fastmath=False):
    """One row: times (seconds), ratios and errors of one size."""
    inp, args = ev.args(**size)
    primal = ac.adcompile(ev.function, fastmath=fastmath)
    gradient = ac.grad(primal, argnums=ev.argnums)
    grads = gradient(*args)
    row = {"label": ev.label(**size)}
    row["objective"] = best_seconds(lambda: primal(*args), budget)
    row["gradient"] = best_seconds(lambda: gradient(*args), budget)
    try:
        import numba

        jitted = numba.njit(ev.function, fastmath=fastmath)
        jitted(*args)
        row["numba"] = best_seconds(lambda: jitted(*args), budget)
    except ImportError:
        row["numba"] = math.nan
    row["jax"], row["error"] = math.nan, math.nan
    if use_jax:
        ref = ev.jax_module.Jax(inp)
        row["jax"] = best_seconds(ref.derivative, budget)
        row["error"] = spec_error(ev.as_output(grads), ref.derivative())
    return row


def peak_memory(ev_name, size):
    """The gradient's peak extra resident memory in bytes, from a fresh process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child-memory", ev_name,
           *(f"{k}={v}" for k, v in size.items())]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return math.nan
    return float(out.stdout.split()[-1])


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def child_memory(ev_name, given):
    """(In the child) compile on a small input, then measure one call on the real one."""
    ev = EVALS[ev_name]
    size = {k: int(v) for k, v in (item.split("=") for item in given)}
    _, args = ev.args(**size)
    gradient = ac.grad(ev.function, argnums=ev.argnums)
    gradient(*ev.small_args(**size))
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM, the peak, to the present resident size
    gradient(*args)
    print((_status_kib("VmHWM") - before) * 1024)


def _ms(seconds):
    return "—" if math.isnan(seconds) else f"{seconds * 1e3:.3g} ms"


def _mib(n):
    return "—" if math.isnan(n) else f"{n / 2**20:.2f} MiB"


def print_table(ev, rows, mode):
    print(f"\n{ev.name} (loops), {MODES[mode]}: gradient of adcompile vs its objective, numba, "
          f"JAX jit(grad)")
    head = ("size", "objective", "numba obj", "gradient", "grad/obj", "JAX grad",
            "adc/JAX", "error vs JAX", "grad peak extra mem")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = (r["label"], _ms(r["objective"]), _ms(r["numba"]), _ms(r["gradient"]),
                 f"{r['gradient'] / r['objective']:.2f}", _ms(r["jax"]),
                 "—" if math.isnan(r["jax"]) else f"{r['gradient'] / r['jax']:.2f}",
                 "—" if math.isnan(r["error"]) else f"{r['error']:.1e}", _mib(r["memory"]))
        print("| " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the two smallest sizes")
    parser.add_argument("--no-jax", action="store_true", help="skip JAX")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory child")
    parser.add_argument("--evals", default="gmm,lstm")
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--modes", default="ieee,fastmath", help="ieee, fastmath or both")
    parser.add_argument("--child-memory", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_memory:
        return child_memory(args.child_memory[0], args.child_memory[1:])
    for name in args.evals.split(","):
        ev = EVALS[name]
        for mode in args.modes.split(","):
            rows = []
            for size in ev.quick if args.quick else ev.sizes:
                row = measure(ev, size, args.budget, not args.no_jax, mode == "fastmath")
                skip = args.no_memory or mode == "fastmath"  # the same tapes either way
                row["memory"] = math.nan if skip else peak_memory(name, size)
                rows.append(row)
            print_table(ev, rows, mode)


if __name__ == "__main__":
    main()
