"""The JIT: optimise LLVM IR with the new pass manager for the host CPU, emit object code,
cache it on disk, and link it with LLJIT.

Pitfalls handled (see ../shared/notes/llvmlite-0.50.md): never call llvm.initialize(); init
the native target and asm printer once; a fresh pass builder per module (a module pass
manager runs only once); unique library names; the resource tracker is kept alive by the
function that uses its code; interpreter objects are bound as symbols at link time, never
baked into the code, so a cached object is valid in any process on the same CPU.
"""

import itertools
import sys
import threading

import llvmlite
import llvmlite.binding as llvm

from adcompile import cache

_state = {}
_names = itertools.count()
LOCK = threading.RLock()  # one JIT per process; compiles are serialised (LLVM is anyway)
OPT_LEVEL = 3


def _init():
    if "lljit" in _state:
        return _state
    with LOCK:
        if "lljit" not in _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            target = llvm.Target.from_triple(llvm.get_process_triple())
            cpu = llvm.get_host_cpu_name()
            features = llvm.get_host_cpu_features().flatten()
            tm = target.create_target_machine(cpu=cpu, features=features, opt=3,
                                              reloc="static", codemodel="jitdefault", jit=True)
            lljit = llvm.create_lljit_compiler(tm)
            _state.update(cpu=cpu, features=features, tm=tm, lljit=lljit)  # all at once
    return _state


def target_machine():
    return _init()["tm"]


def optimize(ir_text, level=OPT_LEVEL):
    """Parse, verify and optimise; returns the optimised module."""
    tm = _init()["tm"]
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def emit_object(mod):
    return _init()["tm"].emit_object(mod)


def link(obj, symbol, imports):
    """JIT-link object code; returns (address of `symbol`, tracker). Keep the tracker alive
    as long as the code may run."""
    state = _init()
    builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
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
    return cache.load(key, "o")


def cache_store(key, obj):
    cache.store(key, "o", obj)
