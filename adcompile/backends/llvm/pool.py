"""The native thread pool that runs the chunks of parallel loops (LLVM backend).

Compiled code runs with the GIL released, so its workers must be native threads that never
touch the interpreter. The pool is written in LLVM IR (no C compiler at install time), built
and linked once per process on first use (its object code is cached like any kernel's), and
driven through POSIX threads, mutexes and condition variables of the C library:

    i32 adc_parallel_for(chunk, env, n, work, cap)

runs `i32 chunk(env, lo, hi)` over [0, n) in pieces and returns 0 or the status of the
failing piece that comes first in [0, n) (so the error is the one a serial run raises). The
caller works too; `cap` > 0 limits the threads (a function's `parallel=N`). It runs
`chunk(env, 0, n)` in the calling thread when the pool's thread count is 1, `work` (elements)
is below the pool's threshold, or the pool is busy with another caller (a second Python
thread, or a parallel loop inside a chunk): calls never wait for each other and never
deadlock. Workers start on first need and sleep on a condition variable between jobs.

The same library holds `adc_block_release`, the destructor of the capsules that own the large
blocks compiled code hands to numpy (memory.py): it must outlive every kernel, as such a capsule
may outlive the kernel that made it. It is also the runtime library: the helpers every kernel
calls (`adc.rt.buffer`, `adc.rt.unbuffer`, `adc.rt.slabs_done`, `adc.rt.chunk_zero`; see
values.shared) are defined here once, and kernels only declare them.

Whether results may depend on where pieces start is the caller's business (parallel.py only
hands the pool loops whose elements are independent, and fixed pieces of pairwise sums).

The settings (threads, the element threshold, the pairwise unit) live in the pool's globals
and are set from Python (set_num_threads ...). After os.fork the child's pool has no workers:
its state is reinitialised (os.register_at_fork) and workers start again when needed.
"""

import ctypes
import os
import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir

from adcompile.backends.llvm import fpenv, jit
from adcompile.backends.llvm.pairwise import while_loop
from adcompile.backends.llvm import capi
from adcompile.backends.llvm.entry import SLABS_DONE_FN, keep_newest_large, slabs_done_fn
from adcompile.backends.llvm.memory import (BUFFER_FN, LARGE_BYTES, LARGE_CACHE, LARGE_KEPT,
                                            SLAB_CACHE, TAG, TR_BASE, TR_CLASS, TR_NEXT,
                                            UNBUFFER_FN, MemoryLowering)
from adcompile.backends.llvm.values import I1, I8, I32, I64, OK, PTR, external, i64, opaque, \
    shared

MAX_WORKERS = 256
SYNC_BYTES = 128  # room for a pthread_mutex_t / pthread_cond_t (40-64 bytes on the usual ABIs)
CHUNKS_PER_THREAD = 4  # pieces per thread, for balance on a machine others use too
DEFAULT_MIN_WORK = 1 << 15  # elements: smaller loops stay in the calling thread
DEFAULT_UNIT = 1 << 13  # elements: the least size of one piece of a parallel pairwise sum
ZERO_BLOCK = 1 << 16  # bytes one piece of a zero fill sets
ZERO_ENV = ir.LiteralStructType([PTR, I64])
ZERO_CHUNK_FN = "adc.rt.chunk_zero"
RUNTIME = (BUFFER_FN, UNBUFFER_FN, SLABS_DONE_FN, ZERO_CHUNK_FN)  # values.shared's helpers
_EXPORTS = ("adc_parallel_for", "adc_parallel_unit", "adc_pool_init", "adc_pool_set",
            "adc_pool_workers", "adc_block_release", *RUNTIME)
_GLOBALS = {"threads": 1, "min_work": DEFAULT_MIN_WORK, "unit": DEFAULT_UNIT, "gen": 0,
            "busy": 0, "active": 0, "nworkers": 0, "job_n": 0, "job_size": 0,
            "job_chunks": 0, "next": 0, "fail_chunk": 0}
CHUNK_FN = ir.FunctionType(I32, [PTR, I64, I64])
WORKER_FN = ir.FunctionType(PTR, [PTR])
SLOT = ir.LiteralStructType([I64, I64, I64])  # a worker's index, the generation it last saw,
# its pthread_t


class FunctionPointer(ir.types._TypedPointerType):
    """A `ptr` that llvmlite lets us call (it wants the function type of an indirect callee);
    printed as the opaque `ptr` LLVM reads."""

    def _to_string(self):
        return "ptr"


class _Pool:
    """The IR of the pool module, one method per function."""

    def __init__(self):
        self.m = ir.Module(name="adc.pool")
        self.m.adc_runtime = True  # values.shared defines the kernels' helpers here
        self.m.triple = llvm.get_process_triple()
        self.m.data_layout = str(jit.target_machine().target_data)
        self.g = {}
        for name, value in _GLOBALS.items():
            self.g[name] = self.global_(I64, f"adc.pool.{name}", ir.Constant(I64, value))
        for name in ("mutex", "submit", "work", "done"):
            self.g[name] = self.global_(ir.ArrayType(ir.IntType(8), SYNC_BYTES),
                                        f"adc.pool.{name}", None, align=16)
        self.g["fn"] = self.global_(PTR, "adc.pool.fn", ir.Constant(PTR, None))
        self.g["env"] = self.global_(PTR, "adc.pool.env", ir.Constant(PTR, None))
        self.g["status"] = self.global_(I32, "adc.pool.status", ir.Constant(I32, 0))
        self.g["slots"] = self.global_(ir.ArrayType(SLOT, MAX_WORKERS), "adc.pool.slots", None)

    def global_(self, typ, name, init, align=8):
        g = ir.GlobalVariable(self.m, typ, name=name)
        g.linkage = "internal"
        g.initializer = init if init is not None else ir.Constant(typ, None)
        g.align = align
        return opaque(g)

    def libc(self, name, ret, args):
        fn = self.m.globals.get(name)
        return fn if fn is not None else ir.Function(self.m, ir.FunctionType(ret, args), name)

    def call(self, b, name, *args, ret=I32):
        return b.call(self.libc(name, ret, [a.type for a in args]), list(args))

    def load(self, b, name):
        return b.load(self.g[name], typ=self.g_type(name))

    def store(self, b, name, value):
        b.store(value, self.g[name])

    def g_type(self, name):
        return {"fn": PTR, "env": PTR, "status": I32}.get(name, I64)

    def function(self, name, fnty, export=True):
        fn = ir.Function(self.m, fnty, name=name)
        if not export:
            fn.linkage = "internal"
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def build(self):
        self.build_run()
        self.build_worker()
        self.build_init()
        self.build_set()
        self.build_for()
        self.build_block_release()
        self.build_runtime()
        fn, b = self.function("adc_parallel_unit", ir.FunctionType(I64, []))
        b.ret(self.load(b, "unit"))
        fn, b = self.function("adc_pool_workers", ir.FunctionType(I64, []))
        b.ret(self.load(b, "nworkers"))
        return self.m

    def build_runtime(self):
        """The helpers every kernel calls, defined here once (values.shared)."""
        helpers = _Helpers(self)
        helpers.buffer_fn()
        helpers.unbuffer_fn()
        slabs_done_fn(self.m)
        zero_chunk(self.m)

    def build_block_release(self):
        """adc_block_release(capsule): a returned large block numpy no longer uses goes on the
        process's cache of free large blocks (pushed with compare-and-swap: entry points take
        and give back the whole list with an exchange, so no ABA), unless the cache would then
        hold more than LARGE_KEPT bytes: then the block goes at the head of the cache's list,
        and the blocks released longest ago past the first LARGE_KEPT bytes are freed (a
        process that ran ever larger workloads, GradBench ba1 to ba14, kept its first sizes'
        blocks and freed the one its current size's every call needs again: 330 000 page
        faults in five calls at ba13)."""
        fn, b = self.function("adc_block_release", ir.FunctionType(ir.VoidType(), [PTR]))
        trailer = self.call(b, "PyCapsule_GetPointer", fn.args[0], ir.Constant(PTR, None),
                            ret=PTR)

        def slot(k):
            return b.gep(trailer, [i64(k)], source_etype=I64)

        size = b.neg(b.load(slot(TR_CLASS), typ=I64))
        cache, held = external(self.m, LARGE_CACHE), external(self.m, LARGE_BYTES)
        before = b.atomic_rmw("add", held, size, "seq_cst")
        with b.if_else(b.icmp_signed(">", b.add(before, size), i64(LARGE_KEPT))) as (drop, keep):
            with drop:  # the block goes first, the cache's oldest go
                b.atomic_rmw("sub", held, size, "seq_cst")
                b.store(b.atomic_rmw("xchg", cache, ir.Constant(PTR, None), "seq_cst"),
                        slot(TR_NEXT))
                keep_newest_large(self.m, b, trailer, self.libc("free", ir.VoidType(), [PTR]))
            with keep:
                push = b.append_basic_block("push")
                b.branch(push)
                b.position_at_end(push)
                null = ir.Constant(PTR, None)  # an atomic read: swaps null for null only
                head = b.extract_value(b.cmpxchg(cache, null, null, "seq_cst", "seq_cst"), 0)
                b.store(head, slot(TR_NEXT))
                swapped = b.cmpxchg(cache, head, trailer, "seq_cst", "seq_cst")
                pushed = b.append_basic_block("pushed")
                b.cbranch(b.extract_value(swapped, 1), pushed, push)
                b.position_at_end(pushed)
        b.ret_void()

    def build_init(self):
        """(Re)initialise the mutexes and conditions; no workers (also in a forked child)."""
        fn, b = self.function("adc_pool_init", ir.FunctionType(ir.VoidType(), []))
        null = ir.Constant(PTR, None)
        for name in ("mutex", "submit"):
            self.call(b, "pthread_mutex_init", self.g[name], null)
        for name in ("work", "done"):
            self.call(b, "pthread_cond_init", self.g[name], null)
        for name in ("nworkers", "busy", "active"):
            self.store(b, name, i64(0))
        b.ret_void()

    def build_set(self):
        fn, b = self.function("adc_pool_set", ir.FunctionType(ir.VoidType(), [I64] * 3))
        for name, value in zip(("threads", "min_work", "unit"), fn.args):
            self.store(b, name, value)
        b.ret_void()

    def build_run(self):
        """adc.pool.run(chunk, env, n, size, chunks): take pieces until none is left; a
        failing piece records its status when it comes before the failures seen so far, and
        pieces after a failure are skipped (a serial run would not have reached them)."""
        fn, b = self.function("adc.pool.run", ir.FunctionType(ir.VoidType(), [PTR, PTR, I64,
                                                                               I64, I64]),
                              export=False)
        chunk, env, n, size, chunks = fn.args
        chunk.type = FunctionPointer(CHUNK_FN)
        head = b.append_basic_block("take")
        b.branch(head)
        b.position_at_end(head)
        c = b.atomic_rmw("add", self.g["next"], i64(1), "monotonic")
        with b.if_then(b.icmp_signed(">=", c, chunks)):
            b.ret_void()
        failed = b.load_atomic(self.g["fail_chunk"], "monotonic", 8, typ=I64)
        with b.if_then(b.icmp_signed("<", c, failed)):
            lo = b.mul(c, size)
            hi = b.add(lo, size)
            hi = b.select(b.icmp_signed("<", hi, n), hi, n)
            status = b.call(chunk, [env, lo, hi])
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(I32, 0)), likely=False):
                self.call(b, "pthread_mutex_lock", self.g["mutex"])
                first = b.icmp_signed("<", c, self.load(b, "fail_chunk"))
                with b.if_then(first):
                    b.atomic_rmw("xchg", self.g["fail_chunk"], c, "monotonic")
                    self.store(b, "status", status)
                self.call(b, "pthread_mutex_unlock", self.g["mutex"])
        b.branch(head)

    def build_worker(self):
        """A worker: sleep until the generation moves on; join the job (busy + 1) while it is
        open and the worker's index is below its `active`; the last to finish wakes the
        caller. The caller closes the job (active = 0) once it finds no piece left, then waits
        only for the workers that joined: one the system has not scheduled yet does not hold
        it up."""
        fn, b = self.function("adc.pool.worker", WORKER_FN, export=False)
        fpenv.reset(self.m, b)  # not the FTZ of a fastmath kernel that started it
        slot = fn.args[0]
        index = b.load(b.gep(slot, [i64(0), ir.Constant(I32, 0)], source_etype=SLOT), typ=I64)
        seen = b.gep(slot, [i64(0), ir.Constant(I32, 1)], source_etype=SLOT)
        self.call(b, "pthread_mutex_lock", self.g["mutex"])
        wait = b.append_basic_block("wait")
        b.branch(wait)
        b.position_at_end(wait)
        gen = self.load(b, "gen")
        with b.if_then(b.icmp_signed("==", gen, b.load(seen, typ=I64))):
            self.call(b, "pthread_cond_wait", self.g["work"], self.g["mutex"])
            b.branch(wait)
        b.store(gen, seen)
        with b.if_then(b.icmp_signed(">=", index, self.load(b, "active"))):
            b.branch(wait)
        self.store(b, "busy", b.add(self.load(b, "busy"), i64(1)))
        job = [self.load(b, name) for name in ("fn", "env", "job_n", "job_size", "job_chunks")]
        self.call(b, "pthread_mutex_unlock", self.g["mutex"])
        b.call(self.m.globals["adc.pool.run"], job)
        self.call(b, "pthread_mutex_lock", self.g["mutex"])
        busy = b.sub(self.load(b, "busy"), i64(1))
        self.store(b, "busy", busy)
        with b.if_then(b.icmp_signed("==", busy, i64(0))):
            self.call(b, "pthread_cond_signal", self.g["done"])
        b.branch(wait)

    def build_for(self):
        fn, b = self.function("adc_parallel_for", ir.FunctionType(I32, [PTR, PTR, I64, I64,
                                                                         I64]))
        chunk, env, n, work, cap = fn.args
        chunk.type = FunctionPointer(CHUNK_FN)
        threads = self.load(b, "threads")
        capped = b.and_(b.icmp_signed(">", cap, i64(0)), b.icmp_signed("<", cap, threads))
        threads = b.select(capped, cap, threads)
        alone = b.or_(b.icmp_signed("<=", threads, i64(1)), b.icmp_signed("<=", n, i64(1)))
        alone = b.or_(alone, b.icmp_signed("<", work, self.load(b, "min_work")))
        serial = b.append_basic_block("serial")
        with b.if_then(b.not_(alone)):
            busy = self.call(b, "pthread_mutex_trylock", self.g["submit"])
            with b.if_then(b.icmp_signed("==", busy, ir.Constant(I32, 0))):
                b.ret(self.submit(b, chunk, env, n, threads))
        b.branch(serial)
        b.position_at_end(serial)
        b.ret(b.call(chunk, [env, i64(0), n]))

    def submit(self, b, chunk, env, n, threads):
        """Under the submit lock: start missing workers, publish the job, work, wait."""
        want = b.sub(threads, i64(1))
        want = b.select(b.icmp_signed(">", want, i64(MAX_WORKERS)), i64(MAX_WORKERS), want)
        self.spawn(b, want)
        workers = self.load(b, "nworkers")
        active = b.select(b.icmp_signed("<", workers, want), workers, want)
        chunks = b.mul(b.add(active, i64(1)), i64(CHUNKS_PER_THREAD))
        chunks = b.select(b.icmp_signed("<", n, chunks), n, chunks)
        size = b.sdiv(b.sub(b.add(n, chunks), i64(1)), chunks)
        chunks = b.sdiv(b.sub(b.add(n, size), i64(1)), size)
        self.call(b, "pthread_mutex_lock", self.g["mutex"])
        for name, value in (("fn", chunk), ("env", env), ("job_n", n), ("job_size", size),
                            ("job_chunks", chunks), ("next", i64(0)), ("fail_chunk", chunks),
                            ("status", ir.Constant(I32, 0)), ("busy", i64(0)),
                            ("active", active)):
            self.store(b, name, value)
        self.store(b, "gen", b.add(self.load(b, "gen"), i64(1)))
        self.call(b, "pthread_cond_broadcast", self.g["work"])
        self.call(b, "pthread_mutex_unlock", self.g["mutex"])
        b.call(self.m.globals["adc.pool.run"], [chunk, env, n, size, chunks])
        self.call(b, "pthread_mutex_lock", self.g["mutex"])
        self.store(b, "active", i64(0))  # the job is closed: who has not joined never will
        wait = b.append_basic_block("join")
        done = b.append_basic_block("joined")
        b.branch(wait)
        b.position_at_end(wait)
        with b.if_then(b.icmp_signed(">", self.load(b, "busy"), i64(0))):
            self.call(b, "pthread_cond_wait", self.g["done"], self.g["mutex"])
            b.branch(wait)
        b.branch(done)
        b.position_at_end(done)
        failed = b.icmp_signed("<", self.load(b, "fail_chunk"), chunks)
        status = b.select(failed, self.load(b, "status"), ir.Constant(I32, 0))
        self.call(b, "pthread_mutex_unlock", self.g["mutex"])
        self.call(b, "pthread_mutex_unlock", self.g["submit"])
        return status

    def spawn(self, b, want):
        """Start workers until there are `want` (fewer if the system refuses a thread)."""
        refused = opaque(b.alloca(ir.IntType(1)))
        b.store(ir.Constant(ir.IntType(1), 0), refused)

        def more():
            return b.and_(b.icmp_signed("<", self.load(b, "nworkers"), want),
                          b.not_(b.load(refused, typ=ir.IntType(1))))

        def one():
            k = self.load(b, "nworkers")
            slot = b.gep(self.g["slots"], [i64(0), k],
                         source_etype=ir.ArrayType(SLOT, MAX_WORKERS))
            field = [b.gep(slot, [i64(0), ir.Constant(I32, j)], source_etype=SLOT)
                     for j in range(3)]
            b.store(k, field[0])
            b.store(self.load(b, "gen"), field[1])
            made = self.call(b, "pthread_create", field[2], ir.Constant(PTR, None),
                             self.m.globals["adc.pool.worker"], slot)
            with b.if_else(b.icmp_signed("!=", made, ir.Constant(I32, 0))) as (failed, ok):
                with failed:
                    b.store(ir.Constant(ir.IntType(1), 1), refused)
                with ok:
                    self.call(b, "pthread_detach", b.load(field[2], typ=I64))
                    self.store(b, "nworkers", b.add(k, i64(1)))

        while_loop(b, more, one)


def zero_chunk(module):
    """adc.rt.chunk_zero(env {data, bytes}, lo, hi): memset of blocks lo..hi-1 (in the
    runtime library: values.shared)."""
    return shared(module, ZERO_CHUNK_FN, CHUNK_FN, _build_zero_chunk)


def _build_zero_chunk(fn):
    module = fn.module
    env, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    data = b.load(b.gep(env, [i64(0), ir.Constant(I32, 0)], source_etype=ZERO_ENV), typ=PTR)
    size = b.load(b.gep(env, [i64(0), ir.Constant(I32, 1)], source_etype=ZERO_ENV), typ=I64)
    start = b.mul(lo, i64(ZERO_BLOCK))
    end = b.mul(hi, i64(ZERO_BLOCK))
    end = b.select(b.icmp_signed("<", end, size), end, size)
    memset = module.declare_intrinsic("llvm.memset", [PTR, I64])
    b.call(memset, [b.gep(data, [start], source_etype=I8), ir.Constant(I8, 0),
                    b.sub(end, start), ir.Constant(I1, 0)])
    b.ret(ir.Constant(I32, OK))



class _Helpers(MemoryLowering):
    """The memory helpers' builders (memory.MemoryLowering) on the pool's module."""

    def __init__(self, builder):
        self.module = builder.m
        self.libc = builder.libc


_state = {}
_LOCK = threading.Lock()


def _library():
    """The linked pool: {export name: address} (built or loaded from the cache once)."""
    if "addresses" in _state:
        return _state
    with _LOCK:
        if "addresses" not in _state:
            builder = llvm.JITLibraryBuilder().add_current_process()
            for obj in _objects():
                builder.add_object_img(obj)
            for name in _EXPORTS:
                builder.export_symbol(name)
            imports = capi.symbols()
            for name in (LARGE_CACHE, LARGE_BYTES, SLAB_CACHE, TAG):
                builder.import_symbol(name, imports[name])
            tracker = builder.link(jit._init()["lljit"], "adcompile_pool")
            addresses = {name: tracker[name] for name in _EXPORTS}
            _state["tracker"] = tracker  # the code lives as long as the process
            _state["init"] = ctypes.CFUNCTYPE(None)(addresses["adc_pool_init"])
            _state["set"] = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64,
                                             ctypes.c_int64)(addresses["adc_pool_set"])
            _state["workers"] = ctypes.CFUNCTYPE(ctypes.c_int64)(addresses["adc_pool_workers"])
            _state["init"]()
            _apply()
            os.register_at_fork(after_in_child=_state["init"])
            _state["addresses"] = addresses
    return _state


def cache_key():
    """The key of the pool's object code in the on-disk cache (one entry per machine). The
    pool's IR follows from the compiler's source and the target, which jit.cache_key holds
    already, so a warm start does not build the IR (a third of its time) to find the key."""
    return jit.cache_key("adc.pool")


def store_in_cache():
    """Put the pool's object code in the on-disk cache if it is not there (a process that
    built the pool while the cache was off stored nothing; its child processes would
    compile it again)."""
    _objects()


def _objects():
    """The pool's object code: from the on-disk cache, else built and stored there."""
    key = cache_key()
    objects = jit.cache_load(key)
    if objects is None:
        objects = [jit.emit_object(jit.optimize(str(_Pool().build())))]
        jit.cache_store(key, objects)
    return objects


def symbols():
    """{symbol: address} of the pool functions kernels call."""
    addresses = _library()["addresses"]
    return {name: addresses[name] for name in ("adc_parallel_for", "adc_parallel_unit")}


def runtime_symbols():
    """{symbol: address} of the helpers every kernel calls (values.shared)."""
    addresses = _library()["addresses"]
    return {name: addresses[name] for name in RUNTIME}


def block_symbols():
    """{symbol: address} of the destructor of returned large blocks (every kernel links it)."""
    return {"adc_block_release": _library()["addresses"]["adc_block_release"]}


def default_threads():
    """ADCOMPILE_NUM_THREADS, else OMP_NUM_THREADS (dask's workers set it to 1), else the
    cores this process may run on."""
    for name in ("ADCOMPILE_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _env_int(name, default, least):
    value = os.environ.get(name, "").strip()
    return max(least, int(value)) if value.isdigit() else default


# ADCOMPILE_PARALLEL_MIN / ADCOMPILE_PARALLEL_UNIT: for tests that split small arrays
_settings = {"threads": default_threads(),
             "min_work": _env_int("ADCOMPILE_PARALLEL_MIN", DEFAULT_MIN_WORK, 0),
             "unit": _env_int("ADCOMPILE_PARALLEL_UNIT", DEFAULT_UNIT, 256)}


def _apply():
    if "set" in _state:
        _state["set"](_settings["threads"], _settings["min_work"], _settings["unit"])


def configure(threads=None, min_work=None, unit=None):
    """Change the pool's settings (None keeps one): threads (>= 1), min_work (elements a
    loop needs to be split), unit (the least piece of a parallel pairwise sum, >= 256)."""
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(f"the number of threads must be at least 1, not {threads}")
        _settings["threads"] = int(threads)
    if min_work is not None:
        _settings["min_work"] = max(0, int(min_work))
    if unit is not None:
        _settings["unit"] = max(256, int(unit))
    _apply()


def settings():
    return dict(_settings)


def started_workers():
    """How many worker threads the pool has started (0 before its first parallel loop)."""
    return _library()["workers"]() if "addresses" in _state else 0
