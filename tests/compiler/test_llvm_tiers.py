"""The code that runs once per call compiled quickly (split.tiers, jit.Once), the kernel's
array loop nests outlined (arrays.loops), and one BLAS dispatch per dtype and module
(linalg.blas_product_fn).

The loop analysis (split.hot_loops) is checked on small function texts; the cut on a small
module (both texts must verify); then whole programs: an array program's kernel goes to the
quick tier and gives the same bits as when everything is compiled with O3, a program with
scalar loops of its own stays whole, and products share one dispatch function."""

import numpy as np
import pytest

from adcompile import adcompile, grad, value_and_grad
from adcompile.backends.llvm import jit, native, split

from .test_llvm_parts import HEAD, OP, declared, defined, recorded, verified

FUNCTION = '''define internal i32 @"adc.fn.f"(ptr %".1", i64 %".2")
{{
entry:
  br label %"head"
head:
  %"i" = phi i64 [0, %"entry"], [%"next", %"body"]
  %"more" = icmp slt i64 %"i", %".2"
  br i1 %"more", label %"body", label %"end"
body:
{body}
  %"next" = add i64 %"i", 1
  br label %"head", !llvm.loop !0
end:
{end}
}}
'''

NESTED = '''define internal i32 @"adc.fn.f"(ptr %".1", i64 %".2")
{{
entry:
  br label %"outer"
outer:
  %"i" = phi i64 [0, %"entry"], [%"i.next", %"outer.end"]
  %".3" = call i32 @"adc.op.a"(ptr %".1", i64 %"i")
  br label %"inner"
inner:
  %"j" = phi i64 [0, %"outer"], [%"j.next", %"inner"]
{inner}
  %"j.next" = add i64 %"j", 1
  %"j.more" = icmp slt i64 %"j.next", %".2"
  br i1 %"j.more", label %"inner", label %"outer.end"
outer.end:
  %"i.next" = add i64 %"i", 1
  %"i.more" = icmp slt i64 %"i.next", %".2"
  br i1 %"i.more", label %"outer", label %"end"
end:
  ret i32 0
}}
'''

ARITHMETIC = '''  %"p" = getelementptr double, ptr %".1", i64 %"i"
  %"x" = load double, ptr %"p"
  %"y" = fmul double %"x", %"x"
  store double %"y", ptr %"p"'''


@pytest.mark.parametrize("body,hot", [
    (ARITHMETIC, True),  # a scalar loop
    ('  %"s" = call i32 @"adc.op.mul.3"(ptr %".1", i64 %"i")', False),
    ('  %"s" = call i32 @"adc_parallel_for"(ptr @"adc.chunk.2", ptr %".1", i64 %"i", i64 1, '
     'i64 0)', False),
    ('  %"s" = call i32 @"adc.blas_product.f64"(ptr %".1")', False),
    # memory and tape helpers, libm and the C library are not outlined work
    (ARITHMETIC + '\n  %"t" = call {ptr, i64, ptr} @"adc.tape_grow"(ptr %".1")', True),
    ('  %"b" = call ptr @"adc.rt.buffer"(ptr %".1", i64 8)', True),
    ('  %"e" = call double @"exp"(double 1.0)', True),
], ids=["arithmetic", "op", "piece", "blas", "tape", "buffer", "libm"])
def test_a_loop_is_hot_unless_it_calls_outlined_work(body, hot):
    assert split.hot_loops(FUNCTION.format(body=body, end="  ret i32 0")) is hot


def test_only_innermost_loops_count():
    # the outer loop calls an op, the inner one computes: hot
    assert split.hot_loops(NESTED.format(inner=ARITHMETIC.replace('"i"', '"j"')))
    call = '  %"s" = call i32 @"adc.op.b"(ptr %".1", i64 %"j")'
    assert not split.hot_loops(NESTED.format(inner=call))


def test_a_function_without_loops_is_not_hot():
    text = ('define internal i32 @"adc.fn.f"(ptr %".1")\n{\nentry:\n'
            '  %".2" = call i32 @"adc.op.a"(ptr %".1")\n  ret i32 %".2"\n}\n')
    assert not split.hot_loops(text)


KERNEL_END = '''  %"t" = call i32 @"adc.op.b"(ptr %".1", i64 0)
  %"u" = call i32 @"adc.helper"(ptr %".1")
  ret i32 %"t"'''

KERNEL = FUNCTION.replace("{end}", KERNEL_END) + '''define internal i32 @"adc.helper"(ptr %".1")
{{
entry:
  %".2" = getelementptr i8, ptr @".str0", i64 1
  ret i32 0
}}
define ptr @"adc.entry.f"(ptr %".1", ptr %".2", i64 %".3")
{{
entry:
  %".4" = call i32 @"adc.fn.f"(ptr %".1", i64 %".3")
  ret ptr null
}}
!0 = distinct !{{ !0 }}
'''


LOOPING_CHUNK = '''define internal i32 @"adc.chunk.b"(ptr %".1", i64 %".2")
{
entry:
  br label %"head"
head:
  %"i" = phi i64 [0, %"entry"], [%"next", %"head"]
  %".3" = getelementptr double, ptr %".1", i64 %"i"
  %".4" = load double, ptr %".3"
  %".5" = fmul double %".4", %".4"
  store double %".5", ptr %".3"
  %"next" = add i64 %"i", 1
  %"more" = icmp slt i64 %"next", %".2"
  br i1 %"more", label %"head", label %"end"
end:
  ret i32 0
}
'''


def small_module(body='  %"s" = call i32 @"adc.op.a"(ptr %".1", i64 %"i")'):
    """A kernel calling two ops: op.a's chunk has no loop (the op only calls: code that
    runs once per call), op.b's chunk a loop of its own (work)."""
    op_b = OP.format(name="b", hint="shared_hint")
    op_b = op_b[:op_b.index('define internal i32 @"adc.chunk.b"')] + LOOPING_CHUNK
    return HEAD + OP.format(name="a", hint="shared_hint") + op_b + KERNEL.format(body=body)


def test_the_entry_and_a_kernel_that_only_calls_go_apart(monkeypatch):
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    rest, once = split.tiers(small_module())
    # op.a has no loop of its own and only the kernel calls it: it goes with the kernel
    assert sorted(defined(once)) == ["adc.chunk.a", "adc.entry.f", "adc.fn.f", "adc.helper",
                                     "adc.op.a"]
    assert sorted(declared(once)) == ["adc.op.b.x", "llvm.exp.f64"]
    assert sorted(defined(rest)) == ["adc.chunk.b", "adc.op.b.x"]
    for text in (rest, once):
        verified(text)


def test_an_op_that_other_work_calls_stays(monkeypatch):
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    text = small_module().replace(
        '  %".3" = call i32 @"adc.chunk.b"(ptr %".1", i64 %".2")',
        '  %".3" = call i32 @"adc.chunk.b"(ptr %".1", i64 %".2")\n'
        '  %".9" = call i32 @"adc.op.a"(ptr %".1", i64 %".2")')
    rest, once = split.tiers(text)
    assert sorted(defined(once)) == ["adc.entry.f", "adc.fn.f", "adc.helper"]
    assert "adc.op.a.x" in defined(rest)
    for text in (rest, once):
        verified(text)


def test_a_kernel_with_loops_of_its_own_stays(monkeypatch):
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    text = small_module(ARITHMETIC)
    assert split.tiers(text) == (text, None)


def test_too_little_code_that_runs_once_stays():
    text = small_module()
    assert split.tiers(text) == (text, None)  # fewer than ONCE_LINES lines


# -- whole programs ------------------------------------------------------------------------

def mlp_like(x, w, v, y):
    h = np.tanh(x @ w)
    z = h @ v - y
    s = np.sum(z * z, axis=1)
    t = np.exp(s - np.max(s))
    return np.sum(np.log(t + 1.0)) + np.sum(w * w) + np.sum(v * v)


def scalar_loops(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += np.sin(a[i]) * b[i]
    return total


def broadcast_gradient(x, b):
    return np.sum(np.tanh(x + b) * x)  # b's gradient: a sum over x's first axis


def _mlp_args(n=200):
    rng = np.random.default_rng(5)
    return (rng.standard_normal((n, 40)), rng.standard_normal((40, 30)) * 0.2,
            rng.standard_normal((30, 10)) * 0.2, rng.standard_normal((n, 10)))


@pytest.fixture
def tiers_seen(monkeypatch):
    """No on-disk cache; the (rest, once) of every compile's module text."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(split, "ONCE_LINES", 0)  # these programs are small
    return recorded(monkeypatch, split, "tiers")


@pytest.mark.parametrize("parts", ["1", "2"])
@pytest.mark.parametrize("fn,args,argnums", [
    (mlp_like, _mlp_args(), (1, 2)),
    (broadcast_gradient, (np.linspace(-1, 1, 600).reshape(20, 30), np.linspace(0, 1, 30)),
     (0, 1)),
], ids=["mlp-like", "broadcast"])
def test_the_quick_tier_gives_the_same_bits(fn, args, argnums, parts, tiers_seen,
                                            monkeypatch):
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", parts)
    monkeypatch.setattr(jit, "ONCE", False)
    expected = value_and_grad(adcompile(fn), argnums=argnums)(*args)
    assert not tiers_seen
    monkeypatch.setattr(jit, "ONCE", True)
    value, grads = value_and_grad(adcompile(fn), argnums=argnums)(*args)
    assert tiers_seen and all(once is not None for _, once in tiers_seen), \
        "the kernel did not go to the quick tier"
    assert value == expected[0]
    for g, e in zip(grads, expected[1]):
        np.testing.assert_array_equal(g, e)


def test_a_kernel_with_scalar_loops_is_compiled_whole(tiers_seen):
    a, b = np.linspace(0, 1, 50), np.linspace(2, 3, 50)
    value = adcompile(scalar_loops)(a, b)
    assert value == pytest.approx(np.sum(np.sin(a) * b), rel=1e-12)
    assert tiers_seen and all(once is None for _, once in tiers_seen)


def _module_texts(monkeypatch, call):
    """The LLVM IR text of every module `call()` compiles (no on-disk cache)."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    texts = recorded(monkeypatch, jit, "tiered", keep=lambda args, result: args[1])
    call()
    return texts


def _kernel(text):
    functions, _ = split._functions(text)
    (kernel,) = [f for f in functions if f.name.startswith(split.KERNEL)]
    return kernel.text


def test_an_array_kernel_has_no_loops_of_its_own(monkeypatch):
    x, b = np.linspace(-1, 1, 600).reshape(20, 30), np.linspace(0, 1, 30)
    g = grad(adcompile(broadcast_gradient), argnums=(0, 1))
    texts = _module_texts(monkeypatch, lambda: g(x, b))
    assert texts
    for text in texts:
        kernel = _kernel(text)
        assert not split.hot_loops(kernel)
        assert "!llvm.loop" not in kernel


def two_uses(x, w):
    h = x @ w
    return np.sum(np.tanh(h)) + np.sum(h @ w.T)


@pytest.mark.parametrize("stream", ["1", "0"])
def test_ops_that_only_call_work_go_to_the_quick_tier(monkeypatch, stream):
    """The gradient's additions into shadows hand their loops to the pool: they go with the
    kernel into the quick tier (split._cold_callees), their pieces with the work, whether
    the ops were shipped in batches while the kernel was lowered (stream.py) or not."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    monkeypatch.setenv("ADCOMPILE_LLVM_STREAM", stream)
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    cuts = recorded(monkeypatch, split, "tiers")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 5)), rng.standard_normal((5, 5))
    gx, gw = grad(adcompile(two_uses), argnums=(0, 1))(x, w)
    rest, once = cuts[-1]
    quick = [name for name in defined(once) if name.startswith("adc.op.iadd")]
    assert quick and not [n for n in defined(rest) if n.startswith("adc.op.iadd")]
    functions = split._functions(once)[0]
    assert not any(split.hot_loops(f.text) for f in functions if f.name in quick)
    assert not [f.name for f in functions if f.name.startswith("adc.chunk.")]  # (work)
    monkeypatch.setattr(jit, "ONCE", False)
    expected = grad(adcompile(two_uses), argnums=(0, 1))(x, w)
    np.testing.assert_array_equal(gx, expected[0])
    np.testing.assert_array_equal(gw, expected[1])


def product(a, b):
    return a @ b


def products(a, b, c):
    return np.sum((a @ b) @ c) + np.sum(a @ (b @ c)) + np.sum(c.T @ b.T)


def test_products_share_one_blas_dispatch(monkeypatch):
    monkeypatch.setenv("ADCOMPILE_LLVM_STREAM", "0")  # the whole module in one text
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal((64, 48)), rng.standard_normal((48, 40)),
               rng.standard_normal((40, 32)))
    (text,) = _module_texts(monkeypatch, lambda: adcompile(products)(a, b, c))
    assert text.count('define internal i32 @"adc.blas_product.f64"') == 1
    (line,) = [l for l in text.splitlines() if l.startswith('define internal i32 @"adc.blas_')]
    assert "optnone" in line  # control, once a product: LLVM compiles it as it is
    assert text.count('call i32 @"adc.blas_product.f64"') >= 3  # one per product op
    np.testing.assert_allclose(adcompile(products)(a, b, c), products(a, b, c), rtol=1e-12)
    # a vector times a matrix (gemv) and a product too small for BLAS
    v = rng.standard_normal(64)
    np.testing.assert_allclose(adcompile(product)(v, a), v @ a, rtol=1e-13)
    small = rng.standard_normal((3, 4))
    np.testing.assert_allclose(adcompile(product)(small, small.T), small @ small.T, rtol=1e-14)


# -- scalar loop nests of an array program, and the tier-up ---------------------------------

def build_q(q, l):
    """gmm's factors (GradBench): scalar loops in an array program."""
    k_count, d = q.shape
    qs = np.zeros((k_count, d, d))
    for k in range(k_count):
        p = 0
        for c in range(d):
            qs[k, c, c] = np.exp(q[k, c])
            for r in range(c + 1, d):
                qs[k, r, c] = l[k, p]
                p += 1
    return np.sum(qs * qs) + np.sum(q @ q.T)


def _q_args():
    rng = np.random.default_rng(11)
    return rng.standard_normal((3, 4)), rng.standard_normal((3, 6))


def test_scalar_nests_of_an_array_program_are_outlined(monkeypatch):
    q, l = _q_args()
    g = grad(adcompile(build_q), argnums=(0, 1))
    texts = _module_texts(monkeypatch, lambda: g(q, l))
    (text,) = texts
    assert text.count('define internal i32 @"adc.nest.') >= 2  # the forward and reverse nests
    assert not split.hot_loops(_kernel(text))
    gq, gl = g(q, l)
    expected = grad(adcompile(build_q, backend="python"), argnums=(0, 1))(q, l)
    np.testing.assert_array_equal(gq, expected[0])
    np.testing.assert_array_equal(gl, expected[1])


def linked_walk(a):
    """A while loop that reads what it wrote (the index j goes on the tape), in an array
    program: its reversed loop is an outlined nest that pops the tape."""
    n = a.shape[0]
    order = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n)
    k = 0
    total = 0.0
    while k < n:
        j = order[k]
        order[(k + 1) % n] = (j * 7 + 3) % n
        total += a[k] * a[j]
        seen[k] = total
        k += 1
    return total + np.sum(seen * seen)


def test_an_outlined_nest_takes_a_copy_of_the_tape():
    """The nest gets a copy of the tape, never the tape's own stack slot: the slot does not
    escape, so LLVM keeps the tape's top and capacity in registers in the loop that pushes
    (the kernel's optimised code has no tape slot left, only the copy it hands over)."""
    a = np.random.default_rng(3).standard_normal(40)
    g = grad(adcompile(linked_walk))
    text = g.llvm_ir(a)
    assert "adc.nest." in text
    (kernel,) = [f for f in text.split("\ndefine ")
                 if f.split("(")[0].endswith("@adc.fn.linked_walk_grad")]
    slots = [line for line in kernel.splitlines() if "alloca { ptr, i64, i64, ptr }" in line]
    assert slots and all("%tape.copy" in line for line in slots), slots
    for backend in ("python", "interp"):
        np.testing.assert_array_equal(g(a), grad(adcompile(linked_walk, backend=backend))(a))


def test_a_nest_keeps_the_tape_it_pops_in_registers():
    """The reversed loop, outlined as a nest called outside the kernel's loops, works on a
    stack slot of its own for the tape (parallel._local_tapes): the tape's top is a register
    of its loop (a phi), not reloaded and stored through the env's pointer on every pop."""
    a = np.random.default_rng(4).standard_normal(40)
    g = grad(adcompile(linked_walk))
    nests = [f for f in g.llvm_ir(a).split("\ndefine ") if "@adc.nest." in f.split("(")[0]]
    assert any("phi i64" in line and "%tape.local" in line
               for nest in nests for line in nest.splitlines())
    for backend in ("python", "interp"):
        np.testing.assert_array_equal(g(a), grad(adcompile(linked_walk, backend=backend))(a))


def test_a_scalar_program_keeps_its_loops(monkeypatch):
    a, b = np.linspace(0, 1, 50), np.linspace(2, 3, 50)
    (text,) = _module_texts(monkeypatch, lambda: adcompile(scalar_loops)(a, b))
    assert "adc.nest." not in text  # no arrays made: nothing to set apart
    assert split.hot_loops(_kernel(text))


@pytest.fixture
def quick_tier(monkeypatch):
    """The quick tier for small programs too (the code that runs once per call, and the
    code generation of the rest), tier-up after 3 calls, no on-disk cache."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    monkeypatch.setattr(jit, "QUICK_LINES", 0)
    monkeypatch.setattr(native, "TIER_UP", 3)
    monkeypatch.setattr(native, "TIER_UP_SECONDS", 60.0)


@pytest.fixture
def made(monkeypatch):
    """The native variants made in the test, in order."""
    return recorded(monkeypatch, native.Variant, "__init__", keep=lambda args, result: args[0])


def test_the_quick_code_is_replaced_after_some_calls(quick_tier, made):
    args = _mlp_args(50)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    first = f(*args)
    (variant,) = made
    assert variant.pending and isinstance(variant.redo[-1], jit.Once)
    assert all(isinstance(redo, bytes) for redo in variant.redo[:-1])  # bitcode
    quick_entry = variant.entry
    for _ in range(5):
        again = f(*args)
    native.settle()
    assert not variant.pending and variant.redo is None
    assert variant.entry is not quick_entry
    after = f(*args)
    for a, b, c in zip(first, again, after):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def _level_of_code_generation(monkeypatch):
    """The code-generation level of every part compiled from now on, in order."""
    levels = []
    part = jit._Part.__init__

    def init(self, source, tms, quick=False):
        part(self, source, tms, quick)
        levels.append(0 if self.tm in (jit._init()["tms"][1],
                                       *(tm for _, tm in jit._init()["part_tms"])) else 3)

    monkeypatch.setattr(jit._Part, "__init__", init)
    return levels


def test_large_texts_are_code_generated_quickly_then_again(monkeypatch, made):
    """Every text of QUICK_LINES lines or more is optimised with O3 and code-generated at
    level 0; the tier-up code-generates its bitcode at level 3, and the bits stay."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(native, "TIER_UP", 2)
    monkeypatch.setattr(jit, "QUICK_LINES", 0)
    levels = _level_of_code_generation(monkeypatch)
    args = (np.linspace(-1, 1, 600).reshape(20, 30), np.linspace(0, 1, 30))
    f = grad(adcompile(broadcast_gradient), argnums=(0, 1))
    first = f(*args)
    (variant,) = made
    assert levels and set(levels) == {0}
    assert variant.pending and all(isinstance(redo, bytes) for redo in variant.redo)
    del levels[:]
    f(*args)
    native.settle()
    assert not variant.pending and variant.redo is None
    assert levels and set(levels) == {3}
    for a, b in zip(first, f(*args)):
        np.testing.assert_array_equal(a, b)


def test_small_texts_are_code_generated_at_once(monkeypatch, made):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(jit, "QUICK_LINES", 1000)
    levels = _level_of_code_generation(monkeypatch)
    a = np.linspace(0, 1, 50)
    adcompile(scalar_loops)(a, a)  # a module of a few hundred lines
    (variant,) = made
    assert levels and set(levels) == {3}
    assert not variant.pending and variant.redo is None


def test_a_kernel_with_loops_of_its_own_is_code_generated_at_once(monkeypatch, made):
    """Scalar loops in the kernel (split.kernel_loops) are the user's code, which level 0
    slows most: their text is code-generated at level 3 whatever its size, and nothing
    waits for a tier-up; an array program's kernel, which only calls work, has none."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(jit, "QUICK_LINES", 0)
    levels = _level_of_code_generation(monkeypatch)
    a = np.linspace(0, 1, 50)
    (text,) = _module_texts(monkeypatch, lambda: adcompile(scalar_loops)(a, a))
    assert split.kernel_loops(text)
    (variant,) = made
    assert levels and set(levels) == {3}
    assert not variant.pending and variant.redo is None
    args = (np.linspace(-1, 1, 600).reshape(20, 30), np.linspace(0, 1, 30))
    texts = _module_texts(monkeypatch, lambda: grad(adcompile(broadcast_gradient),
                                                    argnums=(0, 1))(*args))
    assert not any(split.kernel_loops(t) for t in texts)
    assert split.kernel_loops("") is False


def test_a_long_call_starts_the_tier_up(quick_tier, monkeypatch, made):
    """The quick code is replaced after TIER_UP calls, or once its calls took
    TIER_UP_SECONDS: one long call is enough."""
    monkeypatch.setattr(native, "TIER_UP", 1000)
    monkeypatch.setattr(native, "TIER_UP_SECONDS", 1e-9)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    f(*_mlp_args(20))
    (variant,) = made
    native.settle()
    assert not variant.pending and variant.redo is None


def test_no_time_limit_means_calls_only(quick_tier, monkeypatch, made):
    monkeypatch.setattr(native, "TIER_UP", 1000)
    monkeypatch.setattr(native, "TIER_UP_SECONDS", 0.0)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    for _ in range(3):
        f(*_mlp_args(20))
    (variant,) = made
    assert variant.pending and variant.tier_thread is None


def test_a_later_process_tiers_up_the_quick_code_it_finds(tmp_path, monkeypatch, made):
    """The quick objects in the cache come with what their final code is made from."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    monkeypatch.setattr(jit, "QUICK_LINES", 0)
    monkeypatch.setattr(native, "TIER_UP", 1000)
    args = _mlp_args(20)
    expected = grad(adcompile(mlp_like), argnums=(1, 2))(*args)
    assert len(list(tmp_path.rglob("*.o"))) == 1  # (the objects and their redo: one entry)
    monkeypatch.setattr(native, "TIER_UP", 1)
    g = grad(adcompile(mlp_like), argnums=(1, 2))  # a new function object: from the cache
    result = g(*args)
    native.settle()
    first, variant = made
    assert first.pending and variant.from_cache
    assert not variant.pending and variant.redo is None
    for a, b in zip(g(*args), expected):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(result, expected):
        np.testing.assert_array_equal(a, b)


def test_a_later_process_takes_the_full_code_from_the_cache(tmp_path, monkeypatch, made):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(split, "ONCE_LINES", 0)
    monkeypatch.setattr(native, "TIER_UP", 2)
    args = _mlp_args(20)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    expected = [f(*args) for _ in range(3)][0]
    native.settle()
    g = grad(adcompile(mlp_like), argnums=(1, 2))  # a new function object: from the cache
    result = g(*args)
    first, variant = made
    assert first.pending is False and not first.from_cache
    assert variant.from_cache and not variant.pending
    for a, b in zip(result, expected):
        np.testing.assert_array_equal(a, b)


def test_a_failed_tier_up_keeps_the_quick_code(quick_tier, monkeypatch, made):
    def broken(redo):
        raise RuntimeError("no LLVM today")

    monkeypatch.setattr(jit, "compile_full", broken)
    args = _mlp_args(20)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    first = f(*args)
    quick_entry = made[0].entry
    with pytest.warns(RuntimeWarning, match="could not compile"):
        for _ in range(4):
            f(*args)
        native.settle()
    (variant,) = made
    assert not variant.pending and variant.redo is None and variant.entry is quick_entry
    for a, b in zip(f(*args), first):
        np.testing.assert_array_equal(a, b)


def test_a_fork_waits_for_the_tier_up(quick_tier, made):
    """A child forked while a tier-up runs would inherit llvmlite's lock held (a deadlock at
    its first compile): the fork waits for the tier-up (native.settle before a fork)."""
    import os

    args = _mlp_args(20)
    f = grad(adcompile(mlp_like), argnums=(1, 2))
    expected = f(*args)
    for _ in range(3):
        f(*args)
    pid = os.fork()
    if pid == 0:  # the child compiles and calls a new function, then leaves at once
        try:
            g = grad(adcompile(broadcast_gradient), argnums=(0, 1))
            g(np.ones((3, 4)), np.ones(4))
            ok = all(np.array_equal(a, b) for a, b in zip(f(*args), expected))
        except BaseException:  # pragma: no cover - reported by the exit status
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    native.settle()
    assert not made[0].pending
