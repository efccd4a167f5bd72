"""A module cut into parts that LLVM compiles at once (split.py, jit.compile_objects).

The cut is checked on small modules: what stays together, what becomes external, what each
part declares, what is left whole; every part must parse and verify on its own. Then whole
programs (array code with outlined ops, pieces for the pool, pairwise sums, a tape) are
compiled in one, two and three parts, on one thread and from several at once, and must give
the same bits; the cache must hold and give back every part."""

import threading

import llvmlite.binding as llvm
import numpy as np
import pytest

from adcompile import adcompile, cache, grad, value_and_grad
from adcompile.backends.llvm import jit, native, split

HEAD = '''target triple = "x86_64-unknown-linux-gnu"

@"adc.tape_hint" = internal global i64 0
@"adc.shared_hint" = internal global {i64, ptr} zeroinitializer
@".str0" = private constant [4 x i8] c"bad\\00"
declare double @"llvm.exp.f64"(double %".1")
'''

OP = '''define internal i32 @"adc.op.{name}"(ptr %".1", i64 %".2") noinline
{{
entry:
  %".3" = call i32 @"adc.chunk.{name}"(ptr %".1", i64 %".2")
  %".4" = load i64, ptr @"adc.{hint}"
  %".5" = add i64 %".4", 1
  store i64 %".5", ptr @"adc.{hint}"
  ret i32 %".3"
}}
define internal i32 @"adc.chunk.{name}"(ptr %".1", i64 %".2")
{{
entry:
  %".3" = getelementptr double, ptr %".1", i64 %".2"
  %".4" = load double, ptr %".3"
  %".5" = call double @"llvm.exp.f64"(double %".4")
  store double %".5", ptr %".3"
  ret i32 0
}}
'''

FN = '''define internal i32 @"adc.fn.f"(ptr %".1")
{
entry:
  %".2" = call i32 @"adc.op.a"(ptr %".1", i64 0)
  %".3" = call i32 @"adc.op.b"(ptr %".1", i64 1)
  %".4" = load i64, ptr @"adc.tape_hint"
  %".5" = add i32 %".2", %".3"
  %".6" = getelementptr i8, ptr @".str0", i64 %".4"
  ret i32 %".5"
}
define i32 @"adc.entry.f"(ptr %".1")
{
entry:
  %".2" = call i32 @"adc.fn.f"(ptr %".1")
  ret i32 %".2"
}
'''


def module(hint_b="shared_hint"):
    return HEAD + OP.format(name="a", hint="shared_hint") + OP.format(name="b", hint=hint_b) \
        + FN


def defined(text):
    return [line.split('@"')[1].split('"')[0] for line in text.splitlines()
            if line.startswith("define ")]


def declared(text):
    return [line.split('@"')[1].split('"')[0] for line in text.splitlines()
            if line.startswith("declare ")]


def recorded(monkeypatch, owner, name, keep=lambda args, result: result):
    """keep(arguments, result) of every call of owner.name for the rest of the test."""
    calls, original = [], getattr(owner, name)

    def spy(*args):
        result = original(*args)
        calls.append(keep(args, result))
        return result

    monkeypatch.setattr(owner, name, spy)
    return calls


def verified(text):
    jit._init()
    mod = llvm.parse_assembly(text, llvm.create_context())
    mod.verify()
    return mod


def test_a_small_module_is_one_part(monkeypatch):
    monkeypatch.delenv("ADCOMPILE_LLVM_PARTS", raising=False)
    text = module()
    assert split.parts(text, 1) == [text]
    assert jit.part_count(text) == 1  # 60 lines: not worth a thread


def test_call_trees_stay_whole_and_every_part_verifies():
    parts = split.parts(module(), 3)
    assert len(parts) == 3
    homes = {name: i for i, text in enumerate(parts) for name in defined(text)}
    homes = {name[:-2] if name.endswith(".x") else name: i for name, i in homes.items()}
    assert sorted(homes) == sorted(["adc.op.a", "adc.chunk.a", "adc.op.b", "adc.chunk.b",
                                    "adc.fn.f", "adc.entry.f"])
    # a function called once and not noinline stays with its caller (LLVM inlines it there)
    assert homes["adc.chunk.a"] == homes["adc.op.a"]
    assert homes["adc.chunk.b"] == homes["adc.op.b"]
    assert homes["adc.fn.f"] == homes["adc.entry.f"]
    # noinline ops are trees of their own, dealt to the other parts
    assert len({homes["adc.op.a"], homes["adc.op.b"], homes["adc.fn.f"]}) == 3
    for text in parts:
        verified(text)


def test_what_another_part_calls_is_external_there_and_declared_here():
    parts = split.parts(module(), 3)
    (main,) = [p for p in parts if "adc.entry.f" in defined(p)]
    # under names of their own (an internal helper may be named as a symbol the JIT links in)
    assert sorted(declared(main)) == ["adc.op.a.x", "adc.op.b.x", "llvm.exp.f64"]
    assert 'call i32 @"adc.op.a.x"(' in main
    for text in parts:
        if "adc.op.a.x" in defined(text):
            assert 'define i32 @"adc.op.a.x"' in text  # no longer internal
            assert 'define internal i32 @"adc.chunk.a"' in text  # only its own part calls it
        assert 'declare double @"llvm.exp.f64"' in text  # outside symbols: everywhere


def test_an_internal_variable_is_defined_once():
    parts = split.parts(module(), 3)
    definitions = [line for text in parts for line in text.splitlines()
                   if line.startswith('@"adc.shared_hint" =')]
    # used by both ops: one part defines it (now external), the other declares it
    assert sorted(definitions) == [
        '@"adc.shared_hint" = external global {i64, ptr}',
        '@"adc.shared_hint" = global {i64, ptr} zeroinitializer']
    # used by one part only: it stays internal there and appears nowhere else
    tape = [line for text in parts for line in text.splitlines()
            if line.startswith('@"adc.tape_hint" =')]
    assert tape == ['@"adc.tape_hint" = internal global i64 0']
    for text in parts:  # private constants are copied
        assert '@".str0" = private constant' in text


def test_fewer_trees_than_parts():
    parts = split.parts(module(), 8)
    assert len(parts) == 3


@pytest.mark.parametrize("change", [
    lambda t: t.replace('define internal i32 @"adc.op.a"', 'define linkonce_odr i32 @"adc.op.a"'),
    lambda t: t.replace('@".str0" = private constant [4 x i8] c"bad\\00"',
                        '@".table" = private constant [1 x ptr] [ptr @"adc.op.a"]'),
    lambda t: t.replace('@".str0" = private constant [4 x i8] c"bad\\00"',
                        '@".table" = private constant [1 x ptr] [ptr @"adc.tape_hint"]'),
], ids=["another linkage", "a table of functions", "a pointer to an internal variable"])
def test_what_the_cut_does_not_know_stays_whole(change):
    text = change(module())
    assert split.parts(text, 3) == [text]


# -- whole programs ------------------------------------------------------------------------

def program(x, w, y):
    h = np.tanh(x @ w)
    z = h - y
    s = np.sum(z * z, axis=1)
    t = np.exp(s - np.max(s))
    return np.sum(np.log(t + 1.0)) + np.sum(w * w)


def loops(a, b):
    total = 0.0
    scratch = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        scratch[i] = a[i] * b[i]
        for j in range(3):
            total += np.sin(scratch[i] * j) * b[i]
    return total + np.sum(scratch)


def _args(n=300):
    rng = np.random.default_rng(3)
    return (rng.standard_normal((n, 40)), rng.standard_normal((40, 20)) * 0.2,
            rng.standard_normal((n, 20)))


@pytest.fixture
def fresh(monkeypatch):
    """No on-disk cache (the part count is not in its key: any count's code is the same
    program), and a record of how many parts each compile made."""
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", "off")
    monkeypatch.setattr(jit, "ONCE", False)  # one object per part (test_llvm_tiers: the tier)
    counts = []
    original = native.Variant.compile

    def counted(self):
        objects = original(self)
        counts.append(len(objects))
        return objects

    monkeypatch.setattr(native.Variant, "compile", counted)
    return counts


def _results(monkeypatch, parts, fn, args, argnums):
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", str(parts))
    value, grads = value_and_grad(adcompile(fn), argnums=argnums)(*args)
    return value, grads


@pytest.mark.parametrize("fn,args,argnums", [
    (program, _args(), (0, 1)),
    (program, _args(5), (1,)),
    (loops, (np.linspace(0, 1, 50), np.linspace(2, 3, 50)), (0, 1)),
], ids=["mlp-like", "mlp-like-small", "loops"])
def test_parts_give_the_same_bits(fn, args, argnums, fresh, monkeypatch):
    one = _results(monkeypatch, 1, fn, args, argnums)
    assert set(fresh) == {1}
    del fresh[:]
    for parts in (2, 3):
        value, grads = _results(monkeypatch, parts, fn, args, argnums)
        assert max(fresh) >= 2, "the gradient's module was not cut"
        del fresh[:]
        assert value == one[0]
        for g, g1 in zip(grads, one[1]):
            np.testing.assert_array_equal(g, g1)


def test_compiles_from_several_threads(fresh, monkeypatch):
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    args = _args(50)
    expected = grad(adcompile(program), argnums=1)(*args)
    results, errors = [], []

    def work():
        try:
            results.append(grad(adcompile(program), argnums=1)(*args))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results:
        np.testing.assert_array_equal(r, expected)


def test_an_error_in_a_part_reaches_the_caller(monkeypatch):
    text = module()
    failing = jit._pass_builder

    def pass_builder(tm, level, unlocked=False):
        run = failing(tm, level, unlocked)
        if not unlocked:
            return run

        def broken(mod):
            if "adc.chunk.b" in str(mod):  # only op b's part has its chunk
                raise RuntimeError("part b failed")
            return run(mod)
        return broken

    monkeypatch.setattr(jit, "_pass_builder", pass_builder)
    with pytest.raises(RuntimeError, match="part b failed"):
        jit.compile_objects(text, parts=3)
    with pytest.raises(RuntimeError, match="part b failed"):  # one part, the caller's thread
        jit.compile_objects(text, parts=1)
    monkeypatch.setattr(jit, "_pass_builder", failing)
    assert len(jit.compile_objects(text, parts=1)) == 1


def test_every_part_goes_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    args = _args(20)
    expected = grad(adcompile(program), argnums=1)(*args)
    loaded = recorded(monkeypatch, jit, "cache_load")
    monkeypatch.setattr(native.Variant, "compile", lambda *a: pytest.fail("compiled again"))
    got = grad(adcompile(program), argnums=1)(*args)
    np.testing.assert_array_equal(got, expected)
    assert any(objects and len(objects) >= 2 for objects in loaded)


def test_a_cache_entry_of_another_layout_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path))
    jit.cache_store("ab" * 32, [b"first", b"second object"])
    assert jit.cache_load("ab" * 32) == [b"first", b"second object"]
    cache.store("cd" * 32, "o", b"\x7fELF an object stored whole")
    monkeypatch.setattr(cache, "_warned", set())
    with pytest.warns(RuntimeWarning, match="another layout"):
        assert jit.cache_load("cd" * 32) is None


def test_the_inspected_module_is_the_whole_one(monkeypatch):
    """llvm_ir() shows the module optimised whole, whatever the cut."""
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    f = adcompile(program)
    args = _args(10)
    f(*args)
    text = f.llvm_ir(*args)
    assert "adc.entry.program" in text and 'declare i32 @"adc.op.' not in text


def test_a_helper_named_as_a_linked_symbol(fresh, monkeypatch):
    """With ADCOMPILE_LLVM_SHARED=0 a module defines its own `adc.rt.buffer`..., internal,
    while the JIT links in the runtime's symbols of those names: exported from its part,
    such a helper must not clash with them."""
    from adcompile.backends.llvm import values

    args = _args(30)
    expected = grad(adcompile(program), argnums=(0, 1))(*args)
    monkeypatch.setattr(values, "SHARED", False)
    monkeypatch.setenv("ADCOMPILE_LLVM_PARTS", "2")
    got = grad(adcompile(program), argnums=(0, 1))(*args)
    assert max(fresh) >= 2
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_a_piece_handed_to_the_pool_is_a_tree_of_its_own():
    """Only a direct call can be inlined: a piece whose address goes to the pool may go to
    another part than the op that hands it over."""
    text = module().replace('%".3" = call i32 @"adc.chunk.a"(ptr %".1", i64 %".2")',
                            '%".3" = call i32 @"adc_parallel_for"(ptr @"adc.chunk.a", '
                            'ptr %".1", i64 %".2")')
    text = text.replace('declare double', 'declare i32 @"adc_parallel_for"(ptr %".1", '
                        'ptr %".2", i64 %".3")\ndeclare double')
    parts = split.parts(text, 4)
    assert len(parts) == 4
    homes = {name: i for i, p in enumerate(parts) for name in defined(p)}
    assert homes["adc.chunk.a.x"] != homes["adc.op.a.x"]
    assert homes["adc.chunk.b"] == homes["adc.op.b.x"]  # called: stays
    for p in parts:
        verified(p)
