"""Train a 2-layer MLP (784-256-10, batch 64, float32, SGD with momentum, cross entropy) for
200 steps with adcompile and with PyTorch, in one process, from the same initial weights and
data; prints both times, the ratio (target <= 1.2x PyTorch) and the final losses.

Both libraries run on one thread (PyTorch's intra-op pool and numpy's OpenBLAS), and the
ratio is of CPU time: on a shared machine wall-clock time measures the neighbours, and an
idle BLAS thread spinning on a loaded core bills its spin to the process.

Run: python benchmarks/train_mlp.py [--steps N]
"""

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

import adcompile  # noqa: E402


def make_model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))


def batches(steps, batch=64, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((8 * batch, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 8 * batch)
    return [(data[i % 8 * batch:(i % 8 + 1) * batch], labels[i % 8 * batch:(i % 8 + 1) * batch])
            for i in range(steps)]


def train(lib, steps):
    model = make_model(lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    data = [(lib.tensor(x), lib.tensor(y)) for x, y in batches(steps)]
    start, cpu = time.perf_counter(), time.process_time()
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return time.process_time() - cpu, time.perf_counter() - start, loss.item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="runs each; the best is kept")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    train(adcompile, 5)  # warm up both (first-call costs are not what we measure)
    train(torch, 5)
    ours, theirs = [], []
    for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
        ours.append(train(adcompile, args.steps))
        theirs.append(train(torch, args.steps))
    t_ours, w_ours, loss_ours = min(ours)
    t_torch, w_torch, loss_torch = min(theirs)
    print(f"MLP 784-256-10, batch 64, {args.steps} SGD steps, best of {args.repeat} (one thread "
          f"each; load average {os.getloadavg()[0]:.1f})")
    print(f"  adcompile {t_ours:6.3f} s CPU ({w_ours:6.3f} s wall)   final loss {loss_ours:.6f}")
    print(f"  pytorch   {t_torch:6.3f} s CPU ({w_torch:6.3f} s wall)   final loss {loss_torch:.6f}")
    print(f"  ratio adcompile/pytorch = {t_ours / t_torch:.2f} CPU, {w_ours / w_torch:.2f} wall  "
          f"(target <= 1.20)")


if __name__ == "__main__":
    main()
