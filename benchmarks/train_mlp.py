"""Train a 2-layer MLP (784-256-10, batch 64, float32, SGD with momentum, cross entropy) for
200 steps with adcompile and with PyTorch, in one process, from the same initial weights and
data; prints both times, the ratio (target <= 1.5x PyTorch) and the final losses.

Run: python benchmarks/train_mlp.py [--steps N]
"""

import argparse
import time

import numpy as np

import adcompile


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
    start = time.perf_counter()
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return time.perf_counter() - start, loss.item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="runs each; the best is kept")
    args = parser.parse_args()
    import torch

    train(adcompile, 5)  # warm up both (first-call costs are not what we measure)
    train(torch, 5)
    ours, theirs = [], []
    for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
        ours.append(train(adcompile, args.steps))
        theirs.append(train(torch, args.steps))
    t_ours, loss_ours = min(ours)
    t_torch, loss_torch = min(theirs)
    print(f"MLP 784-256-10, batch 64, {args.steps} SGD steps, best of {args.repeat} (torch threads: "
          f"{torch.get_num_threads()})")
    print(f"  adcompile {t_ours:6.3f} s   final loss {loss_ours:.6f}")
    print(f"  pytorch   {t_torch:6.3f} s   final loss {loss_torch:.6f}")
    print(f"  ratio adcompile/pytorch = {t_ours / t_torch:.2f}  (target <= 1.50)")


if __name__ == "__main__":
    main()
