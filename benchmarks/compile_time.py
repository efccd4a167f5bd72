"""Compile time.

1. Front end + Python backend: from decoration to the first result for a 30-line function
   (target <= 20 ms), split by stage.
2. Growth with the length of a function: the cold compile time (on-disk cache off) of the
   primal and of `grad` of generated functions of 250, 500, 1000 and 2000 lines (straight-line
   code with branches and small loops accumulating into an array, `long_source`) on the LLVM
   backend, in CPU seconds split by stage (front end, AD, passes, LLVM IR, entry point, LLVM
   (optimisation and code generation, on every core: the outlined ops go to LLVM in batches
   while the kernel is still being lowered, stream.py, and the rest of a large module is cut
   into parts, split.py; every thread's CPU), link; "other" is the rest: printing the LLVM
   IR, the generated entry point's setup, Python overhead), with the time per line and the
   growth factor per doubling (2.0 is linear). Our stages are the calling thread's CPU.
3. The GradBench derivatives (benchmarks/gradbench, each eval's QUICK workload; issue 13's
   target: <= 1 s cold, <= 50 ms warm) and the MLP gradient of benchmarks/arrays.py ("mlp",
   its item 4): cold (an empty on-disk cache, in this process, whose LLVM is already
   initialised) in wall-clock seconds (what the user waits: LLVM compiles batches of ops
   while the kernel is lowered, and the parts of a large module, on all cores) and in CPU seconds of all threads, the CPU seconds split by
   stage as in 2, then warm twice (wall-clock): a new compiled object in
   this process reading the cache the cold compile filled, and a new Python process reading
   it (timed inside that process, after its imports). A compile is the first call's time
   less a second call's; the objective is compiled and timed the same way.
4. (--breakdown EVALS) Where a GradBench derivative's LLVM time goes: each function of its
   modules (unoptimised, after merge.identical) optimised and code-generated alone, as the
   module does it, the other functions declared, in CPU seconds summed by kind of function
   (the kernel adc.fn, the entry point, parallel pieces adc.chunk, outlined ops adc.op.<prim>,
   pairwise sums, helpers), with their number and lines of IR. The sum is close to the
   module's own optimisation and code generation (the functions are noinline).
5. (--pipelines EVALS) Other LLVM pipelines for a derivative's module (after
   merge.identical), optimised and code-generated in turn with ours (O3) in one process,
   in random order each round: each one's CPU seconds over ours', the median and quartiles
   of the rounds' ratios (a loaded machine moves single timings by 20-30 %; pairs taken
   moments apart move less). What each costs in run time is not measured here.

Run: python benchmarks/compile_time.py [--lines 250,500,1000,2000] [--profile N]
                                       [--gradbench gmm,lstm,...|all] [--only-gradbench]
                                       [--breakdown gmm,lstm,...]
                                       [--pipelines gmm,lstm,... [--rounds N]]
(--profile N also prints cProfile's hottest functions for grad of the N-line function.)
"""

import argparse
import contextlib
import cProfile
import importlib
import importlib.util
import io
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def thirty_line_section():
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


# -- growth with the length of a function ----------------------------------------------------

def long_source(lines, name="long_function"):
    """`def name(x, c)` of exactly `lines` lines (x: float64[8], c: float): blocks of
    straight-line math, a branch and a small loop accumulating into an array."""
    body = ["s = 0.0", "acc = np.zeros(4)", "t0 = c", "b0 = x[1]"]
    n = 0
    while 1 + len(body) + 10 + 1 <= lines:
        n += 1
        i, j = n % 8, (3 * n + 1) % 8
        body += [
            f"a{n} = math.sin(t{n - 1}) * x[{i}] + 0.5 * b{n - 1}",
            f"b{n} = math.tanh(a{n} * x[{j}] - b{n - 1} * 0.25)",
            f"t{n} = a{n} * b{n} + math.cos(t{n - 1}) * 0.5",
            f"if t{n} > 0:",
            f"    s += t{n} * x[{i}]",
            "else:",
            f"    s -= 0.5 * t{n} * t{n}",
            "for k in range(3):",
            f"    acc[k + {n % 2}] += a{n} * x[k + {j % 5}] - b{n} * 0.125",
            f"s = s * 0.999 + acc[{n % 4}] * 0.001",
        ]
    while 1 + len(body) + 1 < lines:
        body.append(f"s += x[{len(body) % 8}] * 0.001")
    body.append(f"return s + acc[0] - acc[3] + t{n}")
    return f"def {name}(x, c):\n" + "".join(f"    {line}\n" for line in body)


_loaded = [0]


def load_long_function(lines, directory):
    """The `lines`-line function, written to a new file in `directory` (the compiler reads
    the source) and imported."""
    _loaded[0] += 1
    path = Path(directory) / f"long_function_{lines}_{_loaded[0]}.py"
    path.write_text("import math\n\nimport numpy as np\n\n\n" + long_source(lines))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.long_function


# stage name -> (module, attribute) whose calls are timed (a missing one is skipped): the
# stages of our own code in CPU seconds of the calling thread (LLVM may be compiling the
# batches of finished ops meanwhile, on other threads: stream.py), LLVM's in CPU seconds of
# every thread (compile_objects, and the jobs of jit.Jobs wherever they ran)
STAGES = {
    "front end": ("adcompile.api", "lower_function"),
    "AD": ("adcompile.api", "vjp_function"),
    "passes": ("adcompile.passes.pipeline", "run"),
    "LLVM IR": ("adcompile.backends.llvm.native", "lower_kernel"),
    "entry": ("adcompile.backends.llvm.native", "build_entry"),
    "LLVM": ("adcompile.backends.llvm.jit", "compile_objects"),
    "link": ("adcompile.backends.llvm.jit", "link"),
}


@contextlib.contextmanager
def timed_stages():
    """Accumulate the time spent in each of STAGES' functions into the yielded dict."""
    from adcompile.backends.llvm import jit

    totals, saved = {}, []

    def wrap(stage, fn):
        clock = time.process_time if stage in ("LLVM", "link") else time.thread_time

        def timed(*args, **kwargs):
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[stage] = totals.get(stage, 0.0) + clock() - t0
        return timed

    def close(jobs):  # the jobs of a streamed compile (compile_objects' are timed whole)
        close_jobs(jobs)
        if not inside[0]:
            totals["LLVM"] = totals.get("LLVM", 0.0) + jobs.cpu
        jobs.cpu = 0.0

    inside = [0]

    def compile_objects(*args, **kwargs):
        inside[0] += 1
        try:
            return timed_compile(*args, **kwargs)
        finally:
            inside[0] -= 1

    for stage, (module_name, attribute) in STAGES.items():
        module = importlib.import_module(module_name)
        if hasattr(module, attribute):
            saved.append((module, attribute, getattr(module, attribute)))
            setattr(module, attribute, wrap(stage, getattr(module, attribute)))
    close_jobs, timed_compile = jit.Jobs.close, jit.compile_objects
    saved[:0] = [(jit.Jobs, "close", close_jobs), (jit, "compile_objects", jit.compile_objects)]
    jit.Jobs.close, jit.compile_objects = close, compile_objects
    try:
        yield totals
    finally:
        for module, attribute, fn in saved:
            setattr(module, attribute, fn)


@contextlib.contextmanager
def cache_dir(directory):
    """ADCOMPILE_CACHE_DIR set to `directory` ("off": no on-disk cache) for the block."""
    old = os.environ.get("ADCOMPILE_CACHE_DIR")
    os.environ["ADCOMPILE_CACHE_DIR"] = directory
    try:
        yield
    finally:
        if old is None:
            del os.environ["ADCOMPILE_CACHE_DIR"]
        else:
            os.environ["ADCOMPILE_CACHE_DIR"] = old


def cache_off():
    return cache_dir("off")


def cold_compile(fn, what):
    """(total seconds, {stage: seconds}) of a fresh compile of the primal or of grad, from
    adcompile() to the first result. CPU time of this process, all its threads (other
    processes do not inflate it; the LLVM stage's parts, compiled at once, add up)."""
    from adcompile import grad

    x, c = np.linspace(-1.0, 1.0, 8), 0.3
    with cache_off(), timed_stages() as stages:
        t0 = time.process_time()
        f = adcompile(fn)
        (f if what == "primal" else grad(f, argnums=(0, 1)))(x, c)
        total = time.process_time() - t0
    return total, stages


def growth_section(sizes, directory):
    adcompile(thirty_lines)(np.zeros(3), np.zeros(3), 3)  # LLVM and the imports are warm
    names = list(STAGES)
    print("\ncold compile (ADCOMPILE_CACHE_DIR=off), LLVM backend, CPU seconds by stage "
          "(x2: time / time at half the lines):")
    print(f"{'':8s}{'lines':>6s}{'total':>8s}{'ms/line':>8s}{'x2':>6s}"
          + "".join(f"{n:>10s}" for n in names) + f"{'other':>8s}")
    for what in ("primal", "grad"):
        totals = {}
        for lines in sizes:
            total, stages = cold_compile(load_long_function(lines, directory), what)
            totals[lines] = total
            half = totals.get(lines / 2)
            growth = f"{total / half:6.2f}" if half else f"{'':6s}"
            print(f"{what:8s}{lines:6d}{total:8.2f}{total / lines * 1e3:8.2f}{growth}"
                  + "".join(f"{stages.get(n, 0.0):10.2f}" for n in names)
                  + f"{total - sum(stages.values()):8.2f}")


def profile_section(lines, directory):
    from adcompile import grad

    fn = load_long_function(lines, directory)
    x, c = np.linspace(-1.0, 1.0, 8), 0.3
    profile = cProfile.Profile()
    with cache_off():
        profile.enable()
        grad(adcompile(fn), argnums=(0, 1))(x, c)
        profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(15)
    print(f"\ncProfile, grad of the {lines}-line function (cold), by own time:")
    print(out.getvalue())


# -- the GradBench derivatives ------------------------------------------------------------------

GRADBENCH = Path(__file__).resolve().parent / "gradbench"
GRADBENCH_EVALS = ("gmm", "lstm", "ba", "lse", "llsq", "ode", "det", "kmeans")


def programs_of(name):
    """(objective builder, its arguments, derivative builder, its arguments): a GradBench
    eval's, or for "mlp" benchmarks/arrays.py's MLP loss (its item 4 is this cold compile)."""
    if name != "mlp":
        return gradbench_programs(name)
    sys.path.insert(0, str(GRADBENCH.parent))
    from arrays import mlp_loss

    from adcompile import grad

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((784, 256)) * 0.05, np.zeros(256),
            rng.standard_normal((256, 10)) * 0.05, np.zeros(10),
            rng.standard_normal((64, 784)), np.eye(10)[rng.integers(0, 10, 64)])
    return (lambda: adcompile(mlp_loss)), args, \
        (lambda: grad(adcompile(mlp_loss), argnums=(0, 1, 2, 3))), args


def gradbench_programs(name):
    """(objective builder, its arguments, derivative builder, its arguments) of an eval's
    QUICK workload: each builder returns a fresh compiled callable, made as the eval's
    Adcompile class makes it. They are found by running that class with its compile
    measurement and the module's `adcompile` replaced by recorders, so nothing compiles."""
    if str(GRADBENCH) not in sys.path:
        sys.path.insert(0, str(GRADBENCH))
    module = importlib.import_module(name)
    captured, primals = {}, []

    def capture(build, args):
        captured["derivative"] = (build, args)
        return None, None, None

    saved = module.compile_seconds, module.adcompile
    module.compile_seconds = capture
    module.adcompile = lambda fn, **options: primals.append(_Recorder(fn, options)) or primals[-1]
    try:
        module.Adcompile(module.make_input(**module.QUICK[0]))
    finally:
        module.compile_seconds, module.adcompile = saved
    (primal,) = [p for p in primals if p.args is not None]
    return (lambda: adcompile(primal.fn, **primal.options)), primal.args, \
        *captured["derivative"]


class _Recorder:
    """Stands for adcompile(fn) while an eval prepares: records the first call's arguments."""

    def __init__(self, fn, options):
        self.fn, self.options, self.args = fn, options, None

    def __call__(self, *args):
        if self.args is None:
            self.args = args


def first_call_seconds(build, args):
    """Wall-clock seconds of build() and its first call beyond those of a second call."""
    return first_call_both(build, args)[1]


def first_call_both(build, args):
    """(CPU seconds of all threads, wall-clock seconds) of build() and its first call
    beyond those of a second call."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn = build()
    fn(*args)
    c1, w1 = time.process_time(), time.perf_counter()
    fn(*args)
    c2, w2 = time.process_time(), time.perf_counter()
    return max((c1 - c0) - (c2 - c1), 0.0), max((w1 - w0) - (w2 - w1), 0.0)


def gradbench_section(names):
    from adcompile.backends.llvm import blaslib, pool as thread_pool

    adcompile(thirty_lines)(np.zeros(3), np.zeros(3), 3)  # LLVM and the imports are warm
    stages = list(STAGES)
    print("\nGradBench derivatives (QUICK workloads), compile seconds: cold (empty on-disk "
          "cache) wall-clock and CPU of all threads, the CPU by stage; warm (wall-clock) in "
          "this process and in a new one (target <= 1 s cold, <= 0.05 s warm):")
    print(f"{'':20s}{'cold':>7s}{'CPU':>7s}" + "".join(f"{n:>10s}" for n in stages)
          + f"{'other':>7s}{'warm':>8s}{'warm new':>9s}")
    for name in names:
        try:
            programs = programs_of(name)
        except Exception as e:  # an eval in progress (or without its data) must not stop others
            print(f"{name}: skipped ({type(e).__name__}: {e})")
            continue
        for what, build, args in (("objective", *programs[:2]), ("derivative", *programs[2:])):
            with tempfile.TemporaryDirectory(prefix="adcompile-compile-time-") as directory:
                with cache_dir(directory), timed_stages() as times:
                    cold_cpu, cold = first_call_both(build, args)
                with cache_dir(directory):
                    warm = first_call_seconds(build, args)
                    # as in a user's cache after their first run: the thread pool's object
                    # code too (this process built it before `directory` existed; without
                    # it the new process would build it, 40-80 ms of every "warm new"), and
                    # the copy of the BLAS (copying it takes 25-40 ms)
                    thread_pool.store_in_cache()
                    blaslib.store_in_cache()
                fresh = warm_in_new_process(name, what, directory)
            print(f"{name + ' ' + what:20s}{cold:7.2f}{cold_cpu:7.2f}"
                  + "".join(f"{times.get(n, 0.0):10.2f}" for n in stages)
                  + f"{cold_cpu - sum(times.values()):7.2f}{warm:8.3f}{fresh:9.3f}",
                  flush=True)


def warm_in_new_process(name, what, directory):
    """The warm compile seconds measured by a new Python process (see warm_child)."""
    env = dict(os.environ, ADCOMPILE_CACHE_DIR=directory)
    done = subprocess.run([sys.executable, __file__, "--warm-child", name, what], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr)
        return float("nan")
    return float(done.stdout.split()[-1])


def warm_child(name, what):
    """In a new process, after the imports and before anything compiles: the first-call
    seconds of the eval's `what` (objective or derivative), printed. The imports include
    those adcompile makes on first use: its LLVM backend, and scipy.linalg for matrix
    products (about 0.1 s more for a program with a product when they are not imported)."""
    importlib.import_module("adcompile.backends.llvm.native")
    with contextlib.suppress(ImportError):
        importlib.import_module("scipy.linalg.cython_blas")
    programs = programs_of(name)
    build, args = programs[:2] if what == "objective" else programs[2:]
    print(first_call_seconds(build, args))


# -- where a derivative's LLVM time goes, function by function ---------------------------------

_DEFINE = re.compile(r'^define (?:internal )?(\{[^}]*\}|\S+) @"([^"]+)"\((.*)\)(.*)$')
_PARAM_NAME = re.compile(r' %"[^"]*"')
_KIND = re.compile(r"^(adc\.(?:op\.\w+|fn|entry|chunk|pairwise_tree|pairwise|sum_calls))\b")


def breakdown_section(names):
    from adcompile.backends.llvm import native

    print("\nLLVM CPU seconds of each GradBench derivative (QUICK workload), its functions "
          "optimised and code-generated one at a time, by kind:")
    for name in names:
        build, args = programs_of(name)[2:]
        with recorded_variants(native) as variants, cache_off():
            build()(*args)
        rows, total = {}, [0.0, 0.0]
        for variant in variants:
            for kind, lines, opt, codegen in function_costs(variant):
                row = rows.setdefault(kind, [0, 0, 0.0, 0.0])
                row[0], row[1], row[2], row[3] = row[0] + 1, row[1] + lines, row[2] + opt, \
                    row[3] + codegen
                total[0], total[1] = total[0] + opt, total[1] + codegen
        print(f"{name}: {len(variants)} module(s), "
              f"{sum(r[0] for r in rows.values())} functions, "
              f"{sum(r[1] for r in rows.values())} lines; optimisation {total[0]:.2f} s, "
              f"code generation {total[1]:.2f} s")
        for kind, (count, lines, opt, codegen) in sorted(rows.items(),
                                                         key=lambda kv: -sum(kv[1][2:])):
            print(f"  {kind:22s}{count:5d} fn{lines:7d} lines{opt:7.2f} s opt{codegen:7.2f} s "
                  f"codegen", flush=True)


# name -> (speed level, {PipelineTuningOptions field: value}, {LLVM option: value}, every
# function optnone); the LLVM options are set back to these defaults after each compile
PIPELINE_DEFAULTS = {"-enable-epilogue-vectorization": "true",
                     "-enable-nontrivial-unswitch": "false"}
PIPELINES = {
    "ours (O3)": (3, {}, {}, False),
    "O2": (2, {}, {}, False),
    "O2 + non-trivial unswitching": (2, {}, {"-enable-nontrivial-unswitch": "true"}, False),
    "O1": (1, {}, {}, False),
    "no epilogue vectorisation": (3, {}, {"-enable-epilogue-vectorization": "false"}, False),
    "no unrolling": (3, {"loop_unrolling": False}, {}, False),
    "no interleaving": (3, {"loop_interleaving": False}, {}, False),
    "every function optnone": (3, {}, {}, True),
}


def pipelines_section(names, rounds):
    import random

    from adcompile.backends.llvm import native, merge

    print(f"\nLLVM CPU seconds of each GradBench derivative's module under other pipelines, "
          f"over ours (O3): median [quartiles] of {rounds} rounds")
    for name in names:
        build, args = programs_of(name)[2:]
        with recorded_variants(native) as variants, cache_off():
            build()(*args)
        text = merge.identical(str(variants[0].llvm_module()))
        seconds = {choice: [] for choice in PIPELINES}
        for _ in range(rounds):
            for choice in random.sample(list(PIPELINES), len(PIPELINES)):
                seconds[choice].append(pipeline_seconds(text, *PIPELINES[choice]))
        ours = seconds["ours (O3)"]
        print(f"{name}: ours {sorted(ours)[len(ours) // 2]:.2f} s", flush=True)
        for choice, times in seconds.items():
            ratios = sorted(t / o for t, o in zip(times, ours))
            print(f"  {choice:30s}{ratios[len(ratios) // 2]:6.2f} "
                  f"[{ratios[len(ratios) // 4]:.2f}, {ratios[3 * len(ratios) // 4]:.2f}]")


def pipeline_seconds(text, level, tuning, options, optnone):
    """CPU seconds to parse, optimise and code-generate `text` under one pipeline."""
    import llvmlite.binding as llvm

    from adcompile.backends.llvm import jit

    if optnone:
        text = re.sub(r"^(define [^\n]*\))( noinline| optnone| optsize)*", r"\1 noinline optnone",
                      text, flags=re.M)
    for option, value in options.items():
        llvm.set_option("", f"{option}={value}")
    try:
        t0 = time.process_time()
        module = llvm.parse_assembly(text)
        module.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=level)
        pto.loop_vectorization, pto.slp_vectorization = True, False
        for field, value in tuning.items():
            setattr(pto, field, value)
        builder = llvm.create_pass_builder(jit.target_machine(), pto)
        builder.getModulePassManager().run(module, builder)
        jit.emit_object(module)
        return time.process_time() - t0
    finally:
        for option in options:
            llvm.set_option("", f"{option}={PIPELINE_DEFAULTS[option]}")


@contextlib.contextmanager
def recorded_variants(native):
    """The native.Variant objects made in the block (one per compiled module)."""
    made, init = [], native.Variant.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    native.Variant.__init__ = recording
    try:
        yield made
    finally:
        native.Variant.__init__ = init


def function_costs(variant):
    """(kind, lines, optimisation seconds, codegen seconds) of each function of a variant's
    module, each compiled alone with the others declared."""
    from adcompile.backends.llvm import jit, merge

    header, functions = split_functions(merge.identical(str(variant.llvm_module())))
    for k, (define, body) in enumerate(functions):
        others = [declaration(d) for j, (d, _) in enumerate(functions) if j != k]
        text = "\n".join(header + others + [define.replace(" internal ", " ", 1), *body])
        t0 = time.process_time()
        module = jit.optimize(text + "\n")
        t1 = time.process_time()
        jit.emit_object(module)
        kind = _KIND.match(_DEFINE.match(define).group(2))
        yield (kind.group(1) if kind else "helpers"), len(body), t1 - t0, \
            time.process_time() - t1


def split_functions(text):
    """(lines outside function definitions, [(define line, body lines)])."""
    header, functions, body = [], [], None
    for line in text.splitlines():
        if line.startswith("define "):
            body = []
            functions.append((line, body))
        elif body is not None:
            body.append(line)
            if line == "}":
                body = None
        else:
            header.append(line)
    return header, functions


def declaration(define):
    """`declare` for a definition's first line (external: the declared body is elsewhere)."""
    result, name, params, _ = _DEFINE.match(define).groups()
    return f'declare {result} @"{name}"({_PARAM_NAME.sub("", params)})'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", default="250,500,1000,2000",
                        help="comma-separated function lengths for the growth section")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="also profile grad of the N-line function")
    parser.add_argument("--gradbench", default="all", metavar="EVALS",
                        help="comma-separated GradBench evals (and 'mlp') for section 3 "
                             "('all', 'none')")
    parser.add_argument("--only-gradbench", action="store_true", help="run section 3 only")
    parser.add_argument("--breakdown", default="", metavar="EVALS",
                        help="comma-separated GradBench evals: only section 4, the LLVM time "
                             "of each derivative by kind of function")
    parser.add_argument("--pipelines", default="", metavar="EVALS",
                        help="comma-separated GradBench evals: only section 5, other LLVM "
                             "pipelines' compile time over ours")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of section 5")
    parser.add_argument("--warm-child", nargs=2, metavar=("EVAL", "WHAT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm_child:
        return warm_child(*args.warm_child)
    if args.pipelines:
        return pipelines_section([n.strip() for n in args.pipelines.split(",")], args.rounds)
    if args.breakdown:
        return breakdown_section([n.strip() for n in args.breakdown.split(",")])
    if not args.only_gradbench:
        thirty_line_section()
        with tempfile.TemporaryDirectory() as directory:
            growth_section([int(n) for n in args.lines.split(",")], directory)
            if args.profile:
                profile_section(args.profile, directory)
    if args.gradbench != "none":
        names = (*GRADBENCH_EVALS, "mlp") if args.gradbench == "all" else \
            args.gradbench.split(",")
        gradbench_section([n.strip() for n in names])


if __name__ == "__main__":
    main()
