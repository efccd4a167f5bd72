"""The bridge's backward on programs whose loops keep shadow arrays on tapes: reverse half vs
pullback.

A compiled node with an array result runs the split vjp program's forward half in its
forward call and the reverse half at backward (ad/split.py). Loops that write arrays in
place (a Gaussian mixture storing one column per component, `beta[:, k] = ...`; an RK4
integrator whose right-hand side fills a new array with slice stores) keep their shadow
arrays on tapes; until the shadow memory was handed over, these did not split and the
node's backward ran the whole pullback program, the primal included. This script measures
the node's backward both ways on the same machine, in the same process:

- split: what the bridge does now (forward half, then the reverse half at backward);
- pullback: the old path, forced (`_Facts.splittable` answering False): the forward call
  runs the primal, backward runs the pullback program (the primal again, then its reverse).

For each it prints the median CPU time (process_time; the machine is shared) of the forward
call and of backward (retain_graph, so the same node runs backward again), the programs the
backward ran (counted by a spy on the compiled callables: the primal is never among them
for the split), the programs' own times (primal, forward half, reverse half, pullback) and
how many matmul / tanh / log / strided ops the reverse half and the pullback contain.

Run: PYTHONPATH=$PWD python benchmarks/bridge_split.py [--repeats N]
"""

import argparse
import statistics
import time

import numpy as np

import adcompile as torch
from adcompile import adcompile, api, bridge
from adcompile.bridge import Derived
from tests.compiler.array_corpus import rk4_step


def gmm_rows(X, means, Ls):
    """A Gaussian mixture's log-likelihood per row (an array: the node's backward gets a
    cotangent per row), one matrix product per component stored into a row of `comp` (as
    tests/compiler/array_corpus.py's gmm_by_component stores columns)."""
    comp = np.zeros((means.shape[0], X.shape[0]))
    for k in range(means.shape[0]):
        z = (X - means[k]) @ Ls[k].T
        comp[k] = -0.5 * np.sum(z * z, axis=1)
    top = np.max(comp, axis=0)
    return top + np.log(np.sum(np.exp(comp - top), axis=0))


def rk4_final(y0, h):
    """50 RK4 steps of the array corpus's chain of springs (its right-hand side fills a new
    array with slice stores); the final state, squashed (an array)."""
    y = y0
    for _ in range(50):
        y = rk4_step(y, h)
    return np.tanh(y)


def _cases():
    rng = np.random.default_rng(0)
    gmm = (rng.normal(size=(2000, 16)), rng.normal(size=(8, 16)),
           0.3 * rng.normal(size=(8, 16, 16)))
    rk4 = (rng.normal(size=2000), np.float64(0.05))
    return {"gmm_rows": (adcompile(gmm_rows), gmm), "rk4_final": (adcompile(rk4_final), rk4)}


class _Spy:
    """Counts the compiled programs run on numpy values, by mode ("primal" for the function
    itself)."""

    def __init__(self):
        self.runs = []
        self.saved = []
        for cls, mode_of in ((Derived, lambda p: p.mode),
                             (api.CompiledFunction, lambda p: "primal")):
            original = cls.__call__

            def spy(program, *args, _original=original, _mode=mode_of):
                if not bridge.has_tensor(args):
                    self.runs.append(_mode(program))
                return _original(program, *args)

            self.saved.append((cls, original))
            cls.__call__ = spy

    def close(self):
        for cls, original in self.saved:
            cls.__call__ = original


def _median_cpu(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def _measure(cf, values, repeats):
    tensors = [torch.tensor(v, requires_grad=True) for v in values]
    out = cf(*tensors)
    seed = torch.tensor(np.random.default_rng(1).normal(size=out.shape))
    forward = _median_cpu(lambda: cf(*tensors), repeats)
    out.backward(seed, retain_graph=True)  # (warm: compiles the backward's program)
    backward = _median_cpu(lambda: out.backward(seed, retain_graph=True), repeats)
    spy = _Spy()
    try:
        out.backward(seed, retain_graph=True)
    finally:
        spy.close()
    grads = [t.grad.numpy().copy() for t in tensors]
    return forward, backward, spy.runs, grads


def _programs(cf, values, repeats):
    """The compiled programs alone, on numpy values: median CPU seconds of the primal, the
    forward half, the reverse half and the pullback, and how many matmul / tanh / log /
    strided ops the reverse half and the pullback hold."""
    active = (True,) * len(values)
    out = cf(*values)
    forward_half = Derived(cf, active, "forward")
    reverse, pullback = Derived(cf, active, "reverse"), Derived(cf, active, "pullback")
    _, residuals = forward_half(*values)
    cot = np.ones_like(out)
    runs = {"primal": lambda: cf(*values), "forward half": lambda: forward_half(*values),
            "reverse half": lambda: reverse(*values, *residuals, cot),
            "pullback": lambda: pullback(*values, cot)}
    times = {name: _median_cpu(run, repeats) for name, run in runs.items()}
    rev_ir, pullback_ir = reverse.ir(*values, *residuals, cot), pullback.ir(*values, cot)
    counts = {name: (rev_ir.count(f" {name} "), pullback_ir.count(f" {name} "))
              for name in ("matmul", "tanh", "log", "strided")}
    return times, counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    repeats = parser.parse_args().repeats
    splittable = bridge._Facts.splittable
    for name, (cf, values) in _cases().items():
        results = {}
        for path in ("split", "pullback"):
            bridge._Facts.splittable = splittable if path == "split" else \
                (lambda self, active: False)
            try:
                cf._cache.clear()  # (the facts are cached per signature)
                results[path] = _measure(cf, values, repeats)
            finally:
                bridge._Facts.splittable = splittable
        for g, h in zip(results["split"][3], results["pullback"][3]):
            assert np.array_equal(g, h), f"{name}: the gradients differ"
        print(f"{name} (shapes {[np.shape(v) for v in values]}), median CPU ms:")
        for path, (fwd, bwd, runs, _) in results.items():
            print(f"  {path:9s} forward {fwd * 1e3:8.2f}   backward {bwd * 1e3:8.2f}   "
                  f"backward ran {runs}")
        ratio = results["pullback"][1] / results["split"][1]
        print(f"  backward: pullback / split = {ratio:.1f}x; gradients bit-identical")
        times, counts = _programs(cf, values, repeats)
        print("  the programs alone, median CPU ms: " +
              ", ".join(f"{k} {t * 1e3:.2f}" for k, t in times.items()))
        print("  ops in the reverse half vs the pullback: " +
              ", ".join(f"{k} {a} vs {b}" for k, (a, b) in counts.items()))


if __name__ == "__main__":
    main()
