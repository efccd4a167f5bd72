"""Outlined ops compiled while the kernel is still being lowered (stream.py, jit.Jobs).

A batch must be a module of its own (it parses and verifies alone; its ops are external, what
they use is copied in); the kernel's module keeps only what it still uses (split.prune). Whole
programs compiled with every op shipped in batches of its own must give the bits of the
compile without streaming, raise the same errors at the same lines, and leave no thread
behind when a job or the lowering fails."""

import threading

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from adcompile import adcompile, grad, value_and_grad
from adcompile.backends.llvm import jit, native, split, stream
from adcompile.errors import InternalError

from .test_llvm_parts import FN, HEAD, OP, declared, defined, program, verified


def _llvm_threads():
    return [t for t in threading.enumerate() if t.name == "adcompile-llvm"]


@pytest.fixture
def shipped(monkeypatch):
    """No on-disk cache, two threads, every finished op a batch of its own; yields the
    texts submitted to the jobs."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    monkeypatch.delenv("ADCOMPILE_LLVM_STREAM", raising=False)
    monkeypatch.setattr(stream, "BATCH_LINES", 1)
    texts = []
    submit = jit.Jobs.submit

    def recorded(self, text, lines):
        texts.append(text)
        return submit(self, text, lines)

    monkeypatch.setattr(jit.Jobs, "submit", recorded)
    return texts


def _unstreamed(monkeypatch, fn, *args, argnums=0):
    monkeypatch.setenv("ADCOMPILE_LLVM_STREAM", "0")
    try:
        return value_and_grad(adcompile(fn), argnums=argnums)(*args)
    finally:
        monkeypatch.delenv("ADCOMPILE_LLVM_STREAM")


# -- programs -------------------------------------------------------------------------------

mlp = program  # test_llvm_parts' array program


def components(q, x):
    """A loop over components calling array ops (gmm's shape): ops shared by iterations."""
    total = 0.0
    for k in range(q.shape[0]):
        y = x * q[k] - np.sum(q[k])
        total += np.sum(np.exp(-0.5 * y * y)) / (k + 1.0)
    return total + np.sum(q * q)


def rk(x, s):
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = np.concatenate((x[:1], x[1:] * y[:-1]))
        y = y + 0.1 * k1
    return np.sum(y * y)


_RNG = np.random.default_rng(5)
PROGRAMS = [
    (mlp, (_RNG.standard_normal((40, 12)), _RNG.standard_normal((12, 6)) * 0.3,
           _RNG.standard_normal((40, 6))), (0, 1)),
    (components, (_RNG.standard_normal((4, 30)), _RNG.standard_normal(30)), (0, 1)),
    (rk, (_RNG.random(50), 6), 0),
]


def shipped_roots(text):
    """The functions a batch ships (external, under their own names): ops with loops of their
    own, and the pieces of those that only call work (which stay with the kernel)."""
    return [name for name in defined(text) if not name.endswith(".x") and
            not name.startswith(("adc.entry.", "adc.fn.")) and
            f'define i32 @"{name}"(' in text]


@pytest.mark.parametrize("fn,args,argnums", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_shipped_ops_give_the_same_bits(fn, args, argnums, shipped, monkeypatch):
    value, grads = value_and_grad(adcompile(fn), argnums=argnums)(*args)
    batches = [t for t in shipped if shipped_roots(t)]
    assert len(batches) >= 2, "the ops did not go out in batches"
    expected = _unstreamed(monkeypatch, fn, *args, argnums=argnums)
    assert value == expected[0]
    for g, e in zip(grads if isinstance(grads, tuple) else (grads,),
                    expected[1] if isinstance(expected[1], tuple) else (expected[1],)):
        np.testing.assert_array_equal(g, e)
    assert not _llvm_threads()


def test_the_kernel_module_declares_the_shipped_ops(shipped, monkeypatch):
    args = PROGRAMS[0][1]
    adcompile(mlp)(*args)
    ops = {name for t in shipped for name in shipped_roots(t)}
    (kernel,) = [t for t in shipped if "adc.entry.program" in defined(t)]
    assert ops and ops <= set(declared(kernel))
    assert not set(defined(kernel)) & ops
    assert any(name.startswith("adc.op.") for name in ops)  # (the sums' loops)
    exported = []
    for text in shipped:  # each is a module of its own
        verified(text)
        for line in text.splitlines():
            if line.startswith("define ") and "adc.entry." not in line and \
                    not any(f'@"{name}"(' in line for name in ops):
                # small copies stay private; a larger or noinline helper is defined
                # once, as <name>.x
                assert line.startswith("define internal ") or '.x"(' in line, line
                if not line.startswith("define internal "):
                    exported.append(line.split('@"')[1].split('"')[0])
    assert len(exported) == len(set(exported))
    for name in exported:
        assert name in declared(kernel) or name not in kernel


def broadcast_error(a, b):
    c = a * 2.0
    return np.sum(c + b)


def test_an_error_in_a_shipped_op_names_the_users_line(shipped, monkeypatch):
    f = adcompile(broadcast_error)
    with pytest.raises(ValueError) as streamed:
        f(np.ones(3), np.ones(4))
    assert shipped
    monkeypatch.setenv("ADCOMPILE_LLVM_STREAM", "0")
    with pytest.raises(ValueError) as whole:
        adcompile(broadcast_error)(np.ones(3), np.ones(4))
    assert str(streamed.value) == str(whole.value)
    assert "test_llvm_stream.py" in str(streamed.value)


def test_a_failing_job_reaches_the_caller(shipped, monkeypatch):
    compile_part = jit._Part.compile

    def failing(self):
        compile_part(self)
        if self.error is None and "adc.op." in str(self.module):
            self.error = RuntimeError("a batch failed")

    monkeypatch.setattr(jit._Part, "compile", failing)
    with pytest.raises(InternalError, match="a batch failed"):
        adcompile(mlp)(*PROGRAMS[0][1])
    assert not _llvm_threads()
    monkeypatch.setattr(jit._Part, "compile", compile_part)
    adcompile(mlp)(*PROGRAMS[0][1])  # and the next compile works


def test_an_error_while_lowering_stops_the_workers(shipped, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the entry point failed")

    monkeypatch.setattr(native, "build_entry", broken)
    with pytest.raises(InternalError, match="the entry point failed"):
        adcompile(components)(*PROGRAMS[1][1])
    assert shipped, "batches were submitted before the failure"
    assert not _llvm_threads()


def test_one_thread_does_not_stream(monkeypatch):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "1")
    monkeypatch.setattr(stream, "BATCH_LINES", 1)
    assert jit.workers() == 0
    monkeypatch.setattr(jit, "Jobs", lambda *a: pytest.fail("streamed on one thread"))
    grad(adcompile(mlp), argnums=1)(*PROGRAMS[0][1])


# -- the texts ------------------------------------------------------------------------------

def test_prune_drops_what_nothing_outside_reaches():
    text = HEAD + OP.format(name="a", hint="shared_hint") + OP.format(
        name="b", hint="shared_hint") + FN.replace(
        '%".3" = call i32 @"adc.op.b"(ptr %".1", i64 1)', '%".3" = add i32 0, 1')
    pruned = split.prune(text)
    assert sorted(defined(pruned)) == ["adc.chunk.a", "adc.entry.f", "adc.fn.f", "adc.op.a"]
    verified(pruned)
    whole = HEAD + OP.format(name="a", hint="shared_hint") + OP.format(
        name="b", hint="shared_hint") + FN
    assert split.prune(whole) == whole


def _module():
    """An op that calls a helper, reads a private constant and an outside object, and
    carries metadata; the kernel calls it."""
    module = ir.Module(name="adc.fn.t")
    module.triple = llvm.get_process_triple()
    i64, ptr = ir.IntType(64), ir.PointerType()
    text = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), 3), name=".msg")
    text.linkage, text.global_constant = "private", True
    text.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), 3), bytearray(b"ab\0"))
    outside = ir.GlobalVariable(module, ir.IntType(8), name="adc_object")
    outside.linkage = "external"
    libm = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name="exp")
    helper = ir.Function(module, ir.FunctionType(i64, [i64]), name="adc.helper")
    helper.linkage = "internal"
    b = ir.IRBuilder(helper.append_basic_block("entry"))
    b.ret(b.add(helper.args[0], ir.Constant(i64, 1)))
    op = ir.Function(module, ir.FunctionType(i64, [ptr]), name="adc.op.t.0")
    op.linkage = "internal"
    op.attributes.add("noinline")
    b = ir.IRBuilder(op.append_basic_block("entry"))
    x = b.call(helper, [b.ptrtoint(text, i64)])
    y = b.call(libm, [ir.Constant(ir.DoubleType(), 1.0)])
    z = b.add(x, b.ptrtoint(outside, i64))
    load = b.load(op.args[0], typ=i64)
    load.set_metadata("tbaa.test", module.add_metadata([ir.MetaDataString(module, "n")]))
    b.ret(b.add(z, b.add(load, b.fptosi(y, i64))))
    kernel = ir.Function(module, ir.FunctionType(i64, [ptr]), name="adc.fn.t")
    b = ir.IRBuilder(kernel.append_basic_block("entry"))
    b.ret(b.call(op, [kernel.args[0]]))
    return module, op, helper


def test_a_batch_is_a_module_of_its_own():
    module, op, helper = _module()
    text, exported = stream.batch_text(module, [op])
    assert exported == {}  # the helper may be inlined: copied, not shared
    assert sorted(defined(text)) == ["adc.helper", "adc.op.t.0"]
    assert 'define i64 @"adc.op.t.0"' in text  # the kernel's module calls it
    assert 'define internal i64 @"adc.helper"' in text
    assert sorted(declared(text)) == ["exp"]
    assert '@".msg" = private constant' in text and '@"adc_object" = external global' in text
    verified(text)
    submitted = []
    batches = stream.Batches(module, lambda t, n: submitted.append(t))
    batches.pending = [op]
    batches.flush()
    assert submitted and batches.shipped == 1
    assert not op.blocks and op.linkage == ""  # only declared in the kernel's module now
    verified(str(module))


def test_a_noinline_helper_is_defined_once():
    module, op, helper = _module()
    helper.attributes.add("noinline")
    second = ir.Function(module, op.function_type, name="adc.op.t.1")
    second.linkage = "internal"
    b = ir.IRBuilder(second.append_basic_block("entry"))
    b.ret(b.call(helper, [b.ptrtoint(second.args[0], ir.IntType(64))]))
    submitted = []
    batches = stream.Batches(module, lambda t, n: submitted.append(t))
    for fn in (op, second):
        batches.pending = [fn]
        batches.flush()
    first, then = submitted
    assert 'define i64 @"adc.helper.x"' in first
    assert 'declare i64 @"adc.helper.x"' in then and "adc.helper.x" not in defined(then)
    assert 'call i64 @"adc.helper.x"' in then
    rest = batches.rest(str(module))
    assert 'declare i64 @"adc.helper.x"' in rest and "adc.helper" not in defined(rest)
    for text in (first, then, rest):
        verified(text)


def test_an_op_naming_an_internal_variable_is_not_shipped():
    module, op, _ = _module()
    hint = ir.GlobalVariable(module, ir.IntType(64), name="adc.hint")
    hint.linkage = "internal"
    hint.initializer = ir.Constant(ir.IntType(64), 0)
    b = ir.IRBuilder(op.blocks[0])
    b.position_before(op.blocks[0].instructions[0])
    b.store(ir.Constant(ir.IntType(64), 1), hint)
    assert stream.batch_text(module, [op]) is None
    submitted = []
    batches = stream.Batches(module, lambda t, n: submitted.append(t))
    batches.pending = [op]
    batches.flush()
    assert not submitted and op.blocks and op.linkage == "internal"


def test_an_emptied_body_goes_by_reference_counting():
    """stream.empty_body (a shipped op, and native.release): a loop's phi and the value it
    merges hold each other, an instruction and its block too; opened, they are freed with
    the collector off."""
    import gc
    import weakref

    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.IntType(64), [ir.IntType(64)]), name="f")
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(ir.IntType(64))
    nxt = b.add(i, ir.Constant(ir.IntType(64), 1))
    i.add_incoming(ir.Constant(ir.IntType(64), 0), entry)
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[0]), loop, done)
    b.position_at_end(done)
    b.ret(nxt)
    refs = [weakref.ref(x) for x in (entry, loop, done, i, nxt)]
    del entry, loop, done, i, nxt, b
    gc.disable()
    try:
        stream.empty_body(fn)
        assert not fn.blocks and [ref() for ref in refs] == [None] * 5
    finally:
        gc.enable()
    assert str(fn).startswith("declare")


def test_jobs_give_the_objects_in_the_order_submitted():
    texts = []
    for k, n in enumerate((3, 40, 12)):
        body = "".join(f'  %"v{j}" = add i64 %"v{j - 1}", {j}\n' for j in range(1, n))
        texts.append(f'define i64 @"f{k}"(i64 %"v0")\n{{\nentry:\n{body}'
                     f'  ret i64 %"v{n - 1}"\n}}\n')
    jobs = jit.Jobs(1)
    try:
        jobs.submit(texts[0], 3)
        objects = jobs.finish(texts[1:])
    finally:
        jobs.close()
    assert len(objects) == 3
    for k, code in enumerate(objects):
        assert f"f{k}".encode() in code
    assert not _llvm_threads()


def _handoff_probe(x):
    return np.sum(np.exp(x) * x)


def test_the_switch_interval_is_short_while_workers_compile_and_put_back(monkeypatch):
    """A worker waits for the GIL between its calls into LLVM; while Jobs with workers is
    open the interval is jit.HANDOFF_SECONDS, and the one it found comes back when it closes
    (nested, or closed twice); Jobs without workers leaves it alone."""
    import sys

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.004)
    try:
        outer = jit.Jobs(1)
        assert sys.getswitchinterval() == pytest.approx(jit.HANDOFF_SECONDS, rel=0.05)
        inner = jit.Jobs(1)
        inner.close()
        assert sys.getswitchinterval() == pytest.approx(jit.HANDOFF_SECONDS, rel=0.05)
        outer.close()
        outer.close()
        assert sys.getswitchinterval() == pytest.approx(0.004)
        alone = jit.Jobs(0)
        assert sys.getswitchinterval() == pytest.approx(0.004)
        alone.close()
        monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
        seen = []
        monkeypatch.setattr(jit.Jobs, "submit", lambda self, text, lines, submit=jit.Jobs.submit:
                            seen.append(sys.getswitchinterval()) or submit(self, text, lines))
        grad(adcompile(_handoff_probe))(np.linspace(0, 1, 5))
        assert seen or not jit.workers()
        assert all(s == pytest.approx(jit.HANDOFF_SECONDS, rel=0.05) for s in seen)
        assert sys.getswitchinterval() == pytest.approx(0.004)
    finally:
        sys.setswitchinterval(before)


def test_closing_drops_the_texts_not_started(monkeypatch):
    """After an error in the lowering, close() does not compile what is still waiting."""
    started = []
    monkeypatch.setattr(jit, "_Part", lambda text, tm: started.append(text))
    jobs = jit.Jobs(0)
    for k in range(3):
        jobs.submit(f"; text {k}\n", 1)
    jobs.close()
    assert not started and not jobs.waiting and not jobs.objects
