"""The JIT: optimise LLVM IR with the new pass manager for the host CPU and load it with LLJIT.

Pitfalls handled (see ../shared/notes/llvmlite-0.50.md): never call llvm.initialize(); init
the native target and asm printer once; a fresh pass builder per module (a module pass
manager runs only once); unique library names; the resource tracker is kept alive by the
callable that uses its code.
"""

import itertools

import llvmlite.binding as llvm

_state = {}
_names = itertools.count()


def _init():
    if not _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        _state["tm"] = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=3, reloc="static", codemodel="jitdefault", jit=True)
        _state["lljit"] = llvm.create_lljit_compiler(_state["tm"])
    return _state


def target_machine():
    return _init()["tm"]


def optimize(ir_text, level=2):
    """Parse, verify and optimise; returns the optimised module."""
    tm = _init()["tm"]
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def load(mod, symbol):
    """JIT-link the optimised module; returns (address, tracker). Keep the tracker alive."""
    state = _init()
    obj = state["tm"].emit_object(mod)
    tracker = (llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
               .export_symbol(symbol).link(state["lljit"], f"adcompile_{next(_names)}"))
    return tracker[symbol], tracker


def assembly(mod):
    return _init()["tm"].emit_assembly(mod)
