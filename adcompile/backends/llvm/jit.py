"""The JIT: optimise LLVM IR with the new pass manager for the host CPU, emit object code,
cache it on disk, and link it with LLJIT.

A large module is cut into parts (split.py) that are optimised and code-generated on the
machine's cores at once, each in an LLVMContext and with a TargetMachine of its own; their
object files are linked into one library. `Jobs` runs such module texts on worker threads
and the caller's; it also takes the batches of outlined ops the lowering finishes
(stream.py), so LLVM starts before the kernel is written. llvmlite serialises every call into LLVM behind
one lock, so the two long calls (the pass pipeline and code generation), which touch only
the part's own context, module, pass builder and target machine, are made around it; the
rest (parsing, verifying, reading the buffer) takes the lock as usual.

Pitfalls handled (see ../shared/notes/llvmlite-0.50.md): never call llvm.initialize(); init
the native target and asm printer once; a fresh pass builder per module (a module pass
manager runs only once); unique library names; the resource tracker is kept alive by the
function that uses its code; interpreter objects are bound as symbols at link time, never
baked into the code, so a cached object is valid in any process on the same CPU.
"""

import ctypes
import itertools
import os
import struct
import sys
import threading
import time

import llvmlite
import llvmlite.binding as llvm
from llvmlite.binding import ffi

from adcompile import cache
from adcompile.backends.llvm import split

_state = {}
_names = itertools.count()
LOCK = threading.RLock()  # one JIT per process; one compile at a time (its parts run at once)
OPT_LEVEL = 3
# The code that runs once per call (split.tiers: the entry point, and an array program's
# kernel, whose loops only call outlined work) is compiled with this IR pipeline and code
# generation level 0 (FastISel, the fast register allocator): a tenth of O3's time on such
# code, which runs slower; the variant compiles it again with O3 after some calls
# (compile_full, native.Variant.tier_up). ADCOMPILE_LLVM_ONCE=0 compiles it like the rest.
ONCE_LEVEL = 0
ONCE = os.environ.get("ADCOMPILE_LLVM_ONCE", "1") != "0"
# The rest (the loops that do the work) is optimised with O3 and, in a compile that a
# tier-up will follow (`quick`), code-generated at level 0 too: code generation was half of
# LLVM's time and level 0 takes a seventh of it; the code runs 1.5-2.6 times slower, until
# the tier-up generates it again at level 3 from the optimised module, kept as bitcode
# (compile_full). Only texts of QUICK_LINES lines or more (ADCOMPILE_LLVM_QUICK_LINES): a
# small module compiles fast anyway, and is not worth a tier-up. Nor a text holding a kernel
# with loops of its own (split.kernel_loops): the user's scalar loops, which level 0's
# FastISel and fast register allocator slow most, and such a program's first call can be
# long: GradBench det's gradient at ell = 10 (0.075 s a call) took 0.7 s in its first call
# with level 0 code, 0.3 s with level 3 (the rest is the first touch of its tapes' memory),
# for 0.05 s more compile.
# ADCOMPILE_LLVM_QUICK_CODEGEN=0 generates everything at level 3 at once.
QUICK_CODEGEN = os.environ.get("ADCOMPILE_LLVM_QUICK_CODEGEN", "1") != "0"
QUICK_LINES = int(os.environ.get("ADCOMPILE_LLVM_QUICK_LINES", "1000") or 0)
# Parts of a module compiled at once: ADCOMPILE_LLVM_PARTS, else the cores this process may
# run on (at most 4); a module of fewer than PART_LINES lines per part is cut into fewer
# (a thread and a second copy of the declarations cost more than they save).
PART_LINES = 2500
MAX_PARTS = 4


def _init():
    if "lljit" in _state:
        return _state
    with LOCK:
        if "lljit" not in _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            cpu = llvm.get_host_cpu_name()
            features = llvm.get_host_cpu_features().flatten()
            tm = _new_target_machine(cpu, features)
            lljit = llvm.create_lljit_compiler(tm)
            _state.update(cpu=cpu, features=features, tm=tm, lljit=lljit,
                          tms=(tm, _new_target_machine(cpu, features, 0)),
                          part_tms=[])  # all at once
    return _state


def _new_target_machine(cpu, features, level=3):
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=level,
                                        reloc="static", codemodel="jitdefault", jit=True)


class Once(str):
    """The text of a module that runs once per call (split.tiers): compiled quickly."""


class Code(bytes):
    """The object code of one part; `redo` is what a tier-up makes its final code from
    (compile_full): None when it is final, the part's `Once` text when it was compiled
    quickly, the optimised module's bitcode when only its code generation was quick."""

    redo = None


def tiered(parts_of, ir_text):
    """parts_of(the text less the code that runs once per call) and that code's text (a
    `Once`), when ONCE and split.tiers find it; else parts_of(ir_text)."""
    if not ONCE or not can_tier_up():  # (quick code that could never be replaced)
        return parts_of(ir_text)
    rest, once = split.tiers(ir_text)
    return (parts_of(rest) if rest is not None else []) + \
        ([Once(once)] if once is not None else [])


def _pipeline(text, tms, quick=False):
    """(target machine, IR level) for a text, from tms = (full, quick): a `Once` text gets
    the quick ones; any other text O3, and the quick target machine when `quick`."""
    if isinstance(text, Once):
        return tms[1], ONCE_LEVEL
    return (tms[1] if quick else tms[0]), OPT_LEVEL


def target_machine():
    return _init()["tm"]


def optimize(ir_text, level=OPT_LEVEL):
    """Parse, verify and optimise; returns the optimised module."""
    tm = _init()["tm"]
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    _pass_builder(tm, level)(mod)
    return mod


def _pass_builder(tm, level, unlocked=False):
    """A function that runs the O`level` pipeline over a module (a fresh pass builder each
    time: a module pass manager runs only once)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    if unlocked:
        return lambda mod: _raw("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    return lambda mod: mpm.run(mod, pb)


def emit_object(mod):
    return _init()["tm"].emit_object(mod)


def compile_objects(ir_text, parts=None, texts=None, quick=False):
    """Object code (`Code`) for a module's IR text: one object per part (split.py), the
    parts compiled at once, one in the calling thread. `texts`: a list that receives the
    texts compiled (the last a `Once` when the quick tier took one). `quick`: code
    generation at level 0 for the parts that are not a `Once` (QUICK_CODEGEN), for a
    caller that tiers up."""
    with LOCK:
        count = part_count(ir_text) if parts is None else parts
        made = tiered(lambda text: split.parts(text, part_count(text) if parts is None
                                               else parts), ir_text)
        if texts is not None:
            texts.extend(made)
        texts = made
        tms = _init()["tms"]
        if not _can_unlock():  # one thread, llvmlite's calls (no quick part: see tiered)
            return [Code(tms[0].emit_object(optimize(text))) for text in texts]
        if count < 2 or len(texts) == 1:  # one thread
            return [_object_code(text, tms, quick) for text in texts]
        with Jobs(min(len(texts), count) - 1, quick) as jobs:
            return jobs.finish(texts)


def compile_full(redo):
    """The final object code of a part compiled quickly, from its `Code.redo`: a `Once`
    text compiled with O3, or an optimised module's bitcode code-generated at level 3 (a
    tier-up, in a thread of its own: a context and target machine of its own, outside
    llvmlite's lock for the long calls like a part)."""
    state = _init()
    with _tier_tm_lock:
        if "tier_tm" not in state:
            state["tier_tm"] = _new_target_machine(state["cpu"], state["features"])
    tm = state["tier_tm"]
    return _object_code(redo if isinstance(redo, bytes) else str(redo), (tm, tm))


_tier_tm_lock = threading.Lock()


def can_tier_up():
    """Whether compile_full can run beside the caller's thread (see _can_unlock)."""
    return _can_unlock()


def workers():
    """How many threads besides the caller's compile a module's parts (stream.py, Jobs):
    the cores this process may run on, at most MAX_PARTS, less one; ADCOMPILE_LLVM_PARTS=N
    sets the total, ADCOMPILE_LLVM_STREAM=0 turns the streaming off (compile_objects, after
    the lowering)."""
    if os.environ.get("ADCOMPILE_LLVM_STREAM", "1") == "0" or not _can_unlock():
        return 0
    total = _configured_parts()
    return max(0, (min(_cores(), MAX_PARTS) if total is None else total) - 1)


class Jobs:
    """Module texts compiled to object code by `workers` threads, and by the caller's in
    `finish`: the lowering submits the batches of outlined ops it has finished (stream.py)
    while it goes on, then `finish` adds the parts of the kernel's module and compiles
    alongside the workers until nothing is left. The largest waiting text goes first. The
    objects come back in the order their texts were submitted (the cut, not the timing,
    decides what is in each)."""

    def __init__(self, workers, quick=False):
        state = _init()
        self.quick = quick  # (compile_objects)
        tms = state["part_tms"]
        while len(tms) < workers:
            tms.append((_new_target_machine(state["cpu"], state["features"]),
                        _new_target_machine(state["cpu"], state["features"], 0)))
        self.waiting = []  # (lines, number, text)
        self.objects = {}
        self.cpu = 0.0  # CPU seconds of the jobs, all threads
        self.errors = []
        self.submitted = 0
        self.closed = False
        self.ready = threading.Condition()
        self.threads = [threading.Thread(target=self._work, args=(tm,), daemon=True,
                                         name="adcompile-llvm") for tm in tms[:workers]]
        for thread in self.threads:
            thread.start()
        self.interval = sys.getswitchinterval() if workers else None  # (HANDOFF_SECONDS)
        if workers:
            sys.setswitchinterval(min(HANDOFF_SECONDS, self.interval))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def submit(self, text, lines):
        with self.ready:
            self.waiting.append((lines, self.submitted, text))
            self.submitted += 1
            self.ready.notify()

    def finish(self, texts):
        """Submit `texts`, compile in this thread too until no text waits, wait for the
        workers; the objects of every text submitted."""
        for text in texts:
            self.submit(text, text.count("\n"))
        tms = _init()["tms"]
        while True:
            with self.ready:
                job = self._take()
            if job is None:
                break
            self._run(job, tms)
        self.close()
        if self.errors:
            raise self.errors[0]
        return [self.objects[k] for k in sorted(self.objects)]

    def close(self):
        """Let the workers end, and wait for them: after `finish` nothing waits; after an
        error in the lowering, the texts not started are dropped (only the jobs running
        are waited for)."""
        with self.ready:
            self.closed = True
            self.waiting.clear()
            self.ready.notify_all()
        for thread in self.threads:
            thread.join()
        if self.interval is not None:
            sys.setswitchinterval(self.interval)
            self.interval = None

    def _take(self):
        if not self.waiting:
            return None
        job = max(self.waiting, key=lambda j: (j[0], -j[1]))
        self.waiting.remove(job)
        return job

    def _work(self, tms):
        while True:
            with self.ready:
                while not self.waiting and not self.closed:
                    self.ready.wait()
                job = self._take()
            if job is None:
                return
            self._run(job, tms)

    def _run(self, job, tms):
        _, number, text = job
        start = time.thread_time()
        code = error = None
        try:
            code = _object_code(text, tms, self.quick)
        except BaseException as e:  # raised by finish, in the compiling thread
            error = e.with_traceback(None)
        with self.ready:
            self.cpu += time.thread_time() - start
            if error is None:
                self.objects[number] = code
            else:
                self.errors.append(error)


# While workers compile, the interpreter's switch interval (how long a thread that holds the
# GIL keeps it once another asks for it) is this many seconds instead of Python's 5 ms. A
# worker needs the GIL between its calls into LLVM (about twenty a text: parse, verify, the
# pass builder, the pipeline, code generation, the buffer), and meanwhile the compiling
# thread runs Python (the lowering, stream.py) and holds it: at 5 ms a handoff, a worker
# waited 80-90 ms of the 0.45 s its texts took for GradBench gmm's gradient, and the cold
# compile took 0.63-0.72 s instead of 0.59. Nothing asks for the GIL while the workers are
# inside LLVM, so the compiling thread is not interrupted more often otherwise. Jobs sets
# it and puts the interval it found back when it closes (compiles hold LOCK: one at a time).
HANDOFF_SECONDS = 1e-4


def _object_code(source, tms, quick=False):
    """The object code (`Code`) of one module text (a part), compiled in this thread as
    _Part does, or of an optimised module's bitcode, only code-generated (with tms[0])."""
    part = _Part(source, tms, quick)
    try:
        part.compile()
        if part.error is not None:
            raise part.error
        code = Code(part.object_code())
        code.redo = source if isinstance(source, Once) else part.bitcode
        return code
    finally:
        part.close()


class _Part:
    """One part's module, in a context of its own, and what compiling it gave."""

    def __init__(self, source, tms, quick=False):
        self.context = llvm.create_context()
        self.bitcode = None
        if isinstance(source, bytes):  # optimised already
            self.tm, self.run, self.keep = tms[0], None, False
            self.module = llvm.parse_bitcode(source, self.context)
        else:
            quick = quick and source.count("\n") >= QUICK_LINES and \
                not split.kernel_loops(source)
            self.tm, level = _pipeline(source, tms, quick)
            self.keep = quick and not isinstance(source, Once)  # (for the tier-up)
            self.module = llvm.parse_assembly(source, self.context)
            self.module.verify()
            self.run = _pass_builder(self.tm, level, unlocked=True)
        self.buffer = self.error = None

    def compile(self):
        """Optimise and code-generate outside llvmlite's lock (see the module's docstring);
        an exception is kept for the compiling thread to raise. A part code-generated
        quickly keeps its optimised module as bitcode, before code generation changes it."""
        try:
            if self.run is not None:
                self.run(self.module)
            if self.keep:
                self.bitcode = self.module.as_bitcode()
            with ffi.OutputString() as error:
                buffer = _raw("LLVMPY_TargetMachineEmitToMemory")(self.tm, self.module, 1,
                                                                   error)
                if not buffer:
                    raise RuntimeError(f"LLVM could not emit object code: {error}")
            self.buffer = buffer
        except BaseException as e:
            self.error = e.with_traceback(None)  # no frames holding the module

    def object_code(self):
        buffer, self.buffer = self.buffer, None
        try:
            return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer),
                                    ffi.lib.LLVMPY_GetBufferSize(buffer))
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)

    def close(self):
        """Free in order: the pass builder (its analyses point into the module), the module,
        then its context; never left to the garbage collector, which may take them in any
        order."""
        if self.buffer is not None:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(self.buffer)
            self.buffer = None
        self.run = None
        self.module.close()
        self.context.close()


def part_count(ir_text):
    """How many parts a module of this text is cut into."""
    total = _configured_parts()
    if total is not None:
        return max(1, total)
    return max(1, min(_cores(), MAX_PARTS, ir_text.count("\n") // PART_LINES))


def _configured_parts():
    value = os.environ.get("ADCOMPILE_LLVM_PARTS", "").strip()
    return int(value) if value.isdigit() else None


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _raw(name):
    """llvmlite's ctypes function `name` without its lock."""
    return getattr(ffi.lib, name)._cfn


def _can_unlock():
    """Whether this llvmlite's functions can be called around its lock (its ffi keeps the
    ctypes function of each wrapper in `_cfn`); if not, parts are compiled one by one."""
    try:
        _raw("LLVMPY_RunNewModulePassManager")
        _raw("LLVMPY_TargetMachineEmitToMemory")
    except AttributeError:
        return False
    return True


def link(objects, symbol, imports):
    """JIT-link object code (a list of objects, one library); returns (address of `symbol`,
    tracker). Keep the tracker alive as long as the code may run."""
    state = _init()
    builder = llvm.JITLibraryBuilder()
    for obj in objects:
        builder.add_object_img(obj)
    builder.add_current_process()
    for name, address in imports.items():
        builder.import_symbol(name, address)
    tracker = builder.export_symbol(symbol).link(state["lljit"], f"adcompile_{next(_names)}")
    return tracker[symbol], tracker


def assembly(mod):
    return _init()["tm"].emit_assembly(mod)


# -- the on-disk cache -----------------------------------------------------------------------

def cache_key(*parts):
    state = _init()
    return cache.key_of(cache.compiler_digest(), llvmlite.__version__,
                        ".".join(map(str, llvm.llvm_version_info)), llvm.get_process_triple(),
                        state["cpu"], state["features"], f"O{OPT_LEVEL}", sys.version, *parts)


def cache_load(key):
    """The objects stored for `key` (a list), or None."""
    blob = cache.load(key, "o")
    if blob is None:
        return None
    try:
        (count,) = struct.unpack_from("<I", blob)
        sizes = struct.unpack_from(f"<{count}Q", blob, 4)
        at, objects = 4 + 8 * count, []
        for size in sizes:
            objects.append(blob[at:at + size])
            at += size
    except struct.error:
        objects, at = [], -1
    if at != len(blob) or not objects:
        cache.warn("adcompile: ignoring a compile-cache entry of another layout; compiling "
                   "instead")
        return None
    return objects


def cache_store(key, objects):
    header = struct.pack(f"<I{len(objects)}Q", len(objects), *map(len, objects))
    cache.store(key, "o", header + b"".join(objects))
