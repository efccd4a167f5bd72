"""The JIT: optimise LLVM IR with the new pass manager for the host CPU, emit object code,
cache it on disk, and link it with LLJIT.

A large module is cut into parts (split.py) that are optimised and code-generated on the
machine's cores at once, each in an LLVMContext and with a TargetMachine of its own; their
object files are linked into one library. llvmlite serialises every call into LLVM behind
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

import llvmlite
import llvmlite.binding as llvm
from llvmlite.binding import ffi

from adcompile import cache
from adcompile.backends.llvm import split

_state = {}
_names = itertools.count()
LOCK = threading.RLock()  # one JIT per process; one compile at a time (its parts run at once)
OPT_LEVEL = 3
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
                          part_tms=[])  # all at once
    return _state


def _new_target_machine(cpu, features):
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="static",
                                        codemodel="jitdefault", jit=True)


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


def compile_objects(ir_text, parts=None):
    """Object code for a module's IR text: one object per part (split.py), the parts
    compiled at once, the first in the calling thread."""
    with LOCK:
        state = _init()
        texts = split.parts(ir_text, part_count(ir_text) if parts is None else parts)
        if len(texts) == 1 or not _can_unlock():
            return [emit_object(optimize(text)) for text in texts]
        tms = state["part_tms"]
        while len(tms) < len(texts):
            tms.append(_new_target_machine(state["cpu"], state["features"]))
        jobs = [_Part(text, tm) for text, tm in zip(texts, tms)]
        try:
            threads = [threading.Thread(target=job.compile, daemon=True,
                                        name="adcompile-llvm") for job in jobs[1:]]
            for thread in threads:
                thread.start()
            jobs[0].compile()
            for thread in threads:
                thread.join()
            for job in jobs:
                if job.error is not None:
                    raise job.error
            return [job.object_code() for job in jobs]
        finally:
            for job in jobs:
                job.close()


class _Part:
    """One part's module, in a context of its own, and what compiling it gave."""

    def __init__(self, text, tm):
        self.tm = tm
        self.context = llvm.create_context()
        self.module = llvm.parse_assembly(text, self.context)
        self.module.verify()
        self.run = _pass_builder(tm, OPT_LEVEL, unlocked=True)
        self.buffer = self.error = None

    def compile(self):
        """Optimise and code-generate outside llvmlite's lock (see the module's docstring);
        an exception is kept for the compiling thread to raise."""
        try:
            self.run(self.module)
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
    value = os.environ.get("ADCOMPILE_LLVM_PARTS", "").strip()
    if value.isdigit():
        return max(1, int(value))
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_PARTS, ir_text.count("\n") // PART_LINES))


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
