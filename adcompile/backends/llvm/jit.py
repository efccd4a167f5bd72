"""The JIT: optimise LLVM IR with the new pass manager for the host CPU, emit object code,
cache it on disk, and link it with LLJIT.

Pitfalls handled (see ../shared/notes/llvmlite-0.50.md): never call llvm.initialize(); init
the native target and asm printer once; a fresh pass builder per module (a module pass
manager runs only once); unique library names; the resource tracker is kept alive by the
function that uses its code; interpreter objects are bound as symbols at link time, never
baked into the code, so a cached object is valid in any process on the same CPU.
"""

import hashlib
import itertools
import os
import sys
import tempfile
import threading
import warnings

import llvmlite
import llvmlite.binding as llvm

_state = {}
_names = itertools.count()
LOCK = threading.RLock()  # one JIT per process; compiles are serialised (LLVM is anyway)
OPT_LEVEL = 3
_MAGIC = b"adcompile-obj-1\n"


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

def cache_dir():
    """ADCOMPILE_CACHE_DIR, or <user cache dir>/adcompile; None when caching is off
    (ADCOMPILE_CACHE_DIR=off)."""
    configured = os.environ.get("ADCOMPILE_CACHE_DIR")
    if configured is not None:
        return None if configured.strip().lower() in ("", "0", "off", "none") else configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "adcompile")


def _backend_fingerprint():
    """Changes whenever the code generator changes, so stale objects are never reused."""
    if "fingerprint" not in _state:
        here = os.path.dirname(__file__)
        digest = hashlib.sha256()
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as f:
                    digest.update(f.read())
        _state["fingerprint"] = digest.hexdigest()
    return _state["fingerprint"]


def cache_key(*parts):
    state = _init()
    digest = hashlib.sha256()
    for part in (_backend_fingerprint(), llvmlite.__version__,
                 ".".join(map(str, llvm.llvm_version_info)), llvm.get_process_triple(),
                 state["cpu"], state["features"], f"O{OPT_LEVEL}", sys.version) + parts:
        digest.update(str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


_warned = set()


def _warn(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def cache_load(key):
    """The cached object for `key`, or None. A damaged entry is reported and ignored."""
    directory = cache_dir()
    if directory is None:
        return None
    path = os.path.join(directory, key[:2], key + ".o")
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _warn(f"adcompile: cannot read the compile cache ({e}); compiling instead")
        return None
    head = len(_MAGIC) + 64
    if blob[:len(_MAGIC)] != _MAGIC or \
            hashlib.sha256(blob[head:]).hexdigest().encode() != blob[len(_MAGIC):head]:
        _warn(f"adcompile: ignoring a damaged compile-cache entry {path}; compiling instead")
        return None
    return blob[head:]


def cache_store(key, obj):
    """Write atomically (a temporary file renamed into place): concurrent processes sharing
    the directory see either nothing or a whole entry."""
    directory = cache_dir()
    if directory is None:
        return
    folder = os.path.join(directory, key[:2])
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(obj).hexdigest().encode() + obj)
            os.replace(tmp, os.path.join(folder, key + ".o"))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        _warn(f"adcompile: cannot write to the compile cache {directory} ({e}); compiled "
              f"code will not be reused by other processes")
