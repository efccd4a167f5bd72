"""The bridge: a loop-heavy differentiable function as eager ops vs as one compiled node.

A 10^4-step scalar recurrence h <- tanh(w * h + x[i]), forward + backward with respect to x
(10^4 elements) and w, twice: loss = h[-1] ** 2 (the node's result is a scalar: its forward
call runs the vjp) and loss = sum(h ** 2) over the array of all states (its forward call runs
the split program's forward half, its backward the reverse half on the taped states); and an
RNN whose state is a vector, h <- tanh(W @ h + x[t]) (8 units, 10^4 / 10 steps), loss =
sum(h ** 2) of the last state: the loop's tape holds arrays, handed over from the forward half
to the reverse half as one flat array (no primal work at backward):

- ours, eager: the loop run with Tensor operations (four nodes per step);
- PyTorch 2.13, eager: the same code with `import torch`;
- ours, compiled: the same loop under @adcompile, called with the Tensors — one
  CompiledFunctionBackward node in the eager graph.

The eager versions read x through x.unbind(0) (x[i] of a tensor that requires grad costs a
dense gradient per step in backward, in both libraries: quadratic). Prints the median wall
time and the median CPU time (process_time; the machine is shared) of each and the ratios,
checks the gradients agree, then calls the compiled nodes (forward + backward, 100-step
sequences; a scalar result, an array of states, and the RNN's vector state) --calls times and
prints the resident set size (RSS) every tenth of them: it must stay flat (each node's saved
state is freed).

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


def rnn(x, w):
    h = 0.0 * x[0]
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + x[t])
    return h


def rnn_eager(x, w):
    h = 0.0 * x[0]
    for x_t in x.unbind(0):
        h = (w @ h + x_t).tanh()
    return h


compiled_recurrence = adcompile(recurrence)
compiled_states = adcompile(states)
compiled_rnn = adcompile(rnn)


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
    return x.grad.numpy(), w.grad.numpy()


def median_time(fn, repeats):
    """(median wall seconds, median CPU seconds of this process)."""
    walls, cpus = [], []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return sorted(walls)[len(walls) // 2], sorted(cpus)[len(cpus) // 2]


def rss_mib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


def speed(steps, what, eager, compiled, units=None):
    rng = np.random.default_rng(0)
    x0, w0 = rng.uniform(-0.5, 0.5, steps), 0.7
    if units is not None:
        x0, w0 = rng.uniform(-0.5, 0.5, (steps, units)), rng.uniform(-0.3, 0.3, (units, units))
    runs = {
        "ours, eager": lambda: step(torch, eager, x0, w0),
        "PyTorch, eager": lambda: step(real_torch, eager, x0, w0),
        "ours, compiled node": lambda: step(torch, compiled, x0, w0),
    }
    results = {k: f() for k, f in runs.items()}  # warm-up (compiles), and the answers
    ref = results["PyTorch, eager"]
    for name, (gx, gw) in results.items():
        assert np.allclose(gx, ref[0], rtol=1e-9, atol=1e-12), name
        assert np.allclose(gw, ref[1], rtol=1e-5), name  # (w of tensor(0.7) is float32)
    times = {k: median_time(f, 3 if "eager" in k else 50) for k, f in runs.items()}
    print(f"{steps}-step {what}, forward + backward (median wall, median CPU):")
    for name, (wall, cpu) in times.items():
        print(f"  {name:22s} {wall * 1e3:10.3f} ms {cpu * 1e3:10.3f} ms CPU")
    for k, unit in ((0, "wall"), (1, "CPU")):
        node = times["ours, compiled node"][k]
        print(f"  compiled node vs our eager ({unit}):     "
              f"{times['ours, eager'][k] / node:8.0f}x faster")
        print(f"  compiled node vs PyTorch eager ({unit}): "
              f"{times['PyTorch, eager'][k] / node:8.0f}x faster")


def memory(calls):
    rng = np.random.default_rng(1)
    x0 = rng.uniform(-0.5, 0.5, 100)
    x = torch.tensor(x0, requires_grad=True)
    w = torch.tensor(0.7, requires_grad=True)
    xs = torch.tensor(x0.reshape(25, 4), requires_grad=True)
    ws = torch.tensor(rng.uniform(-0.3, 0.3, (4, 4)), requires_grad=True)
    tenth = max(calls // 10, 1)
    first = None
    print(f"{calls} forward + backward calls through the node (RSS, MiB):")
    for k in range(1, calls + 1):
        (compiled_recurrence(x * 1.0, w) ** 2).backward()  # scalar result
        compiled_states(x * 1.0, w).sum().backward()  # array result
        compiled_rnn(xs * 1.0, ws).sum().backward()  # a tape of arrays handed over
        if k % tenth == 0:
            now = rss_mib()
            first = now if first is None else first
            print(f"  after {k:7d}: {now:8.1f} (growth since the first tenth {now - first:+.1f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    speed(args.steps, "recurrence, loss = h[-1] ** 2 (a scalar result)", recurrence_eager,
          compiled_recurrence)
    speed(args.steps, "recurrence, loss = sum(h ** 2) (an array of states)", states_eager,
          compiled_states)
    speed(args.steps, "RNN h = tanh(W @ h + x[t]), 8 units, loss = sum(h ** 2)", rnn_eager,
          compiled_rnn, units=8)
    memory(args.calls)


if __name__ == "__main__":
    main()
