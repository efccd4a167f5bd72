"""GradBench's evals (gmm, lstm, ba, lse, llsq, ode, det, kmeans) for adcompile, JAX and PyTorch.

Each eval is one module in this folder, imported by `run.py` (the timing table and plots) and
by `tool.py` (GradBench's JSON-lines protocol) as a top-level module, with this folder on
`sys.path`. Every module follows one interface:

```
NAME = "gmm"
SIZES = [dict(...), ...]          # GradBench's default sizes (or the largest that run in a few minutes here), smallest first
QUICK = [dict(...)]               # one small size for --quick
def make_input(**size) -> dict    # the input JSON object exactly as GradBench's generator makes it (same algorithm and seed as SPEC.md describes)
class Adcompile:                  # __init__(self, inp) prepares (compiles) once; then timed calls
    def objective(self): ...      # returns the output in GradBench's output form
    def derivative(self): ...     # the gradient/Jacobian GradBench asks for, in its output form
class Jax: ...                    # same interface, jax.jit with float64 (jax.config.update("jax_enable_x64", True))
class Torch: ...                  # same interface, PyTorch eager float64
class Numba: ...                  # optional: objective only, the loop version compiled with numba.njit
def error(ours, ref) -> float      # relative error of an output against a reference, as SPEC's validation says
```

Notes on the interface:

- `objective()` and `derivative()` are the timed calls: they take no arguments and do all of
  the work of GradBench's primal and derivative functions on the prepared input. Their
  outputs have GradBench's output structure, with numpy arrays and numpy scalars allowed in
  place of JSON lists and numbers (encoding is not timed; `harness.to_json` encodes).
- `Adcompile.__init__` also sets `compile_cold` and `compile_warm`: the seconds the first call
  of the derivative took beyond an ordinary call (the faster of two more), on the run's clock,
  with an empty on-disk cache and then with
  the cache that first compile filled (`harness.compile_seconds`; None when
  `harness.MEASURE_COMPILE` is False, as in `tool.py`).
- `error(ours, ref)` is the largest |a - e| / max(1, |a| + |e|) over the numbers of the two
  outputs, GradBench's validation measure (which passes at 1e-4); a structural mismatch or a
  NaN is inf (`harness.spec_error` implements it for any output structure).
- Optional: `label(**size)` names a workload in the tables (default `key=value,...`) and
  `problem_size(**size)` is its x value in the plots (default: the product of the size's
  numbers).
- The functions per workload map to GradBench's names in `tool.FUNCTIONS`
  (objective/jacobian, primal/gradient, cost/dir).
"""
