"""The bridge: a loop-heavy differentiable function as eager ops vs as one compiled node.

A 10^4-step scalar recurrence h <- tanh(w * h + x[i]), forward + backward with respect to x
(10^4 elements) and w, twice: loss = h[-1] ** 2 (the node's result is a scalar: its forward
call runs the vjp) and loss = sum(h ** 2) over the array of all states (its forward call runs
the split program's forward half, its backward the reverse half on the taped states):

- ours, eager: the loop run with Tensor operations (four nodes per step);
- PyTorch 2.13, eager: the same code with `import torch`;
- ours, compiled: the same loop under @adcompile, called with the Tensors — one
  CompiledFunctionBackward node in the eager graph.

The eager versions read x through x.unbind(0) (x[i] of a tensor that requires grad costs a
dense gradient per step in backward, in both libraries: quadratic). Prints the median time
of each and the ratios, checks the gradients agree, then calls the
compiled nodes (forward + backward, 100-step sequences; a scalar result and an array of
states) --calls times and prints the resident set size (RSS) every tenth of them: it must
stay flat (each node's saved state is freed).

Run: python benchmarks/bridge.py [--steps N] [--calls N]
"""

import argparse
import time

import numpy as np
import torch as real_torch

import adcompile as torch
from adcompile import adcompile


def recurrence(x, w):
    h = 0.0 * w
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


def recurrence_eager(x, w):
    h = 0.0 * w
    for x_i in x.unbind(0):  # (x[i] would cost a dense gradient per step in backward)
        h = (w * h + x_i).tanh()
    return h


def states(x, w):
    out = np.zeros_like(x)
    h = 0.0 * w
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
        out[i] = h
    return out


compiled_recurrence = adcompile(recurrence)
compiled_states = adcompile(states)


def states_eager(x, w):
    h, items = 0.0 * w, []
    for x_i in x.unbind(0):
        h = (w * h + x_i).tanh()
        items.append(h)
    return _stack(items)


def _stack(items):
    lib = real_torch if isinstance(items[0], real_torch.Tensor) else torch
    return lib.stack(items)


def step(lib, fn, x0, w0):
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    loss = (fn(x, w) ** 2).sum()
    loss.backward()
    return x.grad.numpy(), w.grad.item()


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def rss_mib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


def speed(steps, what, eager, compiled):
    rng = np.random.default_rng(0)
    x0, w0 = rng.uniform(-0.5, 0.5, steps), 0.7
    runs = {
        "ours, eager": lambda: step(torch, eager, x0, w0),
        "PyTorch, eager": lambda: step(real_torch, eager, x0, w0),
        "ours, compiled node": lambda: step(torch, compiled, x0, w0),
    }
    results = {k: f() for k, f in runs.items()}  # warm-up (compiles), and the answers
    ref = results["PyTorch, eager"]
    for name, (gx, gw) in results.items():
        assert np.allclose(gx, ref[0], rtol=1e-9, atol=1e-12) and np.isclose(gw, ref[1]), name
    times = {k: median_time(f, 3 if "eager" in k else 50) for k, f in runs.items()}
    print(f"{steps}-step recurrence, {what}, forward + backward (median):")
    for name, t in times.items():
        print(f"  {name:22s} {t * 1e3:10.3f} ms")
    node = times["ours, compiled node"]
    print(f"  compiled node vs our eager:     {times['ours, eager'] / node:8.0f}x faster")
    print(f"  compiled node vs PyTorch eager: {times['PyTorch, eager'] / node:8.0f}x faster")


def memory(calls):
    rng = np.random.default_rng(1)
    x0 = rng.uniform(-0.5, 0.5, 100)
    x = torch.tensor(x0, requires_grad=True)
    w = torch.tensor(0.7, requires_grad=True)
    tenth = max(calls // 10, 1)
    first = None
    print(f"{calls} forward + backward calls through the node (RSS, MiB):")
    for k in range(1, calls + 1):
        (compiled_recurrence(x * 1.0, w) ** 2).backward()  # scalar result
        compiled_states(x * 1.0, w).sum().backward()  # array result
        if k % tenth == 0:
            now = rss_mib()
            first = now if first is None else first
            print(f"  after {k:7d}: {now:8.1f} (growth since the first tenth {now - first:+.1f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    speed(args.steps, "loss = h[-1] ** 2 (a scalar result)", recurrence_eager,
          compiled_recurrence)
    speed(args.steps, "loss = sum(h ** 2) (an array of states)", states_eager,
          compiled_states)
    memory(args.calls)


if __name__ == "__main__":
    main()
