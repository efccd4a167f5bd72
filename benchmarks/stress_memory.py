"""Memory over a million calls of compiled gradients: the resident set must stay flat.

Each call of value_and_grad allocates the gradient array (through numpy) and runs a reverse
pass; grad of a function with an inner data-dependent loop also fills and frees tapes; an
error exit (IndexError) must release what the call allocated. Prints the resident set size
(RSS) every 100,000 calls and its growth after the first 100,000 (warm-up: allocator pools,
first-call compilation).

Run: python benchmarks/stress_memory.py [--calls N]
"""

import argparse
import math
import time

import numpy as np

import adcompile


def energy(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def taped(x):
    """Needs tapes: the inner while loop's trip count depends on the data."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        k = 0
        while v * v < 4.0 and k < 3:
            v = v * 1.5 + 0.1
            k += 1
        s += math.sin(v) * v
    return s


def out_of_range(x, k):
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    return y[k]


def rss_mib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1_000_000)
    calls = parser.parse_args().calls
    x = np.linspace(-1.0, 1.0, 16)
    vg = adcompile.value_and_grad(energy)
    g = adcompile.grad(taped)
    bad = adcompile.adcompile(out_of_range)
    step = max(calls // 10, 1)
    start = time.perf_counter()
    baseline = None
    print(f"{'calls':>10s} {'RSS MiB':>9s}")
    for n in range(1, calls + 1):
        vg(x)
        g(x)
        if n % 10 == 0:
            try:
                bad(x, 99)
            except IndexError:
                pass
        if n % step == 0:
            rss = rss_mib()
            baseline = rss if baseline is None else baseline
            print(f"{n:>10,d} {rss:9.1f}")
    growth = rss_mib() - baseline
    print(f"{calls:,} calls each of value_and_grad and grad (+{calls // 10:,} IndexErrors) in "
          f"{time.perf_counter() - start:.1f} s; RSS growth after the first {step:,}: "
          f"{growth:+.1f} MiB (flat: within a few MiB)")


if __name__ == "__main__":
    main()
