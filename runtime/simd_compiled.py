"""runtime/simd_softmax.py's float32 log_softmax kernels, and nll_loss's ladder sum
(cascade_sum.nll_sum), compiled with llvmlite: the same operations in the same order (SLEEF's
expf_u10 and logf_u10 with hardware fused multiply-adds, PyTorch's row sums in LANES lanes, the
eight-level ladder), one loop over the elements instead of tens of numpy calls on small
arrays (a log_softmax of 64 x 10 costs ~150 us as numpy calls, ~10 us here). Likewise the
LSTM's per-step element-wise work (rules/rnn.py: oneDNN's sigmoid and tanh of
dnnl_eltwise.py and the cell update, forward; the gate cotangents, backward).

LLVM keeps IEEE float semantics here: no fast-math flags are set, so nothing is reassociated
or contracted, and every fused multiply-add is an explicit `llvm.fma`. The numpy kernels stay
the reference (tests compare the two over many inputs) and the fallback: `kernels()` is None
where llvmlite is missing or the compile fails, and the numpy code then runs.
"""

import ctypes
import functools
import threading

import numpy as np

from runtime import simd_layer_norm
from runtime.mkl import address
from runtime.simd_softmax import LANES, _EXP_POLY, _INV_LN2, _LN2, _LN2_LOWER, _LN2_UPPER, \
    _LOG_POLY

F32 = np.float32
_LOCK = threading.Lock()


def log_softmax(rows, out):
    """out = log_softmax of each row of `rows`, both C-ordered float32 (rows, n); False where
    no compiled kernel is at hand or a row has a value that is not finite or a maximum of
    zero (the numpy route decides those)."""
    fns = kernels()
    return fns is not None and not fns[0](rows.ctypes.data, out.ctypes.data, *rows.shape)


def log_softmax_grad(g, result, out):
    """out = g - exp(result) * (row sums of g), as one fused multiply-add; all C-ordered
    float32 (rows, n); False where no compiled kernel is at hand or a value is not finite."""
    fns = kernels()
    return fns is not None and not fns[1](g.ctypes.data, result.ctypes.data, out.ctypes.data,
                                          *g.shape)


def lstm_steps(pre, bias, cells, gates, tanh_c, hs):
    """The LSTM forward's element-wise work bound to one layer's arrays, as rnn.CellStep's
    numpy lines do it (dnnl_eltwise.LstmGates, the cell update) on columns: a function of the
    step t that reads pre (4H, B) and bias (4H,; None: no bias) and writes gates[t] (the
    activations, rows (input, forget, output, cell)), cells[t + 1] = fma(i, g, cells[t] f),
    tanh_c[t] = tanh(cells[t + 1]) and hs[t + 1] = o tanh_c[t]; cells and hs (T + 1, H, B),
    gates (T, 4H, B), tanh_c (T, H, B). None where no compiled kernel is at hand or an array
    is not float32 and C-ordered. Addresses are taken once: a ctypes address costs ~2 us, the
    numpy step it replaces ~190 us, the compiled one ~5 us."""
    fns = kernels()
    if fns is None or not _plain(pre, cells, gates, tanh_c, hs, bias):
        return None
    p, c, g, tc, h = (a.ctypes.data for a in (pre, cells, gates, tanh_c, hs))
    sc, sg, stc, sh = (a.strides[0] for a in (cells, gates, tanh_c, hs))
    b = 0 if bias is None else bias.ctypes.data
    kernel, shape = fns[3], cells.shape[1:]
    keep = (pre, bias, cells, gates, tanh_c, hs)  # alive as long as the function
    return lambda t, _=keep: kernel(p, b, c + t * sc, g + t * sg, c + (t + 1) * sc,
                                    tc + t * stc, h + (t + 1) * sh, *shape)


def lstm_steps_back(dh, g_out, dc, gates, slope, tanh_slope, tanh_c, cells, dpre):
    """rnn._cell_step_numpy bound to one layer's arrays: a function of the step k that, with
    dh' = dh + g_out[k] (g_out None: dh) and dc' = dc + (tanh_slope[k] dh') o, fills dpre[k]
    (4H, B, PyTorch's gate order (i, f, g, o)) from the kernel-ordered gates[k] and slope[k]
    and overwrites dc (H, B) with dc' f; dh is read at each step. None where no compiled
    kernel is at hand or an array is not float32 and C-ordered."""
    fns = kernels()
    steps = (g_out, gates, slope, tanh_slope, tanh_c, cells, dpre)
    if fns is None or not _plain(dh, dc, *steps):
        return None
    go, g, sl, ts, tc, c, dp = (0 if a is None else a.ctypes.data for a in steps)
    sgo, sg, ssl, sts, stc, sc, sdp = (0 if a is None else a.strides[0] for a in steps)
    h, d, kernel, shape = dh.ctypes.data, dc.ctypes.data, fns[4], dh.shape
    keep = (dh, dc, *steps)  # alive as long as the function
    return lambda k, _=keep: kernel(h, go + k * sgo, d, g + k * sg, sl + k * ssl, ts + k * sts,
                                    tc + k * stc, c + k * sc, dp + k * sdp, d, *shape)


def libm_logf(x):
    """The C library's logf of each element of a float32 array, or None where no compiled
    kernel is at hand."""
    fns = kernels()
    if fns is None:
        return None
    x = np.ascontiguousarray(x, F32)
    out = np.empty_like(x)
    fns[5](x.ctypes.data, out.ctypes.data, x.size)
    return out


def libm_map(name, x):
    """The C library's float function `name` (one of LIBM_FLOAT) of each element of a float32
    array, or None where no compiled kernel is at hand."""
    fns = kernels()
    if fns is None:
        return None
    x = np.ascontiguousarray(x, F32)
    out = np.empty_like(x)
    fns[11][name](x.ctypes.data, out.ctypes.data, x.size)
    return out


def fma_chain(a, b):
    """a (..., m, n) @ b (..., n, p) for float32 arrays of one batch shape, each output the
    chain of fused multiply-adds over n in order from the first (rounded) product; None where
    no compiled kernel is at hand."""
    fns = kernels()
    if fns is None or a.dtype != F32 or b.dtype != F32:
        return None
    lead = a.shape[:-2]
    a3 = a.reshape((-1,) + a.shape[-2:])
    b3 = b.reshape((-1,) + b.shape[-2:])
    out = np.empty((a3.shape[0], a3.shape[1], b3.shape[2]), F32)
    strides = [s // 4 for s in a3.strides + b3.strides]
    fns[6](address(a3), address(b3), address(out), a3.shape[0], a3.shape[1], a3.shape[2],
           b3.shape[2], *strides)
    return out.reshape(lead + out.shape[1:])


def layer_norm_moments(rows, eps):
    """layer_norm_cpu.moments' (mean, rstd) of each row of a C-ordered float32 (M, N) array,
    (M,) each; None where no compiled kernel is at hand or rows is not such an array."""
    fns = kernels()
    if fns is None or rows.dtype != F32 or not rows.flags.c_contiguous:
        return None
    mean = np.empty(rows.shape[0], F32)
    rstd = np.empty_like(mean)
    fns[7](address(rows), address(mean), address(rstd), rows.shape[0], rows.shape[1], eps)
    return mean, rstd


def dnnl_gelu(x, slope=False):
    """dnnl_eltwise.gelu (slope: gelu_slope) of a C-ordered float32 array; None where no
    compiled kernel is at hand or x is not such an array."""
    fns = kernels()
    if fns is None or x.dtype != F32 or not x.flags.c_contiguous:
        return None
    out = np.empty_like(x)
    fns[9 if slope else 8](address(x), address(out), x.size)
    return out


def sleef_expf(x):
    """simd_softmax.sleef_expf of a C-ordered float32 array of finite values; None where no
    compiled kernel is at hand or x is not such an array."""
    fns = kernels()
    if fns is None or x.dtype != F32 or not x.flags.c_contiguous or not np.isfinite(x).all():
        return None
    out = np.empty_like(x)
    fns[10](address(x), address(out), x.size)
    return out


def _plain(*arrays):
    """Whether each array (None: no array) is float32 and C-ordered."""
    return all(a is None or (a.dtype == F32 and a.flags.c_contiguous) for a in arrays)


def nll_sum(values, counted, power):
    """cascade_sum.nll_sum of a C-ordered float32 vector (counted: a bool mask of the samples
    that count, or None), its ladder's step 2**power; None where no compiled kernel is at
    hand."""
    fns = kernels()
    if fns is None:
        return None
    mask = 0 if counted is None else np.ascontiguousarray(counted, np.bool_).ctypes.data
    return F32(fns[2](values.ctypes.data, mask, values.shape[0], power))


@functools.cache
def kernels():
    """(log_softmax forward, its backward, nll_sum, lstm step and its backward, the C
    library's logf over an array, fma_chain, layer norm's row moments,
    oneDNN's gelu and its slope, SLEEF's expf over an array, {name: the C library's float
    function `name` over an array} for LIBM_FLOAT) as ctypes functions, compiled once per
    process; None where llvmlite cannot compile them."""
    try:
        with _LOCK:
            return _compile()
    except Exception:  # no llvmlite, no native target: numpy computes the same bits
        return None


# -- code generation ------------------------------------------------------------------------

def _constant(x):
    """An LLVM float literal: the float32 value written as the double that holds it."""
    return f"0x{np.float64(F32(x)).view(np.uint64):016X}"


def _exp_body():
    """SLEEF's expf_u10 of %d (finite), as simd_softmax.sleef_expf computes it."""
    c = [_constant(v) for v in _EXP_POLY]
    return f"""
  %dq = fmul float %d, {_constant(_INV_LN2)}
  %q = call float @llvm.rint.f32(float %dq)
  %s0 = call float @llvm.fma.f32(float %q, float {_constant(-_LN2_UPPER)}, float %d)
  %s = call float @llvm.fma.f32(float %q, float {_constant(-_LN2_LOWER)}, float %s0)
  %u1 = call float @llvm.fma.f32(float %s, float {c[0]}, float {c[1]})
  %u2 = call float @llvm.fma.f32(float %u1, float %s, float {c[2]})
  %u3 = call float @llvm.fma.f32(float %u2, float %s, float {c[3]})
  %u4 = call float @llvm.fma.f32(float %u3, float %s, float {c[4]})
  %u5 = call float @llvm.fma.f32(float %u4, float %s, float {c[5]})
  %ss = fmul float %s, %s
  %v = call float @llvm.fma.f32(float %ss, float %u5, float %s)
  %w = fadd float 1.0, %v
  %qi = fptosi float %q to i32
  %r = call float @llvm.ldexp.f32.i32(float %w, i32 %qi)
  %under = fcmp olt float %d, -104.0
  %over = fcmp ogt float %d, 100.0
  %r1 = select i1 %under, float 0.0, float %r
  %r2 = select i1 %over, float 0x7FF0000000000000, float %r1
  ret float %r2"""


def _two_sum(name, x, y):
    """%{name}0 + %{name}1 = x + y exactly (Knuth's two-sum, as simd_pow._two_sum)."""
    return f"""
  %{name}0 = fadd float {x}, {y}
  %{name}v = fsub float %{name}0, {x}
  %{name}t = fsub float %{name}0, %{name}v
  %{name}a = fsub float {x}, %{name}t
  %{name}b = fsub float {y}, %{name}v
  %{name}1 = fadd float %{name}a, %{name}b"""


def _log_body():
    """SLEEF's logf_u10 of a positive normal %d, as simd_softmax.sleef_logf computes it."""
    c = [_constant(v) for v in _LOG_POLY]
    return f"""
  %scaled = fmul float %d, {_constant(1 / 0.75)}
  %bits = bitcast float %scaled to i32
  %biased = lshr i32 %bits, 23
  %ex = sub i32 %biased, 126
  %e1 = sub i32 %ex, 1
  %e = sitofp i32 %e1 to float
  %down = sub i32 0, %e1
  %m = call float @llvm.ldexp.f32.i32(float %d, i32 %down)
  %s_hi = fmul float {_constant(_LN2[0])}, %e
  %nshi = fneg float %s_hi
  %sl0 = call float @llvm.fma.f32(float {_constant(_LN2[0])}, float %e, float %nshi)
  %s_lo = call float @llvm.fma.f32(float {_constant(_LN2[1])}, float %e, float %sl0)
  ; num = two_sum(-1, m), den = two_sum(1, m){_two_sum("n", "-1.0", "%m")}
  {_two_sum("d", "1.0", "%m").lstrip()}
  ; x = div2(num, den)
  %t = fdiv float 1.0, %d0
  %x_hi = fmul float %n0, %t
  %nxh = fneg float %x_hi
  %u = call float @llvm.fma.f32(float %t, float %n0, float %nxh)
  %nd0 = fneg float %d0
  %nd1 = fneg float %d1
  %l0 = call float @llvm.fma.f32(float %nd0, float %t, float 1.0)
  %l = call float @llvm.fma.f32(float %nd1, float %t, float %l0)
  %k0 = call float @llvm.fma.f32(float %n1, float %t, float %u)
  %x_lo = call float @llvm.fma.f32(float %x_hi, float %l, float %k0)
  %x2 = fmul float %x_hi, %x_hi
  %p1 = call float @llvm.fma.f32(float %x2, float {c[0]}, float {c[1]})
  %p = call float @llvm.fma.f32(float %p1, float %x2, float {c[2]})
  %a_hi = fmul float %x_hi, 2.0
  %a_lo = fmul float %x_lo, 2.0
  %hi = fadd float %s_hi, %a_hi
  %h1 = fsub float %s_hi, %hi
  %h2 = fadd float %h1, %a_hi
  %h3 = fadd float %h2, %s_lo
  %lo = fadd float %h3, %a_lo
  %x3 = fmul float %x2, %x_hi
  %tail = fmul float %x3, %p
  %hi2 = fadd float %hi, %tail
  %g1 = fsub float %hi, %hi2
  %g2 = fadd float %g1, %tail
  %lo2 = fadd float %g2, %lo
  %r = fadd float %hi2, %lo2
  ret float %r"""


# row sums in PyTorch's lanes: lane j of a row of n >= LANES starts at element j and adds
# j + LANES, j + 2 LANES, ...; the lanes fold as a tree; a shorter row adds up in order
_LANE_SUM = """
define internal float @lane_sum(ptr %row, i64 %n, i1 %exp, float %max) {
entry:
  %acc = alloca [LANES x float]
  %short = icmp slt i64 %n, LANES
  br i1 %short, label %seq, label %lanes
seq:
  %v0 = call float @element(ptr %row, i64 0, i1 %exp, float %max)
  br label %seq_loop
seq_loop:
  %i = phi i64 [1, %seq], [%i1, %seq_body]
  %s = phi float [%v0, %seq], [%s1, %seq_body]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %seq_body, label %seq_done
seq_body:
  %vi = call float @element(ptr %row, i64 %i, i1 %exp, float %max)
  %s1 = fadd float %s, %vi
  %i1 = add i64 %i, 1
  br label %seq_loop
seq_done:
  ret float %s
lanes:
  %j = phi i64 [0, %entry], [%j1, %lanes]
  %vj = call float @element(ptr %row, i64 %j, i1 %exp, float %max)
  %pj = getelementptr float, ptr %acc, i64 %j
  store float %vj, ptr %pj
  %j1 = add i64 %j, 1
  %jmore = icmp slt i64 %j1, LANES
  br i1 %jmore, label %lanes, label %rest
rest:
  %k = phi i64 [LANES, %lanes], [%k1, %rest_body]
  %kmore = icmp slt i64 %k, %n
  br i1 %kmore, label %rest_body, label %fold
rest_body:
  %vk = call float @element(ptr %row, i64 %k, i1 %exp, float %max)
  %lane = and i64 %k, MASK
  %pk = getelementptr float, ptr %acc, i64 %lane
  %ak = load float, ptr %pk
  %ak1 = fadd float %ak, %vk
  store float %ak1, ptr %pk
  %k1 = add i64 %k, 1
  br label %rest
fold:
  %half = phi i64 [HALF, %rest], [%half1, %fold_next]
  br label %fold_body
fold_body:
  %f = phi i64 [0, %fold], [%f1, %fold_body]
  %pf = getelementptr float, ptr %acc, i64 %f
  %f2 = add i64 %f, %half
  %pf2 = getelementptr float, ptr %acc, i64 %f2
  %af = load float, ptr %pf
  %af2 = load float, ptr %pf2
  %sum = fadd float %af, %af2
  store float %sum, ptr %pf
  %f1 = add i64 %f, 1
  %fmore = icmp slt i64 %f1, %half
  br i1 %fmore, label %fold_body, label %fold_next
fold_next:
  %half1 = lshr i64 %half, 1
  %hmore = icmp ne i64 %half1, 0
  br i1 %hmore, label %fold, label %done
done:
  %total = load float, ptr %acc
  ret float %total
}

define internal float @element(ptr %row, i64 %i, i1 %exp, float %max) alwaysinline {
entry:
  %p = getelementptr float, ptr %row, i64 %i
  %x = load float, ptr %p
  br i1 %exp, label %e, label %plain
e:
  %shifted = fsub float %x, %max
  %y = call float @sleef_expf(float %shifted)
  ret float %y
plain:
  ret float %x
}
""".replace("LANES", str(LANES)).replace("MASK", str(LANES - 1)).replace("HALF", str(LANES // 2))

# a row's maximum, or nan where one of its values is not finite
_ROW_MAX = """
define internal float @row_max(ptr %row, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %next]
  %m = phi float [0xFFF0000000000000, %entry], [%m1, %next]
  %p = getelementptr float, ptr %row, i64 %i
  %x = load float, ptr %p
  %ax = call float @llvm.fabs.f32(float %x)
  %finite = fcmp olt float %ax, 0x7FF0000000000000
  br i1 %finite, label %next, label %bad
next:
  %gt = fcmp ogt float %x, %m
  %m1 = select i1 %gt, float %x, float %m
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %done
bad:
  ret float 0x7FF8000000000000
done:
  ret float %m1
}
"""


def _row_kernel(name, inputs, check, prologue, element):
    """An i32 function of C-ordered float32 (rows, n) arrays `inputs` and `out`: for each
    row, `check` sets %ok (whether the row may be computed here), `prologue` computes the
    row's values, `element` sets %y for element %i of the row, stored to out. Returns 1 at
    the first row refused (nothing written to it and the rows after it), 0 when done."""
    arrays = inputs + ["out"]
    params = ", ".join(f"ptr noalias %{a}" for a in arrays)
    rows = "\n".join(f"  %{a}r = getelementptr float, ptr %{a}, i64 %base" for a in arrays)
    return f"""
define i32 @{name}({params}, i64 %rows, i64 %n) {{
entry:
  br label %row_loop
row_loop:
  %r = phi i64 [0, %entry], [%r1, %row_done]
  %rmore = icmp slt i64 %r, %rows
  br i1 %rmore, label %row, label %exit
row:
  %base = mul i64 %r, %n
{rows}
{check}
  br i1 %ok, label %prologue, label %refuse
prologue:
{prologue}
  br label %col
col:
  %i = phi i64 [0, %prologue], [%i1, %col]
{element}
  %po = getelementptr float, ptr %outr, i64 %i
  store float %y, ptr %po
  %i1 = add i64 %i, 1
  %imore = icmp slt i64 %i1, %n
  br i1 %imore, label %col, label %row_done
row_done:
  %r1 = add i64 %r, 1
  br label %row_loop
refuse:
  ret i32 1
exit:
  ret i32 0
}}
"""


# forward: out = (x - max) - log(lane sum of exp(x - max)), refusing a row with a value that
# is not finite or a maximum of zero (whose sign numpy's reduction picks: numpy decides those)
_FORWARD = _row_kernel("log_softmax_fwd", ["x"], """
  %m = call float @row_max(ptr %xr, i64 %n)
  %ok = fcmp one float %m, 0.0""", """
  %total = call float @lane_sum(ptr %xr, i64 %n, i1 true, float %m)
  %lg = call float @sleef_logf(float %total)""", """
  %px = getelementptr float, ptr %xr, i64 %i
  %v = load float, ptr %px
  %s = fsub float %v, %m
  %y = fsub float %s, %lg""")

# backward: out = fma(exp(result), -(lane sum of g), g), refusing a row with a value of g or
# result that is not finite
_BACKWARD = _row_kernel("log_softmax_bwd", ["g", "res"], """
  %gm = call float @row_max(ptr %gr, i64 %n)
  %rm = call float @row_max(ptr %resr, i64 %n)
  %ok = fcmp ord float %gm, %rm""", """
  %total = call float @lane_sum(ptr %gr, i64 %n, i1 false, float 0.0)
  %neg = fneg float %total""", """
  %pr = getelementptr float, ptr %resr, i64 %i
  %v = load float, ptr %pr
  %e = call float @sleef_expf(float %v)
  %pg = getelementptr float, ptr %gr, i64 %i
  %gv = load float, ptr %pg
  %y = call float @llvm.fma.f32(float %e, float %neg, float %gv)""")

# nll_loss's ladder (cascade_sum.nll_sum, its loop form): sample b (where counted) is added
# to level 0, then while b is a multiple of step, step**2, ... a level is added into the one
# above and cleared; the levels are added up last, lowest first, from +0
_NLL_LADDER = """
define float @nll_ladder(ptr %v, ptr %counted, i64 %n, i64 %power) {
entry:
  %levels = alloca [LEVELS x float]
  br label %clear
clear:
  %c = phi i64 [0, %entry], [%c1, %clear]
  %pc = getelementptr float, ptr %levels, i64 %c
  store float 0.0, ptr %pc
  %c1 = add i64 %c, 1
  %cmore = icmp slt i64 %c1, LEVELS
  br i1 %cmore, label %clear, label %start
start:
  %one = shl i64 1, %power
  %mask = sub i64 %one, 1
  %masked = icmp ne ptr %counted, null
  br label %sample
sample:
  %b = phi i64 [0, %start], [%b1, %next]
  %more = icmp slt i64 %b, %n
  br i1 %more, label %check, label %total
check:
  br i1 %masked, label %read_mask, label %add
read_mask:
  %pm = getelementptr i8, ptr %counted, i64 %b
  %m = load i8, ptr %pm
  %skip = icmp eq i8 %m, 0
  br i1 %skip, label %next, label %add
add:
  %pv = getelementptr float, ptr %v, i64 %b
  %x = load float, ptr %pv
  %l0 = load float, ptr %levels
  %l0x = fadd float %l0, %x
  store float %l0x, ptr %levels
  br label %flush
flush:
  %j = phi i64 [0, %add], [%j1, %carry]
  %jmore = icmp slt i64 %j, TOP
  br i1 %jmore, label %test, label %next
test:
  %shift = mul i64 %j, %power
  %bits = shl i64 %mask, %shift
  %low = and i64 %b, %bits
  %due = icmp eq i64 %low, 0
  br i1 %due, label %carry, label %next
carry:
  %pj = getelementptr float, ptr %levels, i64 %j
  %j1 = add i64 %j, 1
  %pj1 = getelementptr float, ptr %levels, i64 %j1
  %lj = load float, ptr %pj
  %lj1 = load float, ptr %pj1
  %up = fadd float %lj1, %lj
  store float %up, ptr %pj1
  store float 0.0, ptr %pj
  br label %flush
next:
  %b1 = add i64 %b, 1
  br label %sample
total:
  br label %sum
sum:
  %k = phi i64 [0, %total], [%k1, %sum]
  %t = phi float [0.0, %total], [%t1, %sum]
  %pk = getelementptr float, ptr %levels, i64 %k
  %lk = load float, ptr %pk
  %t1 = fadd float %t, %lk
  %k1 = add i64 %k, 1
  %kmore = icmp slt i64 %k1, LEVELS
  br i1 %kmore, label %sum, label %done
done:
  ret float %t1
}
""".replace("LEVELS", "8").replace("TOP", "7")

def _fma_chain(name, coefficients, r):
    """%{name} = the polynomial with these coefficients (LLVM operands, highest degree first)
    at r, by a chain of llvm.fma, as fma.horner computes it."""
    lines, p = [], coefficients[0]
    for k, c in enumerate(coefficients[1:]):
        lines.append(f"  %{name}{k} = call float @llvm.fma.f32(float {p}, float {r}, float {c})")
        p = f"%{name}{k}"
    return "\n".join(lines) + f"\n  %{name} = fadd float {p}, -0.0"


def _dnnl_sigmoid():
    """dnnl_eltwise.sigmoid of %x: e = dnnl_exp(-|x|) (-|x| needs no upper clamp), e / (e + 1)
    or 1 minus it."""
    return """
define internal float @dnnl_sigmoid(float %x) alwaysinline {
entry:
  %a = call float @llvm.fabs.f32(float %x)
  %z = fneg float %a
  %e = call float @dnnl_exp(float %z)
  %e1p = fadd float %e, 1.0
  %y = fdiv float %e, %e1p
  %xbits = bitcast float %x to i32
  %neg = icmp slt i32 %xbits, 0
  %ny = fsub float 1.0, %y
  %out = select i1 %neg, float %y, float %ny
  ret float %out
}"""


def _dnnl_tanh():
    """dnnl_eltwise.tanh of %x: a degree-6 polynomial on the interval of |x| (its table a
    global), x itself below the linear bound, 1 from the saturation bound (and for a nan)."""
    from runtime import dnnl_eltwise as d
    table = ", ".join(f"float {_constant(v)}" for v in d._TANH_TABLE.reshape(-1))
    loads = "\n".join(f"""  %i{k} = add i64 %idx, {32 * k}
  %pc{k} = getelementptr float, ptr @tanh_table, i64 %i{k}
  %c{k} = load float, ptr %pc{k}""" for k in range(7))
    return f"""
@tanh_table = internal constant [224 x float] [{table}]

define internal float @dnnl_tanh(float %x) alwaysinline {{
entry:
  %s = call float @llvm.fabs.f32(float %x)
  %bits = bitcast float %s to i32
  %off = sub i32 %bits, {d._TANH_BIAS}
  %sh = ashr i32 %off, 22
  %idx32 = and i32 %sh, 31
  %idx = zext i32 %idx32 to i64
  %startbits = and i32 %bits, {int(d._TANH_MASK)}
  %start = bitcast i32 %startbits to float
  %r = fsub float %s, %start
{loads}
{_fma_chain("q", [f"%c{k}" for k in range(6, -1, -1)], "%r")}
  %sat = fcmp olt float %s, {_constant(d._TANH_SATURATED)}
  %sel = select i1 %sat, float %q, float 1.0
  %small = fcmp olt float %s, {_constant(d._TANH_LINEAR)}
  %p2 = select i1 %small, float %s, float %sel
  %out = call float @llvm.copysign.f32(float %p2, float %x)
  ret float %out
}}"""


# one step's element-wise work on columns (rows by batch): gates from pre (+ the row's bias),
# then the cell update, for element j of each (H, B) block
def _dnnl_exp():
    """dnnl_eltwise.exp of %x: clamped to [ln FLT_MIN, ln FLT_MAX], flushed to 0 below."""
    from runtime import dnnl_eltwise as d
    c = [_constant(v) for v in d._EXP_POLY]
    return f"""
define internal float @dnnl_exp(float %x) alwaysinline {{
entry:
  %flush = fcmp olt float %x, {_constant(d._LN_MIN)}
  %z0 = select i1 %flush, float {_constant(d._LN_MIN)}, float %x
  %big = fcmp ogt float %z0, {_constant(d._LN_MAX)}
  %z = select i1 %big, float {_constant(d._LN_MAX)}, float %z0
  %t = fmul float %z, {_constant(d._LOG2E)}
  %t2 = fadd float %t, 0.5
  %n = call float @llvm.floor.f32(float %t2)
  %r = call float @llvm.fma.f32(float %n, float {_constant(-d._LN2)}, float %z)
{_fma_chain("p", c + ["1.0"], "%r")}
  %nb = fadd float %n, {_constant(d._EXPONENT_FROM_N)}
  %nbits = bitcast float %nb to i32
  %sbits = shl i32 %nbits, 23
  %scale = bitcast i32 %sbits to float
  %scale0 = select i1 %flush, float 0.0, float %scale
  %e1 = fmul float %p, %scale0
  %e = fmul float %e1, 2.0
  ret float %e
}}"""


def _dnnl_gelu():
    """dnnl_eltwise.gelu (erf form) of %x: erf(x / sqrt 2) as a degree-5 polynomial in |x| on
    its interval (the table a global), then (erf + 1) x / 2; and its derivative."""
    from runtime import dnnl_eltwise as d
    table = ", ".join(f"float {_constant(v)}" for v in d._GELU_TABLE.reshape(-1))
    loads = "\n".join(f"""  %i{k} = add i64 %idx, {32 * k}
  %pc{k} = getelementptr float, ptr @gelu_table, i64 %i{k}
  %c{k} = load float, ptr %pc{k}""" for k in range(6))
    poly = [_constant(v) for v in d._AS_POLY]
    return f"""
@gelu_table = internal constant [{d._GELU_TABLE.size} x float] [{table}]

define internal float @dnnl_gelu(float %x) alwaysinline {{
entry:
  %s = call float @llvm.fabs.f32(float %x)
  %bits = bitcast float %s to i32
  %off = add i32 %bits, {int(d._GELU_INDEX_BIAS)}
  %sh = ashr i32 %off, 21
  %low = icmp slt i32 %sh, 1
  %lo = select i1 %low, i32 1, i32 %sh
  %high = icmp sgt i32 %lo, 24
  %hi = select i1 %high, i32 24, i32 %lo
  %right = fcmp ogt float %s, {_constant(d._GELU_RIGHT)}
  %idx32 = select i1 %right, i32 23, i32 %hi
  %idx = zext i32 %idx32 to i64
{loads}
{_fma_chain("q", [f"%c{k}" for k in range(5, -1, -1)], "%s")}
  %xbits = bitcast float %x to i32
  %neg = icmp slt i32 %xbits, 0
  %nq = fneg float %q
  %erf = select i1 %neg, float %nq, float %q
  %e1 = fadd float %erf, 1.0
  %e2 = fmul float %e1, %x
  %out = fmul float %e2, 0.5
  ret float %out
}}

define internal float @dnnl_gelu_slope(float %x) alwaysinline {{
entry:
  %r = fmul float %x, {_constant(d._SQRT_HALF)}
  %rr = fmul float %r, %r
  %nrr = fneg float %rr
  %q = call float @dnnl_exp(float %nrr)
  %t0 = fmul float %r, {_constant(d._INV_SQRT_PI)}
  %t1 = fmul float %t0, %q
  %ar = call float @llvm.fabs.f32(float %r)
  %den = call float @llvm.fma.f32(float {_constant(d._AS_P)}, float %ar, float 1.0)
  %w = fdiv float 1.0, %den
  %nq = fneg float %q
  %nqw = fmul float %nq, %w
{_fma_chain("poly", poly, "%w")}
  %erf0 = call float @llvm.fma.f32(float %nqw, float %poly, float 1.0)
  %rbits = bitcast float %r to i32
  %neg = icmp slt i32 %rbits, 0
  %nerf = fneg float %erf0
  %erf = select i1 %neg, float %nerf, float %erf0
  %t2 = fadd float %t1, 0.5
  %out = call float @llvm.fma.f32(float %erf, float 0.5, float %t2)
  ret float %out
}}
""" + "".join(_map_kernel(name, f"dnnl_{name}") for name in ("gelu", "gelu_slope"))


# the C library's float functions that PyTorch's float32 scalar loops call (std::sinh(float)
# and the like): glibc's are within an ulp, not correctly rounded, so only they give its bits
LIBM_FLOAT = ("sinhf", "coshf", "atanhf", "asinhf", "acoshf")


def _maps():
    """The element-wise kernels over arrays: oneDNN's gelu and its slope, SLEEF's expf, and
    the C library's float functions of LIBM_FLOAT."""
    return (_dnnl_gelu() + _map_kernel("sleef_expf", "sleef_expf")
            + "".join(_map_kernel(name, name) + f"declare float @{name}(float)\n"
                      for name in LIBM_FLOAT))



def _map_kernel(name, element):
    """define void @<name>_map(ptr %x, ptr %out, i64 %n): out[i] = element(x[i])."""
    return f"""
define void @{name}_map(ptr %x, ptr %out, i64 %n) {{
entry:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %done, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr float, ptr %x, i64 %i
  %v = load float, ptr %px
  %y = call float @{element}(float %v)
  %po = getelementptr float, ptr %out, i64 %i
  store float %y, ptr %po
  %next = add i64 %i, 1
  %again = icmp slt i64 %next, %n
  br i1 %again, label %loop, label %done
done:
  ret void
}}
"""


_LSTM_STEP = """
define internal float @gate_input(ptr %pre, ptr %bias, i64 %j, i64 %row) alwaysinline {
entry:
  %pp = getelementptr float, ptr %pre, i64 %j
  %x = load float, ptr %pp
  %has = icmp ne ptr %bias, null
  br i1 %has, label %add, label %plain
add:
  %pb = getelementptr float, ptr %bias, i64 %row
  %b = load float, ptr %pb
  %xb = fadd float %x, %b
  ret float %xb
plain:
  ret float %x
}

define void @lstm_step(ptr noalias %pre, ptr noalias %bias, ptr noalias %c, ptr noalias %gates,
                       ptr noalias %cn, ptr noalias %tc, ptr noalias %hn, i64 %h, i64 %b) {
entry:
  %hb = mul i64 %h, %b
  %hb2 = mul i64 %hb, 2
  %hb3 = mul i64 %hb, 3
  %h2 = mul i64 %h, 2
  %h3 = mul i64 %h, 3
  %empty = icmp eq i64 %hb, 0
  br i1 %empty, label %exit, label %loop
loop:
  %j = phi i64 [0, %entry], [%j1, %loop]
  %row = udiv i64 %j, %b
  %j1i = add i64 %j, %hb
  %j2i = add i64 %j, %hb2
  %j3i = add i64 %j, %hb3
  %r1 = add i64 %row, %h
  %r2 = add i64 %row, %h2
  %r3 = add i64 %row, %h3
  %xi = call float @gate_input(ptr %pre, ptr %bias, i64 %j, i64 %row)
  %xf = call float @gate_input(ptr %pre, ptr %bias, i64 %j1i, i64 %r1)
  %xo = call float @gate_input(ptr %pre, ptr %bias, i64 %j2i, i64 %r2)
  %xg = call float @gate_input(ptr %pre, ptr %bias, i64 %j3i, i64 %r3)
  %gi = call float @dnnl_sigmoid(float %xi)
  %gf = call float @dnnl_sigmoid(float %xf)
  %go = call float @dnnl_sigmoid(float %xo)
  %gg = call float @dnnl_tanh(float %xg)
  %pgi = getelementptr float, ptr %gates, i64 %j
  store float %gi, ptr %pgi
  %pgf = getelementptr float, ptr %gates, i64 %j1i
  store float %gf, ptr %pgf
  %pgo = getelementptr float, ptr %gates, i64 %j2i
  store float %go, ptr %pgo
  %pgg = getelementptr float, ptr %gates, i64 %j3i
  store float %gg, ptr %pgg
  %pc = getelementptr float, ptr %c, i64 %j
  %cv = load float, ptr %pc
  %cf = fmul float %cv, %gf
  %cnv = call float @llvm.fma.f32(float %gi, float %gg, float %cf)
  %pcn = getelementptr float, ptr %cn, i64 %j
  store float %cnv, ptr %pcn
  %t = call float @dnnl_tanh(float %cnv)
  %ptc = getelementptr float, ptr %tc, i64 %j
  store float %t, ptr %ptc
  %hv = fmul float %go, %t
  %phn = getelementptr float, ptr %hn, i64 %j
  store float %hv, ptr %phn
  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, %hb
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""

# the backward's step on columns (rules/rnn.py's _cell_step_numpy), element j of each block;
# dcn may be dc itself (each element read before it is written)
_LSTM_BACK = """
define internal float @load_at(ptr %a, i64 %j) alwaysinline {
entry:
  %p = getelementptr float, ptr %a, i64 %j
  %v = load float, ptr %p
  ret float %v
}

define internal void @store_at(ptr %a, i64 %j, float %v) alwaysinline {
entry:
  %p = getelementptr float, ptr %a, i64 %j
  store float %v, ptr %p
  ret void
}

define void @lstm_step_back(ptr noalias %dh, ptr noalias %gout, ptr %dc,
                            ptr noalias %gates, ptr noalias %slope, ptr noalias %ts,
                            ptr noalias %tc, ptr noalias %cp, ptr noalias %dpre,
                            ptr %dcn, i64 %h, i64 %b) {
entry:
  %hb = mul i64 %h, %b
  %hb2 = mul i64 %hb, 2
  %hb3 = mul i64 %hb, 3
  %empty = icmp eq i64 %hb, 0
  %has = icmp ne ptr %gout, null
  br i1 %empty, label %exit, label %loop
loop:
  %j = phi i64 [0, %entry], [%j1, %body]
  %j1i = add i64 %j, %hb
  %j2i = add i64 %j, %hb2
  %j3i = add i64 %j, %hb3
  %dh0 = call float @load_at(ptr %dh, i64 %j)
  br i1 %has, label %add, label %body
add:
  %go = call float @load_at(ptr %gout, i64 %j)
  %dhs = fadd float %go, %dh0
  br label %body
body:
  %dhv = phi float [%dh0, %loop], [%dhs, %add]
  %gi = call float @load_at(ptr %gates, i64 %j)
  %gf = call float @load_at(ptr %gates, i64 %j1i)
  %gov = call float @load_at(ptr %gates, i64 %j2i)
  %gg = call float @load_at(ptr %gates, i64 %j3i)
  %si = call float @load_at(ptr %slope, i64 %j)
  %sf = call float @load_at(ptr %slope, i64 %j1i)
  %so = call float @load_at(ptr %slope, i64 %j2i)
  %sg = call float @load_at(ptr %slope, i64 %j3i)
  %tsv = call float @load_at(ptr %ts, i64 %j)
  %tcv = call float @load_at(ptr %tc, i64 %j)
  %cpv = call float @load_at(ptr %cp, i64 %j)
  %dcv0 = call float @load_at(ptr %dc, i64 %j)
  %t1 = fmul float %tsv, %dhv
  %t2 = fmul float %t1, %gov
  %dcv = fadd float %dcv0, %t2
  %o1 = fmul float %so, %dhv
  %do = fmul float %o1, %tcv
  %i1 = fmul float %si, %dcv
  %di = fmul float %i1, %gg
  %f1 = fmul float %sf, %dcv
  %df = fmul float %f1, %cpv
  %g1 = fmul float %gi, %dcv
  %dg = fmul float %sg, %g1
  call void @store_at(ptr %dpre, i64 %j, float %di)
  call void @store_at(ptr %dpre, i64 %j1i, float %df)
  call void @store_at(ptr %dpre, i64 %j2i, float %dg)
  call void @store_at(ptr %dpre, i64 %j3i, float %do)
  %dcf = fmul float %dcv, %gf
  call void @store_at(ptr %dcn, i64 %j, float %dcf)
  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, %hb
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""


def _lstm_text():
    return _dnnl_sigmoid() + _dnnl_tanh() + _LSTM_STEP + _LSTM_BACK


# the C library's logf over an array (PyTorch's flash attention takes std::log of its row
# sums; glibc's logf is not always the correctly rounded logarithm)
_LIBM_LOGF = """
define void @libm_logf(ptr %x, ptr %out, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr float, ptr %x, i64 %i
  %v = load float, ptr %px
  %r = call float @logf(float %v)
  %po = getelementptr float, ptr %out, i64 %i
  store float %r, ptr %po
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
declare float @logf(float)
"""

# c[t] for t = (batch, row, column) in C order: the chain over i of a[batch, row, i] *
# b[batch, i, column], the first product rounded, each later one added by a fused
# multiply-add (MKL's sgemm on the flash attention kernel's small products); element strides.
# A row of c is the accumulator: each term i is added to all of its columns in turn, so the
# columns' independent chains overlap (each one still in the order of i)
_FMA_CHAIN = """
define void @fma_chain(ptr noalias %a, ptr noalias %b, ptr noalias %c, i64 %batch, i64 %m,
                       i64 %n, i64 %p, i64 %sab, i64 %sam, i64 %san, i64 %sbb, i64 %sbn,
                       i64 %sbp) {
entry:
  %mp = mul i64 %m, %p
  %total = mul i64 %batch, %mp
  %none = icmp sle i64 %total, 0
  br i1 %none, label %done, label %batches
batches:
  %bi = phi i64 [0, %entry], [%binext, %batch_end]
  %ob_a = mul i64 %bi, %sab
  %ob_b = mul i64 %bi, %sbb
  %ob_c = mul i64 %bi, %mp
  br label %rows
rows:
  %mi = phi i64 [0, %batches], [%minext, %row_end]
  %oa2 = mul i64 %mi, %sam
  %oa = add i64 %ob_a, %oa2
  %oc2 = mul i64 %mi, %p
  %oc = add i64 %ob_c, %oc2
  %crow = getelementptr float, ptr %c, i64 %oc
  %pa0 = getelementptr float, ptr %a, i64 %oa
  %a0 = load float, ptr %pa0
  br label %first
first:
  %pf = phi i64 [0, %rows], [%pfnext, %first]
  %obf2 = mul i64 %pf, %sbp
  %obf = add i64 %ob_b, %obf2
  %pb0 = getelementptr float, ptr %b, i64 %obf
  %b0 = load float, ptr %pb0
  %prod = fmul float %a0, %b0
  %pcf = getelementptr float, ptr %crow, i64 %pf
  store float %prod, ptr %pcf
  %pfnext = add i64 %pf, 1
  %fgo = icmp slt i64 %pfnext, %p
  br i1 %fgo, label %first, label %terms_check
terms_check:
  %more0 = icmp sgt i64 %n, 1
  br i1 %more0, label %terms, label %row_end
terms:
  %i = phi i64 [1, %terms_check], [%inext, %term_end]
  %ia = mul i64 %i, %san
  %oai = add i64 %oa, %ia
  %pai = getelementptr float, ptr %a, i64 %oai
  %ai = load float, ptr %pai
  %ib = mul i64 %i, %sbn
  %obi = add i64 %ob_b, %ib
  br label %cols
cols:
  %pi = phi i64 [0, %terms], [%pnext, %cols]
  %ob2 = mul i64 %pi, %sbp
  %ob = add i64 %obi, %ob2
  %pbi = getelementptr float, ptr %b, i64 %ob
  %bv = load float, ptr %pbi
  %pc = getelementptr float, ptr %crow, i64 %pi
  %acc = load float, ptr %pc
  %accn = call float @llvm.fma.f32(float %ai, float %bv, float %acc)
  store float %accn, ptr %pc
  %pnext = add i64 %pi, 1
  %pgo = icmp slt i64 %pnext, %p
  br i1 %pgo, label %cols, label %term_end
term_end:
  %inext = add i64 %i, 1
  %again = icmp slt i64 %inext, %n
  br i1 %again, label %terms, label %row_end
row_end:
  %minext = add i64 %mi, 1
  %mgo = icmp slt i64 %minext, %m
  br i1 %mgo, label %rows, label %batch_end
batch_end:
  %binext = add i64 %bi, 1
  %bgo = icmp slt i64 %binext, %batch
  br i1 %bgo, label %batches, label %done
done:
  ret void
}
"""

_DECLARATIONS = """
declare float @llvm.fabs.f32(float)
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.rint.f32(float)
declare float @llvm.ldexp.f32.i32(float, i32)
declare float @llvm.floor.f32(float)
declare float @llvm.copysign.f32(float, float)
declare float @llvm.sqrt.f32(float)
declare i64 @llvm.ctlz.i64(i64, i1)
"""


def _module_text():
    return (f"define internal float @sleef_expf(float %d) {{\nentry:{_exp_body()}\n}}\n\n"
            f"define internal float @sleef_logf(float %d) {{\nentry:{_log_body()}\n}}\n"
            + _LANE_SUM + _ROW_MAX + _FORWARD + _BACKWARD + _NLL_LADDER + _lstm_text()
            + _LIBM_LOGF + _FMA_CHAIN + simd_layer_norm.MOMENTS + _dnnl_exp()
            + _maps()
            + _DECLARATIONS)


def jit_library(text, symbols, name, opt=3, ir_passes=True):
    """LLVM IR `text` compiled for this CPU and linked into the process (its undefined
    symbols resolved there) as library `name`: {symbol: address} for each of `symbols`.
    The JIT and its code live as long as the process. `ir_passes` False skips the IR
    optimisation pipeline (~0.1 s on a small module) for code written as wanted."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(), opt=opt,
                                      reloc="static", codemodel="jitdefault", jit=True)
    mod = llvm.parse_assembly(text)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    mod.verify()
    if ir_passes:
        pto = llvm.create_pipeline_tuning_options(speed_level=2)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    lljit = llvm.create_lljit_compiler(tm)
    builder = llvm.JITLibraryBuilder().add_object_img(tm.emit_object(mod)).add_current_process()
    for symbol in symbols:
        builder = builder.export_symbol(symbol)
    tracker = builder.link(lljit, name)
    _KEEP.extend([lljit, tracker, tm])
    return {symbol: tracker[symbol] for symbol in symbols}


_SYMBOLS = ("log_softmax_fwd", "log_softmax_bwd", "nll_ladder", "lstm_step", "lstm_step_back",
            "libm_logf", "fma_chain", "ln_moments", "gelu_map", "gelu_slope_map",
            "sleef_expf_map") + tuple(f"{name}_map" for name in LIBM_FLOAT)


def _compile():
    addresses = jit_library(_module_text(), _SYMBOLS, "runtime_simd_softmax")
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    i32 = ctypes.c_int32
    fwd = ctypes.CFUNCTYPE(i32, ptr, ptr, i64, i64)(addresses["log_softmax_fwd"])
    bwd = ctypes.CFUNCTYPE(i32, ptr, ptr, ptr, i64, i64)(addresses["log_softmax_bwd"])
    ladder = ctypes.CFUNCTYPE(ctypes.c_float, ptr, ptr, i64, i64)(addresses["nll_ladder"])
    step = ctypes.CFUNCTYPE(None, *[ptr] * 7, i64, i64)(addresses["lstm_step"])
    back = ctypes.CFUNCTYPE(None, *[ptr] * 10, i64, i64)(addresses["lstm_step_back"])
    logf = ctypes.CFUNCTYPE(None, ptr, ptr, i64)(addresses["libm_logf"])
    chain = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, *[i64] * 10)(addresses["fma_chain"])
    moments = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, i64, i64, ctypes.c_float)(
        addresses["ln_moments"])
    gelu, gelu_slope, expf = (ctypes.CFUNCTYPE(None, ptr, ptr, i64)(addresses[f"{name}_map"])
                              for name in ("gelu", "gelu_slope", "sleef_expf"))
    libm = {name: ctypes.CFUNCTYPE(None, ptr, ptr, i64)(addresses[f"{name}_map"])
            for name in LIBM_FLOAT}
    return fwd, bwd, ladder, step, back, logf, chain, moments, gelu, gelu_slope, expf, libm


_KEEP = []  # the JIT and its code live as long as the process
