"""Conv2d forward+backward on a 64x3x32x32 batch (16 filters, 3x3, padding 1) and one
training step of each model example's network, with adcompile and with PyTorch, both
single-threaded, in one process; prints the median CPU times (time.process_time, so that
other load on the machine disturbs the ratios less) and the ratios (issue targets: conv2d <=
3x PyTorch, a model's training step <= 2x), with the load average at the start.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/nn_layers.py [--repeat N]
     [--separate]
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# measure this checkout's adcompile, not whichever one is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import adcompile  # noqa: E402

torch.set_num_threads(1)


def conv_case(lib):
    lib.manual_seed(0)
    conv = lib.nn.Conv2d(3, 16, 3, padding=1)
    x = lib.tensor(np.random.default_rng(0).standard_normal((64, 3, 32, 32), np.float32),
                   requires_grad=True)

    def run():
        conv.zero_grad()
        conv(x).sum().backward()

    return run


def cnn_case(lib):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 6 * 6, 10))
    return _step(lib, model, lib.randn(32, 1, 28, 28), lib.randint(0, 10, (32,)),
                 nn.CrossEntropyLoss(), lib.optim.SGD(model.parameters(), lr=0.01,
                                                      momentum=0.9))


def lstm_case(lib):
    nn = lib.nn
    lib.manual_seed(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.lstm = nn.Embedding(30, 16), nn.LSTM(16, 24, batch_first=True)
            self.head = nn.Linear(24, 30)

        def forward(self, x):
            return self.head(self.lstm(self.embed(x))[0]).reshape(-1, 30)

    model = Model()
    return _step(lib, model, lib.randint(0, 30, (16, 12)), lib.randint(0, 30, (16 * 12,)),
                 nn.CrossEntropyLoss(), lib.optim.Adam(model.parameters(), lr=0.01))


def transformer_case(lib):
    nn = lib.nn
    lib.manual_seed(0)
    attn = nn.MultiheadAttention(16, 4, batch_first=True)
    norm, ff = nn.LayerNorm(16), nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    params = list(attn.parameters()) + list(norm.parameters()) + list(ff.parameters())

    class Block(nn.Module):
        def forward(self, x):
            h = norm(x)
            x = x + attn(h, h, h, need_weights=False)[0]
            return x + ff(x)

    return _step(lib, Block(), lib.randn(16, 8, 16), lib.randn(16, 8, 16), nn.MSELoss(),
                 lib.optim.AdamW(params, lr=3e-3))


def _step(lib, model, x, y, loss_fn, opt):
    def run():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return run


def _cpu_time(run):
    start = time.process_time()
    run()
    return time.process_time() - start


def median_times(ours, theirs, repeat, separate=False):
    """Median CPU times of two runs, measured in alternation (so that a change in the
    machine's load weighs on both alike) or, with `separate`, each in a block of its own (no
    run evicts the other's data from the caches: PyTorch's conv2d is ~2x slower interleaved)."""
    for run in (ours, theirs, ours, theirs):
        run()
    if separate:
        return (statistics.median(_cpu_time(ours) for _ in range(repeat)),
                statistics.median(_cpu_time(theirs) for _ in range(repeat)))
    pairs = [(_cpu_time(ours), _cpu_time(theirs)) for _ in range(repeat)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


CASES = {"conv2d fwd+bwd 64x3x32x32": (conv_case, 3.0), "cnn train step": (cnn_case, 2.0),
         "char lstm train step": (lstm_case, 2.0),
         "transformer block train step": (transformer_case, 2.0)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--separate", action="store_true",
                        help="time each library in its own block instead of alternating")
    args = parser.parse_args()
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    for name, (make, target) in CASES.items():
        ours, theirs = median_times(make(adcompile), make(torch), args.repeat, args.separate)
        print(f"{name:32s} adcompile {ours * 1e3:8.2f} ms  torch {theirs * 1e3:8.2f} ms  "
              f"ratio {ours / theirs:5.2f} (target <= {target})")


if __name__ == "__main__":
    main()
