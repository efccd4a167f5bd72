"""What keeps a kernel's LLVM module small (issue 13, compile time): the helpers every kernel
calls live once per process in the runtime library (values.shared, pool.py), outlined array
ops recompute the strides a caller derives from shapes (lower._param_pattern), functions that
only plan an operation are not optimised (pairwise.planning), and integer arithmetic that is
one of its operands or a constant is not emitted (values.Builder), a length broadcast from
the constant 1 is the other length itself (arrays.broadcast), and a store whose value cannot
be its destination's memory checks no overlap (fusion.Fusion.apart), and neighbouring axes
whose strides chain are one loop (arrays.coalesced). The corpora check that
results do not change; these check the mechanisms themselves."""

import re

import llvmlite.ir as ir
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from adcompile import adcompile, grad  # noqa: E402
from adcompile.backends.llvm import lower, pool, values  # noqa: E402
from adcompile.backends.llvm.values import F64, I1, I64, PTR, ArrayV, i64  # noqa: E402


def row_norms(x, y):
    z = np.exp(x) * y
    return np.sum(np.sum(z * z, axis=1) + np.zeros(x.shape[0]))


def arrays(n=6, m=5):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, m)), rng.standard_normal((n, m))


def kernel_module_text(fn, *args):
    """The unoptimised LLVM IR of the variant these arguments select."""
    compiled = adcompile(fn)
    compiled(*args)
    native = compiled.specialize(*args).native
    return str(native.variant(args).llvm_module())


def defined(text, name):
    return re.search(rf'^define[^\n]*@"{re.escape(name)}"\(', text, re.M) is not None


def declared(text, name):
    return re.search(rf'^declare[^\n]*@"{re.escape(name)}"\(', text, re.M) is not None


@pytest.mark.parametrize("name", pool.RUNTIME)
def test_kernels_declare_the_runtime_helpers_and_define_none(name):
    x, y = arrays(400, 300)  # large enough for a parallel zero fill
    text = kernel_module_text(row_norms, x, y)
    assert not defined(text, name)
    if name != pool.ZERO_CHUNK_FN or "adc_parallel_for" in text:
        assert declared(text, name)


def test_the_runtime_library_defines_each_helper_once():
    text = str(pool._Pool().build())
    for name in pool.RUNTIME:
        assert len(re.findall(rf'^define[^\n]*@"{re.escape(name)}"\(', text, re.M)) == 1, name


def test_the_runtime_library_is_linked_once_per_process():
    first = pool.runtime_symbols()
    x, y = arrays()
    adcompile(row_norms)(x, y)
    grad(adcompile(row_norms), argnums=(0, 1))(x, y)
    assert pool.runtime_symbols() == first
    assert all(address for address in first.values())
    assert pool._library() is pool._library()


@pytest.mark.parametrize("parallel", [True, False])
def test_results_with_the_shared_helpers(parallel, monkeypatch):
    """Allocations, releases and a zero fill split over the pool (threshold 0) through the
    runtime library's helpers give numpy's results, and memory is reused across calls."""
    monkeypatch.setattr(pool, "_settings", dict(pool._settings, min_work=0, threads=2))
    pool._apply()
    try:
        x, y = arrays(300, 70)
        f = adcompile(row_norms, parallel=parallel)
        g = grad(adcompile(row_norms, parallel=parallel), argnums=(0, 1))
        for _ in range(3):
            assert f(x, y) == pytest.approx(row_norms(x, y), rel=1e-12)
            gx, gy = g(x, y)
            np.testing.assert_allclose(gx, 2 * np.exp(2 * x) * y * y, rtol=1e-12)
            np.testing.assert_allclose(gy, 2 * np.exp(2 * x) * y, rtol=1e-12)
    finally:
        monkeypatch.undo()
        pool._apply()


# -- outlined ops: derived strides recomputed inside -------------------------------------------

def test_a_derived_stride_is_recomputed_not_passed():
    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64, I64]), name="caller")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n, m = fn.args
    stride = b.mul(b.mul(i64(1), m), n)  # the C stride of axis 0 of an (k, n, m) array
    params, index = [], {}
    patterns = [lower._param_pattern(c, params, index) for c in (n, m, stride, i64(7))]
    assert params == [n, m]
    assert patterns[:2] == [("p", 0), ("p", 1)]
    assert patterns[2][0] == "e" and patterns[2][1] == "mul"
    assert patterns[3] == ("c", "i64 7")
    callee = ir.Function(fn.module, ir.FunctionType(I64, [I64, I64]), name="callee")
    cb = ir.IRBuilder(callee.append_basic_block("entry"))
    local = lower._Recomputed(cb, {id(p): a for p, a in zip(params, callee.args)})
    inside = local(stride)
    assert inside is local(stride)  # emitted once
    cb.ret(inside)
    body = str(callee)
    assert body.count(" mul ") == 2 and '%".1"' in body and '%".2"' in body


def test_arithmetic_on_loaded_values_stays_a_parameter():
    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [PTR]), name="caller")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loaded = b.load(fn.args[0], typ=I64)
    deep = loaded
    for _ in range(lower._RECOMPUTE_DEPTH + 2):
        deep = b.add(deep, i64(1))
    params, index = [], {}
    lower._param_pattern(loaded, params, index)
    lower._param_pattern(deep, params, index)
    assert params[0] is loaded
    assert len(params) == 2  # the chain is cut at _RECOMPUTE_DEPTH: its root is passed


def powered_rows(x, y):  # z, a power (a libm call) used twice, is computed into an array
    z = np.abs(x) ** 1.5 * y
    return np.sum(np.sum(z * z, axis=1) + np.zeros(x.shape[0]))


def test_outlined_op_on_c_contiguous_arrays_takes_no_strides():
    """|x| ** 1.5 * y on two C-contiguous (n, m) arguments: the outlined product takes the
    two shapes (4 integers) and recomputes the strides (m, 1) from them, so LLVM knows the
    rows are contiguous (before: 6 integers, the stride m of each operand passed on its
    own)."""
    x, y = arrays()
    text = kernel_module_text(powered_rows, x, y)
    products = re.findall(r'^define internal i32 @"adc\.op\.mul\.\d+"\(([^)]*)\)', text, re.M)
    assert products
    assert all(params.count("i64") == 4 for params in products), products


# -- planning helpers are not optimised ---------------------------------------------------------

def test_planning_functions_are_optnone():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 5, 6)).transpose(2, 0, 1)  # a layout that needs a sum plan
    text = kernel_module_text(_sum_axis_1, a)
    planners = re.findall(r'^define[^\n]*@"adc\.(?:sum_plan|axis_order)\.\d+"\([^\n]*', text,
                          re.M)
    assert planners
    assert all("optnone" in line and "noinline" in line for line in planners)
    np.testing.assert_allclose(adcompile(_sum_axis_1)(a), a.sum(axis=1), rtol=1e-12)


def _sum_axis_1(a):
    return np.sum(a, axis=1)


def _total(v):
    return np.sum(v * v)


def test_a_parallel_sums_tree_is_optnone():
    """The function that cuts a long pairwise sum into pieces for the pool and adds their
    results up the tree runs once a sum: not optimised (the pieces compute)."""
    v = np.linspace(-1.0, 1.0, 100_001)
    text = kernel_module_text(_total, v)
    trees = re.findall(r'^define[^\n]*@"adc\.pairwise_tree\.[^"]+"\([^\n]*', text, re.M)
    assert trees and all("optnone" in line and "noinline" in line for line in trees)
    assert adcompile(_total)(v) == np.sum(v * v)


def test_unshared_helpers_give_the_same_results(monkeypatch):
    """ADCOMPILE_LLVM_SHARED=0 (values.SHARED False, for comparisons): each module defines
    its own internal helpers, and the results are the same."""
    x, y = arrays(40, 30)
    shared = grad(adcompile(row_norms), argnums=(0, 1))(x, y)
    monkeypatch.setattr(values, "SHARED", False)
    text = kernel_module_text(row_norms, x, y)
    assert defined(text, pool.BUFFER_FN) and defined(text, pool.SLABS_DONE_FN)
    alone = grad(adcompile(row_norms), argnums=(0, 1))(x, y)
    for a, b in zip(shared, alone):
        np.testing.assert_array_equal(a, b)


# -- integer identities are not emitted ----------------------------------------------------------

def test_the_builder_folds_integer_identities_and_constants_only():
    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64, I1, F64]), name="f")
    b = values.Builder(fn.append_basic_block("entry"))
    x, c, y = fn.args
    true, false = ir.Constant(I1, 1), ir.Constant(I1, 0)
    assert b.add(x, i64(0)) is x and b.add(i64(0), x) is x and b.sub(x, i64(0)) is x
    assert b.mul(x, i64(1)) is x and b.mul(i64(1), x) is x
    assert str(b.mul(x, i64(0))) == "i64 0" and str(b.mul(i64(0), x)) == "i64 0"
    assert b.and_(true, c) is c and b.and_(c, true) is c
    assert b.or_(false, c) is c and b.or_(c, false) is c
    assert b.select(true, x, i64(5)) is x and b.select(false, i64(5), x) is x
    assert str(b.sub(i64(0), i64(1))) == "i64 -1" and str(b.mul(i64(3), i64(8))) == "i64 24"
    assert str(b.icmp_signed("<", i64(1), i64(0))) == "i1 0"
    assert str(b.icmp_signed(">=", i64(1), i64(1))) == "i1 1"
    assert not fn.blocks[0].instructions
    kept = [b.mul(i64(1 << 62), i64(4)),  # wraps: left to LLVM
            b.add(x, i64(1)), b.sub(i64(0), x), b.mul(x, i64(2)), b.and_(c, false),
            b.or_(c, true), b.select(c, x, i64(0)), b.fadd(y, ir.Constant(F64, 0.0)),
            b.fmul(y, ir.Constant(F64, 1.0))]  # -0.0 + 0.0 is +0.0; 1.0 * sNaN is quiet
    assert fn.blocks[0].instructions == kept


def _kernel_functions(text):
    """{name: body} of the functions the kernel lowering builds (not the entry point)."""
    found = re.findall(r'^define[^\n]*@"(adc\.(?:fn|op|chunk)\.[^"]+)"\((.*?)^}', text,
                       re.M | re.S)
    return dict(found)


_IDENTITY = re.compile(r'= (?:add|mul) i64 (?:0|1), |= (?:add i64 %"[^"]+", 0|mul i64 %"[^"]+", '
                       r'[01])$|= and i1 (?:1, |%"[^"]+", 1$)|= or i1 (?:0, |%"[^"]+", 0$)', re.M)


def test_kernels_carry_no_integer_identities():
    x, y = arrays(400, 300)
    functions = _kernel_functions(kernel_module_text(row_norms, x, y))
    assert len(functions) > 3
    for name, body in functions.items():
        assert not _IDENTITY.search(body), (name, _IDENTITY.search(body).group(0))


# -- broadcasting against a length 1 known while compiling ---------------------------------------

def test_broadcasting_against_a_constant_one_emits_nothing():
    """An axis of the constant length 1 (keepdims, x[:, None]) stretches to any length: the
    result keeps the other operand's length itself (no select, no check), so what comes
    after still knows two lengths are the same value (an outlined op's parameters)."""
    fn = ir.Function(ir.Module(), ir.FunctionType(I64, [I64, I64, PTR]), name="f")
    lowering = lower._Lowering(fn.module, fn, False, False)
    lowering.b = values.Builder(fn.append_basic_block("entry"))
    n, m, data = fn.args
    a = ArrayV("f64", data, data, [n, m], [m, i64(1)])
    column = ArrayV("f64", data, data, [n, i64(1)], [i64(1), i64(0)])
    row = ArrayV("f64", data, data, [i64(1), m], [i64(0), i64(1)])
    shape, strides = lowering.broadcast([column, a, row], 2, None)
    assert shape[0] is n and shape[1] is m
    assert [str(s) for s in strides[0]] == ["i64 1", "i64 0"]
    assert strides[1] == [m, i64(1)] and strides[1][0] is m
    assert [str(s) for s in strides[2]] == ["i64 0", "i64 1"]
    assert strides == [lowering.fit_into(v, [n, m], None, "assignment")
                       for v in (column, a, row)]
    assert not fn.blocks[0].instructions


def centred(x):
    return np.sum((x - np.max(x, axis=1, keepdims=True)) ** 2)


def test_a_keepdims_broadcast_gives_numpys_result_without_a_check():
    x = np.random.default_rng(2).standard_normal((50, 40))
    kernel = _kernel_functions(kernel_module_text(centred, x))["adc.fn.centred"]
    assert "out_of_range" not in kernel  # (the lengths' check, before)
    assert adcompile(centred)(x) == centred(x)
    g = grad(adcompile(centred))(x)
    np.testing.assert_allclose(g, grad_of_centred(x), rtol=1e-12, atol=1e-12)


def grad_of_centred(x):
    d = x - np.max(x, axis=1, keepdims=True)
    g = 2 * d
    top = x == np.max(x, axis=1, keepdims=True)
    g[top] -= np.sum(2 * d, axis=1)  # (one maximum per row)
    return g


# -- stores whose value cannot be the destination's memory ---------------------------------------

def shifted(x):
    y = x * 2.0
    y[1:] += y[:-1]  # reads what it writes: numpy's ufunc reads a copy
    z = x * 3.0
    z[1:] += y[:-1]  # two new buffers: no overlap to check
    z[:-1] = x[1:]  # an argument into a new buffer
    return y + z


def test_only_a_store_that_may_read_its_destination_checks_for_overlap():
    x = np.arange(7.0)
    text = kernel_module_text(shifted, x)
    assert text.count("overlap.copy:") == 1
    np.testing.assert_array_equal(adcompile(shifted)(x), shifted(x))


def two_uses(x, w):
    h = x @ w
    return np.sum(np.tanh(h)) + np.sum(h @ w.T)


def test_reverse_mode_adds_into_its_shadows_without_overlap_checks(monkeypatch):
    """h_bar and w_bar each receive two contributions, products' new buffers: the additions
    check nothing (two overlap checks and copies before)."""
    from tests.compiler.test_llvm_parts import recorded
    from adcompile.backends.llvm import native

    texts = recorded(monkeypatch, native.Variant, "llvm_module",
                     keep=lambda args, result: str(result))
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((6, 5)), rng.standard_normal((5, 5))
    gx, gw = grad(adcompile(two_uses), argnums=(0, 1))(x, w)
    assert texts[-1].count("adc.op.iadd") >= 2
    assert "overlap.copy:" not in texts[-1]
    h_bar = (1 - np.tanh(x @ w) ** 2) + np.ones((6, 5)) @ w
    np.testing.assert_allclose(gx, h_bar @ w.T, rtol=1e-12)
    np.testing.assert_allclose(gw, x.T @ h_bar + np.ones((6, 5)).T @ (x @ w), rtol=1e-12)


# -- neighbouring axes whose strides chain are one loop ------------------------------------------

def scaled_rows(x):
    return (x - 2.0) * x + x.T.T


@pytest.mark.parametrize("parallel", [True, False])
def test_an_elementwise_op_on_a_c_contiguous_matrix_is_one_loop(parallel):
    """Every operand's row stride is its row's length (the same value while compiling), so
    the (n, m) nest is one loop over n * m elements (arrays.coalesced), in the same order."""
    x = arrays(40, 2)[0]
    compiled = adcompile(scaled_rows, parallel=parallel)
    np.testing.assert_array_equal(compiled(x), scaled_rows(x))
    text = str(compiled.specialize(x).native.variant((x,)).llvm_module())
    loops = [body.count("!llvm.loop") for body in _kernel_functions(text).values()]
    assert max(loops) == 1, loops


def test_a_transposed_operand_keeps_its_nest():
    x = np.asfortranarray(arrays(6, 5)[0])
    compiled = adcompile(scaled_rows)
    np.testing.assert_array_equal(compiled(x), scaled_rows(x))
    np.testing.assert_array_equal(compiled(x[:, ::2]), scaled_rows(x[:, ::2]))
    text = str(compiled.specialize(x).native.variant((x,)).llvm_module())
    assert max(body.count("!llvm.loop") for body in _kernel_functions(text).values()) >= 2
