"""Compile time of the front end + Python backend: from decoration to the first result for a
30-line function (target <= 20 ms), split by stage.

Run: python benchmarks/compile_time.py
"""

import time

import numpy as np

from adcompile import adcompile
from adcompile.backends import python as python_backend
from adcompile.frontend import lower_function
from adcompile.ir import types as T
from adcompile.passes import pipeline


def thirty_lines(x, y, n):
    total = 0.0
    best = -1.0e300
    count = 0
    for i in range(n):
        a = x[i]
        b = y[i]
        if a > b:
            d = a - b
            total += d * d
        elif a < b:
            d = b - a
            total += 0.5 * d
        else:
            count += 1
        if a * b > best:
            best = a * b
        k = 0
        while k < 3:
            total += 0.001 * k
            k += 1
        if total > 1.0e6:
            break
    mean = total / max(n, 1)
    spread = 0.0
    for i in range(n):
        spread += (x[i] - mean) ** 2
    if count > 0:
        spread = spread / count
    return total, best, spread


def stage_times(args):
    types = tuple(T.of_value(a) for a in args)
    t0 = time.perf_counter()
    ir = lower_function(thirty_lines, types)
    t1 = time.perf_counter()
    ir = pipeline.run(ir)
    t2 = time.perf_counter()
    source = python_backend.emit_source(ir)
    t3 = time.perf_counter()
    python_backend.load(ir, source)
    t4 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, t4 - t3


def main():
    x, y = np.random.default_rng(0).standard_normal((2, 100))
    args = (x, y, 100)
    runs = []
    for _ in range(7):
        t0 = time.perf_counter()
        f = adcompile(thirty_lines)
        f(*args)
        runs.append(time.perf_counter() - t0)
    stages = min((stage_times(args) for _ in range(7)), key=sum)
    print(f"decoration to first result, 30-line function: {min(runs) * 1e3:.1f} ms "
          f"(target <= 20 ms)")
    for name, t in zip(("lower", "passes", "emit source", "load"), stages):
        print(f"  {name:12s} {t * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
