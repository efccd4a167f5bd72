"""The floating-point environment a fastmath kernel runs in: subnormals flushed to zero.

With fastmath=True a kernel (and each parallel piece of it, which may run on another thread)
is called through a wrapper that sets the thread's x86 MXCSR flags FTZ (a subnormal result
becomes 0) and DAZ (a subnormal operand reads as 0) and puts the caller's MXCSR back when it
returns, whatever the exit. This is what XLA's CPU code (so JAX) and programs linked with
`gcc -ffast-math` run with. It matters in reverse mode: the adjoint of a softmax or
log-sum-exp component whose weight underflowed multiplies by numbers below 2**-1022, and on
x86 each such multiplication is a microcode assist of about a hundred cycles (GradBench's GMM
at d = 64, k = 100: half the gradient's time, `benchmarks/gmm_loops.py`); and the adjoint of a
contracting recurrence `s = a * s + x[i]` (0.5 < a < 1) decays geometrically until it sticks
at the smallest subnormal (a * 2**-1074 rounds back up to it), so every later trip of the
reversed loop is an assist (8x slower at 4*10^6 trips). Strict IEEE
(fastmath=False, the default) keeps gradual underflow and touches nothing. Other
architectures keep their default environment. The pool's threads start from the default
environment whoever creates them (`reset`).
"""

import llvmlite.binding as llvm
import llvmlite.ir as ir

from adcompile.backends.llvm.values import I32, PTR, alloca

FTZ_DAZ = 0x8040  # MXCSR bit 15 (flush to zero) and bit 6 (denormals are zero)
DEFAULT = 0x1F80  # every exception masked, round to nearest, gradual underflow
_X86 = llvm.get_process_triple().startswith(("x86_64", "i686", "i386"))


def _intrinsic(module, name):
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name=name)
    return fn


def wrap(module, fn, fastmath):
    """`fn` itself, or (fastmath, x86) a function of the same type that sets FTZ and DAZ,
    calls `fn` and puts the caller's MXCSR back. LLVM assumes the default floating-point
    environment and may move arithmetic across an `ldmxcsr`, but not out of a function that
    is never inlined, so `fn` becomes noinline and the switch stays outside it."""
    if not (fastmath and _X86):
        return fn
    fn.attributes.add("noinline")
    wrapper = ir.Function(module, fn.function_type, name=fn.name + ".ftz")
    wrapper.linkage = "internal"
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    saved = alloca(b, I32, name="mxcsr.saved")
    wanted = alloca(b, I32, name="mxcsr.ftz")
    b.call(_intrinsic(module, "llvm.x86.sse.stmxcsr"), [saved])
    b.store(b.or_(b.load(saved, typ=I32), ir.Constant(I32, FTZ_DAZ)), wanted)
    b.call(_intrinsic(module, "llvm.x86.sse.ldmxcsr"), [wanted])
    result = b.call(fn, list(wrapper.args))
    b.call(_intrinsic(module, "llvm.x86.sse.ldmxcsr"), [saved])
    b.ret(result)
    return wrapper


def reset(module, b):
    """At the start of a thread of the pool (`b` in its entry block): the default MXCSR. A
    new thread inherits its creator's, and the pool starts workers from inside a kernel,
    which may be a fastmath one."""
    if _X86:
        slot = alloca(b, I32, name="mxcsr.default")
        b.store(ir.Constant(I32, DEFAULT), slot)
        b.call(_intrinsic(module, "llvm.x86.sse.ldmxcsr"), [slot])
