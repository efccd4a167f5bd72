"""Run the GradBench evals: adcompile against JAX (jit), PyTorch (eager) and numba, one thread.

    python benchmarks/gradbench/run.py [--quick] [--evals gmm,lstm,...] [--budget SECONDS]
                                       [--cpu-time] [--fastmath]

For every eval module present (gmm, lstm, ba, lse, llsq, ode, det, kmeans; one that fails to
import is skipped with its reason) and every size (its QUICK size with --quick), this prints
each tool's objective and derivative times (the best of repeated calls after a warm-up, about
`--budget` seconds of calls each), adcompile's derivative / objective (GradBench's ratio), the
adcompile / JAX derivative ratio, GradBench's error of adcompile's outputs against JAX's and
PyTorch's, and the compile seconds of adcompile's derivative (cold and warm on-disk cache;
wall-clock, also under --cpu-time: LLVM compiles a large module's parts on all cores).
With --fastmath, adcompile is also prepared and timed a second time with fastmath=True
(subnormals flushed, as JAX's CPU code runs; LLVM may reorder float operations): those
figures are reported beside the strict ones, never in their place.

A full run (not --quick) also records its measurements per eval in results.json, merged with
those of earlier runs of other evals, and from it writes results.md (one Markdown table per
eval) and plots/<eval>.png (time against problem size, log-log). Nothing here asserts a time.
"""

import argparse
import datetime
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback

# one thread everywhere, as GradBench's published numbers: set before JAX or torch loads
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

EVALS = ["gmm", "lstm", "ba", "lse", "llsq", "ode", "det", "kmeans"]
TOOLS = ["Adcompile", "Jax", "Torch", "Numba"]
# run.py --fastmath's second preparation of a module's Adcompile class, with fastmath=True
FASTMATH = "AdcompileFastmath"
TOOL_NAMES = {"Adcompile": "adcompile", "Jax": "JAX", "Torch": "PyTorch", "Numba": "numba",
              FASTMATH: "adcompile fastmath"}
RESULTS_JSON = os.path.join(HERE, "results.json")
RESULTS_MD = os.path.join(HERE, "results.md")
PLOTS = os.path.join(HERE, "plots")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size per eval; no files")
    parser.add_argument("--evals", default=",".join(EVALS), help="comma-separated eval names")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds of calls per timing (default 0.3 quick, 1.0 full)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time calls by the process's CPU time (a shared, loaded machine)")
    parser.add_argument("--replot", action="store_true",
                        help="rewrite results.md and the plots from results.json; run nothing")
    parser.add_argument("--fastmath", action="store_true",
                        help="also time adcompile with fastmath=True (reported separately)")
    args = parser.parse_args()
    if not args.quick:  # a full run ends by plotting: say so before minutes of measuring
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error("a full run writes plots with matplotlib, which is not installed: "
                         "pip install -e '.[bench]' (or run with --quick)")
    if args.replot:
        return replot()
    budget = args.budget if args.budget is not None else (0.3 if args.quick else 1.0)
    if args.cpu_time:
        harness.CLOCK = harness.cpu_seconds
    _one_thread()
    if harness.MEASURE_COMPILE:
        print(f"adcompile start-up in this process: {harness.start_up_seconds():.2f} s (LLVM, the "
              "runtime library, scipy's BLAS: once, before the first compile; the compile "
              "seconds below are each derivative's own)", flush=True)
    for name in args.evals.split(","):
        module = _import(name.strip())
        if module is None:
            continue
        rows = [run_size(module, size, budget, args.fastmath)
                for size in _sizes(module, args.quick)]
        if not args.quick:
            record(module, rows)


def _one_thread():
    import torch

    torch.set_num_threads(1)


def _import(name):
    if not os.path.exists(os.path.join(HERE, f"{name}.py")):
        print(f"{name}: skipped (no module {name}.py)")
        return None
    try:
        return importlib.import_module(name)
    except Exception as e:  # a module in progress must not stop the others
        print(f"{name}: skipped ({type(e).__name__} on import: {e})")
        return None


def _sizes(module, quick):
    return module.QUICK if quick else module.SIZES


def label(module, size):
    """A workload's name: the module's `label(**size)` if it has one, else GradBench-like."""
    if hasattr(module, "label"):
        return module.label(**size)
    return ",".join(f"{key}={value}" for key, value in size.items())


def problem_size(module, size):
    """The plot's x value: the module's `problem_size(**size)`, else the product of the
    size's numbers."""
    if hasattr(module, "problem_size"):
        return module.problem_size(**size)
    return math.prod(v for v in size.values() if isinstance(v, (int, float)))


def script(module):
    """An eval module run as a script: its QUICK workload, or the sizes given as `name=value`
    arguments, prepared, checked and timed as run_size does (printed only). Returns the
    sizes given."""
    import torch

    torch.set_num_threads(1)
    given = {key: int(value) for key, value in (arg.split("=") for arg in sys.argv[1:])}
    run_size(module, {**module.QUICK[0], **given}, budget=0.3)
    return given


def run_size(module, size, budget, fastmath=False):
    """Prepare every tool on one workload (with `fastmath`, adcompile twice: strict, then
    fastmath=True), check adcompile's outputs and time every call."""
    name = f"{module.NAME} {label(module, size)}"
    print(f"\n{name}", flush=True)
    inp = module.make_input(**size)
    row = {"size": size, "label": label(module, size), "x": problem_size(module, size)}
    tools = {}
    for tool in TOOLS:
        if hasattr(module, tool):
            tools[tool] = _prepare(module, tool, inp, row)
    if fastmath and hasattr(module, "Adcompile"):
        tools[FASTMATH] = _prepare_fastmath(module, inp, row)
    for ours, prefix in (("Adcompile", ""), (FASTMATH, FASTMATH + ".")):
        if tools.get(ours) is not None:
            row[prefix + "compile_cold"] = tools[ours].compile_cold
            row[prefix + "compile_warm"] = tools[ours].compile_warm
            _check(module, tools, row, ours, prefix)
    for tool, prepared in tools.items():
        if prepared is None:
            continue
        for kind in ("objective", "derivative"):
            if hasattr(prepared, kind):
                row[f"{tool}.{kind}"] = _time(getattr(prepared, kind), budget, row, tool, kind)
    _print_row(row)
    return row


def _prepare_fastmath(module, inp, row):
    harness.FASTMATH = True
    try:
        return _prepare(module, FASTMATH, inp, row, cls=module.Adcompile)
    finally:
        harness.FASTMATH = False


def _prepare(module, tool, inp, row, cls=None):
    start = time.perf_counter()
    try:
        prepared = (cls or getattr(module, tool))(inp)
    except Exception as e:
        row.setdefault("failures", []).append(f"{tool}: {type(e).__name__}: {_first_line(e)}")
        print(f"  {tool} failed to prepare:")
        traceback.print_exc(limit=-3)
        return None
    print(f"  {tool:17} prepared in {time.perf_counter() - start:.2f} s", flush=True)
    return prepared


def _first_line(e):
    return str(e).strip().splitlines()[0] if str(e).strip() else ""


def _check(module, tools, row, ours="Adcompile", prefix=""):
    """GradBench's error of adcompile's outputs (tool `ours`) against JAX's and PyTorch's,
    recorded under `prefix` + "error.<ref>.<kind>"."""
    for ref in ("Jax", "Torch"):
        other = tools.get(ref)
        if other is None:
            continue
        for kind in ("objective", "derivative"):
            key = f"{prefix}error.{ref}.{kind}"
            try:
                row[key] = module.error(getattr(tools[ours], kind)(), getattr(other, kind)())
            except Exception as e:
                row[key] = math.inf
                row.setdefault("failures", []).append(
                    f"{TOOL_NAMES[ours]} vs {ref} {kind}: {type(e).__name__}: {e}")
                traceback.print_exc(limit=-3)


def _time(fn, budget, row, tool, kind):
    try:
        return harness.best_seconds(fn, budget)
    except Exception as e:
        row.setdefault("failures", []).append(f"{tool}.{kind}: {type(e).__name__}: {e}")
        traceback.print_exc(limit=-3)
        return None


def _print_row(row):
    for tool in [*TOOLS, FASTMATH]:
        objective, derivative = row.get(f"{tool}.objective"), row.get(f"{tool}.derivative")
        if objective is None and derivative is None:
            continue
        line = f"  {tool:17} objective {_ms(objective):>10}  derivative {_ms(derivative):>10}"
        if objective and derivative:
            line += f"  derivative/objective {derivative / objective:6.2f}"
        print(line)
    for ours, prefix in (("Adcompile", ""), (FASTMATH, FASTMATH + ".")):
        if f"{ours}.derivative" not in row:
            continue
        ratio = _ratio(row.get(f"{ours}.derivative"), row.get("Jax.derivative"))
        print(f"  {TOOL_NAMES[ours]}/JAX derivative {ratio}; error vs JAX "
              f"{_errors(row, 'Jax', prefix)}, vs PyTorch {_errors(row, 'Torch', prefix)}; "
              f"compile of the derivative {_seconds(row.get(prefix + 'compile_cold'))} cold, "
              f"{_seconds(row.get(prefix + 'compile_warm'))} warm", flush=True)
    for failure in row.get("failures", []):
        print(f"  FAILED {failure}")


def _ms(seconds):
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _seconds(seconds):
    return "-" if seconds is None else f"{seconds:.2f} s"


def _ratio(a, b):
    return "-" if not a or not b else f"{a / b:.2f}"


def _errors(row, ref, prefix=""):
    values = [row.get(f"{prefix}error.{ref}.{kind}") for kind in ("objective", "derivative")]
    return "/".join("-" if v is None else f"{v:.0e}" for v in values)


# -- results.json, results.md, plots ------------------------------------------------------------


def record(module, rows):
    """Merge one eval's rows into results.json and rewrite results.md and its plot."""
    name = module.NAME
    results = {}
    if os.path.exists(RESULTS_JSON):
        with open(RESULTS_JSON) as f:
            results = json.load(f)
    results[name] = {"machine": machine(), "rows": rows}
    with open(RESULTS_JSON, "w") as f:
        json.dump(results, f, indent=1, default=str)
    with open(RESULTS_MD, "w") as f:
        f.write(markdown(results))
    plot(name, rows, x_label(module))
    print(f"\nwrote {os.path.relpath(RESULTS_MD)} and plots/{name}.png")


def x_label(module):
    """The plot's x label: the first line of the module's problem_size docstring."""
    doc = getattr(getattr(module, "problem_size", None), "__doc__", None)
    return f"problem size: {doc.strip().splitlines()[0].rstrip('.')}" if doc else \
        "problem size: the product of the size's numbers"


def replot():
    """results.md and every eval's plot again from results.json (problem sizes recomputed,
    for modules that are present)."""
    with open(RESULTS_JSON) as f:
        results = json.load(f)
    for name, result in results.items():
        module = _import(name)
        for row in result["rows"]:
            if module is not None:
                row["x"] = problem_size(module, row["size"])
        plot(name, result["rows"], x_label(module))
    with open(RESULTS_MD, "w") as f:
        f.write(markdown(results))


def machine():
    """Where and when the numbers were measured."""
    import numpy as np

    versions = [f"numpy {np.__version__}"]
    for package in ("jax", "torch", "numba", "llvmlite"):
        try:
            versions.append(f"{package} {importlib.import_module(package).__version__}")
        except ImportError:
            pass
    import adcompile

    return {"date": datetime.date.today().isoformat(), "cpu": _cpu(), "cores": os.cpu_count(),
            "python": platform.python_version(), "versions": ", ".join(versions),
            "adcompile": _compiler_version(os.path.dirname(adcompile.__file__)),
            "load": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
            "clock": "CPU" if harness.CLOCK is harness.cpu_seconds else "wall-clock",
            "timing": f"batches of calls of at least {harness.BATCH * 1e3:.0f} ms"}


def _compiler_version(package):
    """The commit of the repository adcompile was imported from, marked when its compiler
    has uncommitted changes; a copy outside a repository is named by its path."""
    def git(*args):
        done = subprocess.run(["git", "-C", package, *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit is None:
        return f"imported from {package} (not a git checkout)"
    changed = git("status", "--porcelain", "--", ".")
    return commit + (" with uncommitted compiler changes" if changed else "")


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


HEADER = ("| workload | adcompile objective | adcompile derivative | adcompile ratio | "
          "JAX objective | JAX derivative | JAX ratio | PyTorch objective | PyTorch derivative "
          "| numba objective | adcompile / JAX derivative | error vs JAX, PyTorch | "
          "compile cold / warm |")


def markdown(results):
    lines = ["# GradBench evals: adcompile, JAX, PyTorch, numba", "",
             "Written by `run.py` (see README.md). Times are per call, the best of repeated "
             "timings after a warm-up (batches of calls of at least 20 ms where a table says "
             "so, CPU time then summed over every thread; single calls otherwise, whose JAX "
             "CPU times may read too low: README.md), one thread; a ratio is derivative time / objective time (GradBench's "
             "score per workload). The error is GradBench's |a - e| / max(1, |a| + |e|), the "
             "largest over the objective and the derivative (GradBench accepts 1e-4). "
             "Compile is the first call of adcompile's derivative beyond an ordinary call, "
             "with an empty on-disk cache and with the cache that filled (the least of "
             "three new compiled objects), on the wall clock.", ""]
    for name in EVALS:
        if name not in results:
            continue
        info = results[name]["machine"]
        lines += [f"## {name}", "",
                  f"{info['date']}, {info['cpu']} ({info['cores']} cores), Python "
                  f"{info['python']}, {info['versions']}; adcompile {info['adcompile']}"
                  + (f"; load average {info['load']} (1, 5, 15 min) at the end of the run"
                     if info.get("load") else "")
                  + ("; times are CPU times (run.py --cpu-time), compile times wall-clock"
                     if info.get("clock") == "CPU" else "") + (f", timed in {info['timing']}" if info.get("timing") else "")
                  + ".", "",
                  HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
        lines += [_markdown_row(row) for row in results[name]["rows"]]
        lines += _fastmath_table(results[name]["rows"])
        failures = [f"- {row['label']}: {f}" for row in results[name]["rows"]
                    for f in row.get("failures", [])]
        lines += ["", *failures, ""] if failures else [""]
    return "\n".join(lines)


def _markdown_row(row):
    def t(key):
        return _ms(row.get(key))

    def ratio(tool):
        return _ratio(row.get(f"{tool}.derivative"), row.get(f"{tool}.objective"))

    cells = [row["label"], t("Adcompile.objective"), t("Adcompile.derivative"),
             ratio("Adcompile"), t("Jax.objective"), t("Jax.derivative"), ratio("Jax"),
             t("Torch.objective"), t("Torch.derivative"), t("Numba.objective"),
             _ratio(row.get("Adcompile.derivative"), row.get("Jax.derivative")),
             _max_errors(row),
             f"{_seconds(row.get('compile_cold'))} / {_seconds(row.get('compile_warm'))}"]
    return "| " + " | ".join(cells) + " |"


FASTMATH_HEADER = ("| workload | objective | derivative | ratio | strict derivative / fastmath "
                   "derivative | fastmath / JAX derivative | error vs JAX, PyTorch | "
                   "compile cold / warm |")


def _fastmath_table(rows):
    """The fastmath=True figures of run.py --fastmath, a table of their own below the strict
    one (nothing when the run had no --fastmath)."""
    rows = [row for row in rows if f"{FASTMATH}.derivative" in row]
    if not rows:
        return []
    return ["", "adcompile with `fastmath=True` (run.py --fastmath, same run): LLVM may reorder "
            "float operations and subnormals are flushed to zero (FTZ/DAZ), as JAX's CPU code "
            "always runs. The table above is strict IEEE, the default.", "",
            FASTMATH_HEADER, "|" + "---|" * FASTMATH_HEADER.count(" | ") + "---|",
            *(_fastmath_row(row) for row in rows)]


def _fastmath_row(row):
    prefix = FASTMATH + "."
    derivative = row.get(f"{FASTMATH}.derivative")
    cells = [row["label"], _ms(row.get(f"{FASTMATH}.objective")), _ms(derivative),
             _ratio(derivative, row.get(f"{FASTMATH}.objective")),
             _ratio(row.get("Adcompile.derivative"), derivative),
             _ratio(derivative, row.get("Jax.derivative")), _max_errors(row, prefix),
             f"{_seconds(row.get(prefix + 'compile_cold'))} / "
             f"{_seconds(row.get(prefix + 'compile_warm'))}"]
    return "| " + " | ".join(cells) + " |"


def _max_errors(row, prefix=""):
    """The largest error over objective and derivative, against JAX and against PyTorch."""
    errors = [max((row.get(f"{prefix}error.{ref}.{kind}") or 0.0)
                  for kind in ("objective", "derivative"))
              if f"{prefix}error.{ref}.objective" in row else None for ref in ("Jax", "Torch")]
    return ", ".join("-" if e is None else f"{float(e):.0e}" for e in errors)


def plot(name, rows, xlabel):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    colors = {"Adcompile": "C0", "Jax": "C1", "Torch": "C2", "Numba": "C3", FASTMATH: "C4"}
    for tool, color in colors.items():
        for kind, style in (("objective", "-"), ("derivative", "--")):
            points = sorted((row["x"], row[f"{tool}.{kind}"]) for row in rows
                            if row.get(f"{tool}.{kind}"))
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, style, color=color, linewidth=1, marker="o", markersize=3,
                        label=f"{TOOL_NAMES[tool]} {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds (best of repeated calls)")
    ax.set_title(f"GradBench {name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    os.makedirs(PLOTS, exist_ok=True)
    fig.savefig(os.path.join(PLOTS, f"{name}.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    main()
