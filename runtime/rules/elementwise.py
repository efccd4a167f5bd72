"""Derivative rules of elementwise primitives: each states its partial derivatives."""

from runtime.rules import rule


@rule("add")
def add(ops, g, needs, alpha):
    return (g if needs[0] else None, _scale(ops, g, alpha) if needs[1] else None)


@rule("sub")
def sub(ops, g, needs, alpha):
    return (g if needs[0] else None, ops.neg(_scale(ops, g, alpha)) if needs[1] else None)


@rule("rsub")
def rsub(ops, g, needs, alpha):
    return (ops.neg(_scale(ops, g, alpha)),)


@rule("rsub_tensor")
def rsub_tensor(ops, g, needs, alpha):
    """c - alpha * x, with edges (x, c)."""
    return (ops.neg(_scale(ops, g, alpha)) if needs[0] else None, g if needs[1] else None)


def _scale(ops, g, alpha):
    return g if alpha == 1 else ops.mul(g, alpha)


@rule("mul")
def mul(ops, g, needs, a, b):
    """Complex operands: the conjugate of the other one (PyTorch's convention)."""
    return (ops.mul(g, ops.conj(b)) if needs[0] else None,
            ops.mul(g, ops.conj(a)) if needs[1] else None)


@rule("div")
def div(ops, g, needs, a, b):
    ga = ops.div(g, ops.conj(b)) if needs[0] else None
    gb = ops.mul(ops.neg(g), ops.conj(ops.div(ops.div(a, b), b))) if needs[1] else None
    return ga, gb


@rule("pow")
def pow_scalar(ops, g, needs, x, exponent):
    # PyTorch's shortcut takes a number equal to 0, not False (x ** False: 0 * x ** -1)
    if exponent == 0 and type(exponent) is not bool:
        return (ops.zeros_like(g),)
    return (ops.mul(g, ops.conj(ops.mul(ops.pow(x, exponent - 1), exponent))),)


@rule("pow_tensor")
def pow_tensor(ops, g, needs, x, e, result):
    gx = ge = None
    if needs[0]:
        # 0 where the exponent is 0, whatever the cotangent (nan included), as PyTorch
        partial = ops.mul(e, ops.pow(x, ops.sub(e, 1)))
        gx = ops.where(ops.eq(e, 0), 0.0, ops.mul(g, partial))
    if needs[1]:
        partial = ops.mul(result, ops.log(x))
        safe = ops.where(ops.logical_and(ops.eq(x, 0), ops.ge(e, 0)), 0.0, partial)
        ge = ops.mul(g, safe)
    return gx, ge


@rule("rpow")
def rpow(ops, g, needs, base, result, exponent=None):
    """d/dx base**x = base**x * log(base); log of a negative base is nan, as in PyTorch.
    For base 0 the partial is 0 where x >= 0, which is exactly where result (0**x) <= 1.
    `exponent` (x) is unused: the eager node saves it as PyTorch does, so that changing x
    in place before backward is refused."""
    if base == 0:
        return (ops.mul(g, ops.where(ops.le(result, 1), 0.0, ops.mul(result, float("-inf")))),)
    return (ops.mul(g, ops.mul(result, ops.log_scalar(base))),)


@rule("addcmul")
def addcmul(ops, g, needs, t1, t2, value):
    """x + value * t1 * t2."""
    gv = _scale(ops, g, value)
    return (g if needs[0] else None, ops.mul(gv, t2) if needs[1] else None,
            ops.mul(gv, t1) if needs[2] else None)


@rule("addcdiv")
def addcdiv(ops, g, needs, t1, t2, value):
    """x + value * t1 / t2."""
    gv = _scale(ops, g, value)
    g1 = ops.mul(g, ops.rdiv(value, t2)) if needs[1] else None
    g2 = ops.neg(ops.div(ops.mul(gv, t1), ops.mul(t2, t2))) if needs[2] else None
    return (g if needs[0] else None, g1, g2)


@rule("lerp")
def lerp(ops, g, needs, weight):
    """x + weight * (end - x) for a number weight."""
    return (ops.mul(g, 1 - weight) if needs[0] else None,
            ops.mul(g, weight) if needs[1] else None)


@rule("lerp_tensor")
def lerp_tensor(ops, g, needs, x, end, weight):
    gx = ops.mul(g, ops.rsub(weight, 1)) if needs[0] else None
    gw = ops.mul(g, ops.sub(end, x)) if needs[2] else None
    return gx, ops.mul(g, weight) if needs[1] else None, gw


@rule("neg")
def neg(ops, g, needs):
    return (ops.neg(g),)


def signum(ops, x):
    """sign(x), or sgn(x) = x / |x| for complex x (which has a derivative of its own), as
    PyTorch's formulas use it (abs, norms)."""
    return ops.sgn(x) if ops.is_complex(x) else ops.sign(x)


@rule("abs")
def abs_(ops, g, needs, x):
    return (ops.mul(g, signum(ops, x)),)


@rule("sgn")
def sgn(ops, g, needs, x, result):
    """sgn(z) = z / |z|: the cotangent less its radial part, over |z| (0 at z = 0); real
    sgn is a step, of derivative 0."""
    if not ops.is_complex(x):
        return (ops.zeros_like(g),)
    magnitude = ops.abs(x)
    radial = ops.mul(result, ops.real(ops.mul(g, ops.conj(result))))
    return (ops.where(ops.eq(magnitude, 0), 0j, ops.div(ops.sub(g, radial), magnitude)),)


@rule("exp")
def exp(ops, g, needs, result):
    return (ops.mul(g, result),)


@rule("log")
def log(ops, g, needs, x):
    return (ops.div(g, x),)


@rule("log1p")
def log1p(ops, g, needs, x):
    return (ops.div(g, ops.add(x, 1)),)


@rule("sqrt")
def sqrt(ops, g, needs, result):
    return (ops.div(g, ops.mul(result, 2)),)


@rule("rsqrt")
def rsqrt(ops, g, needs, result):
    return (ops.mul(g, ops.mul(ops.pow(result, 3), -0.5)),)


@rule("sin")
def sin(ops, g, needs, x):
    return (ops.mul(g, ops.cos(x)),)


@rule("cos")
def cos(ops, g, needs, x):
    return (ops.mul(g, ops.neg(ops.sin(x))),)


@rule("tan")
def tan(ops, g, needs, result):
    return (ops.mul(g, ops.add(ops.mul(result, result), 1)),)


@rule("tanh")
def tanh(ops, g, needs, result):
    return (ops.mul(g, _one_minus_square(ops, result)),)


def _one_minus_square(ops, t):
    """1 - t * t. On numpy it is rounded as PyTorch's tanh_backward kernel rounds it (one
    fused multiply-add where that kernel is built with FMA: numpy_ops.one_minus_square); the
    other namespaces (Tensors, the compiler's IR) have no fused form and round twice."""
    fused = getattr(ops, "one_minus_square", None)
    return ops.rsub(ops.mul(t, t), 1) if fused is None else fused(t)


@rule("sigmoid")
def sigmoid(ops, g, needs, result):
    return (ops.mul(g, ops.mul(result, ops.rsub(result, 1))),)


@rule("relu")
def relu(ops, g, needs, result):
    return (ops.threshold_backward(g, result),)


@rule("threshold_backward")
def threshold_backward(ops, g, needs, result):
    """relu's backward is itself differentiable: linear in the cotangent, flat in result."""
    return (ops.threshold_backward(g, result) if needs[0] else None,
            ops.zeros_like(result) if needs[1] else None)


@rule("clamp")
def clamp(ops, g, needs, x, lo, hi):
    return (ops.where(_inside(ops, x, lo, hi), g, 0.0),)


@rule("clamp_tensor")
def clamp_tensor(ops, g, needs, x, lo, hi):
    """Tensor bounds get the cotangent where they are the value clamp returned: lo where
    x < lo (unless lo > hi, when hi wins), hi where x > hi or hi < lo."""
    gx = ops.where(_inside(ops, x, lo, hi), g, 0.0) if needs[0] else None
    glo = ghi = None
    if needs[1]:
        below = ops.lt(x, lo)
        if hi is not None:
            below = ops.logical_and(below, ops.lt(lo, hi))
        glo = ops.where(below, g, 0.0)
    if needs[2]:
        above = ops.gt(x, hi)
        if lo is not None:
            above = ops.logical_or(above, ops.lt(hi, lo))
        ghi = ops.where(above, g, 0.0)
    return gx, glo, ghi


@rule("clamp_min_tensor")
def clamp_min_tensor(ops, g, needs, x, lo, _):
    return (ops.where(ops.ge(x, lo), g, 0.0) if needs[0] else None,
            ops.where(ops.lt(x, lo), g, 0.0) if needs[1] else None)


@rule("clamp_max_tensor")
def clamp_max_tensor(ops, g, needs, x, _, hi):
    return (ops.where(ops.le(x, hi), g, 0.0) if needs[0] else None,
            ops.where(ops.gt(x, hi), g, 0.0) if needs[1] else None)


def _inside(ops, x, lo, hi):
    """Where x lies within [lo, hi]; either bound may be None (unbounded)."""
    above = None if lo is None else ops.ge(x, lo)
    below = None if hi is None else ops.le(x, hi)
    if above is None or below is None:
        return below if above is None else above
    return ops.logical_and(above, below)


@rule("reciprocal")
def reciprocal(ops, g, needs, result):
    return (ops.mul(g, ops.conj(ops.neg(ops.mul(result, result)))),)


@rule("sign", "floor", "ceil", "round", "trunc", "zero", "fill")
def zero_derivative(ops, g, needs):
    return (ops.zeros_like(g),)


@rule("mul_scalar")
def mul_scalar(ops, g, needs, c):
    """x * c for a number c inside a composite op (PyTorch's MulBackward1: one edge)."""
    return (ops.mul(g, c),)


@rule("div_scalar")
def div_scalar(ops, g, needs, c):
    return (ops.div(g, c),)


@rule("sampled")
def sampled(ops, g, needs):
    """A random sample's tensor parameters (normal's mean and std, bernoulli's p) get zero
    gradients, as in PyTorch: the sample is not reparametrised."""
    return tuple(ops.zeros_like(g) if need else None for need in needs)


@rule("fill_tensor")
def fill_tensor(ops, g, needs):
    return (ops.zeros_like(g) if needs[0] else None, ops.sum(g) if needs[1] else None)


@rule("maximum", "minimum")
def maximum(ops, g, needs, a, b, is_max):
    """Ties split g in halves; an operand gets nothing only where the other one wins, so
    both get g where a nan is compared (as in PyTorch)."""
    share = ops.where(ops.eq(a, b), ops.mul(g, 0.5), g)
    a_loses = ops.lt(a, b) if is_max else ops.gt(a, b)
    b_loses = ops.gt(a, b) if is_max else ops.lt(a, b)
    ga = ops.where(a_loses, 0.0, share) if needs[0] else None
    gb = ops.where(b_loses, 0.0, share) if needs[1] else None
    return ga, gb


@rule("where")
def where(ops, g, needs, cond):
    ga = ops.where(cond, g, 0.0) if needs[0] else None
    gb = ops.where(cond, 0.0, g) if needs[1] else None
    return ga, gb


@rule("masked_fill")
def masked_fill(ops, g, needs, mask):
    return (ops.where(mask, 0.0, g),)


@rule("masked_fill_tensor")
def masked_fill_tensor(ops, g, needs, mask):
    """The 0-dim value receives the sum of the cotangent over the filled positions."""
    return (ops.where(mask, 0.0, g) if needs[0] else None,
            ops.sum(ops.where(mask, g, 0.0)) if needs[1] else None)


@rule("clone", "to_copy", "alias")
def identity(ops, g, needs):
    return (g,)


@rule("copy")
def copy(ops, g, needs):
    return (ops.zeros_like(g) if needs[0] else None, g if needs[1] else None)


@rule("mse_loss")
def mse_loss(ops, g, needs, x, target, reduction, count):
    diff = ops.mul(ops.sub(x, target), 2.0 / count if reduction == "mean" else 2.0)
    gx = ops.mul(g, diff) if needs[0] else None
    gt = ops.neg(ops.mul(g, diff)) if needs[1] else None
    return gx, gt


@rule("huber_loss")
def huber_loss(ops, g, needs, x, target, reduction, delta, count):
    """The difference clipped to [-delta, delta] times the cotangent (over the count for a
    mean), multiplied in the order of PyTorch's vector loop (its scalar tail, n mod 16
    elements, multiplies in double: an ulp apart there); the target's is the negative."""
    norm = 1.0 / count if reduction == "mean" else 1.0
    d = ops.sub(x, target)
    edge = ops.mul(ops.mul(g, norm), delta)
    inside = ops.mul(ops.mul(d, norm), g)
    gx = ops.where(ops.le(d, -delta), ops.neg(edge), ops.where(ops.ge(d, delta), edge, inside))
    return (gx if needs[0] else None), (ops.neg(gx) if needs[1] else None)


@rule("smooth_l1_loss")
def smooth_l1_loss(ops, g, needs, x, target, reduction, beta, count):
    """The difference over beta, clipped to [-1, 1], times the cotangent (over the count for
    a mean), in the order of PyTorch's vector loop; the target's gradient is its negative."""
    norm = 1.0 / count if reduction == "mean" else 1.0
    d = ops.sub(x, target)
    edge = ops.mul(g, norm)
    inside = ops.mul(ops.mul(ops.div(d, beta), norm), g)
    gx = ops.where(ops.le(d, -beta), ops.neg(edge), ops.where(ops.ge(d, beta), edge, inside))
    return (gx if needs[0] else None), (ops.neg(gx) if needs[1] else None)


@rule("binary_cross_entropy")
def binary_cross_entropy(ops, g, needs, x, target, reduction, count):
    eps = 1e-12
    denom = ops.mul(ops.rsub(x, 1.0), x)
    partial = ops.div(ops.sub(x, target), ops.where(ops.lt(denom, eps), eps, denom))
    if reduction == "mean":
        partial = ops.div(partial, count)
    return (ops.mul(g, partial), None)


@rule("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(ops, g, needs, x, target, weight, reduction, count):
    def finish(partial):
        if weight is not None:
            partial = ops.mul(partial, weight)
        return ops.div(partial, count) if reduction == "mean" else partial

    gx = finish(ops.mul(ops.sub(ops.sigmoid(x), target), g)) if needs[0] else None
    gt = finish(ops.mul(ops.neg(x), g)) if needs[1] else None
    return gx, gt


@rule("conj")
def conj(ops, g, needs):
    return (ops.conj(g),)


@rule("angle")
def angle(ops, g, needs, x):
    """d angle: i z / |z|^2 for complex z (0 at 0), nothing for real x."""
    if not ops.is_complex(x):
        return (ops.zeros_like(x),)
    partial = ops.mul(ops.div(ops.mul(g, x), ops.pow(ops.abs(x), 2)), 1j)
    return (ops.where(ops.eq(x, 0), 0j, partial),)


@rule("view_as_real")
def view_as_real(ops, g, needs):
    return (ops.view_as_complex(g),)


@rule("complex")
def complex_(ops, g, needs, real, imag):
    """complex(re, im): each part gets its own component of the cotangent (a real cotangent
    has no imaginary one)."""
    g_imag = ops.imag(g) if ops.is_complex(g) else ops.zeros_like(g)
    return (ops.real(g) if needs[0] else None, g_imag if needs[1] else None)


@rule("polar")
def polar(ops, g, needs, result):
    """polar(r, theta) = r e^(i theta): d/dr along sgn(result), d/dtheta along i result."""
    g_conj = ops.conj(g)
    g_abs = ops.real(ops.mul(g_conj, ops.sgn(result))) if needs[0] else None
    g_angle = ops.real(ops.mul(g_conj, ops.mul(result, 1j))) if needs[1] else None
    return g_abs, g_angle


@rule("view_as_complex")
def view_as_complex(ops, g, needs):
    return (ops.stack([ops.real(g), ops.imag(g)], -1),)


# -- scalar math used by compiled code ----------------------------------------------------------

@rule("expm1")
def expm1(ops, g, needs, result):
    return (ops.mul(g, ops.add(result, 1)),)


@rule("sinh")
def sinh(ops, g, needs, x):
    return (ops.mul(g, ops.cosh(x)),)


@rule("cosh")
def cosh(ops, g, needs, x):
    return (ops.mul(g, ops.sinh(x)),)


@rule("asin")
def asin(ops, g, needs, x):
    return (ops.div(g, ops.pow(ops.rsub(ops.mul(x, x), 1), 0.5)),)


@rule("acos")
def acos(ops, g, needs, x):
    return (ops.neg(ops.div(g, ops.pow(ops.rsub(ops.mul(x, x), 1), 0.5))),)


@rule("atan")
def atan(ops, g, needs, x):
    return (ops.div(g, ops.add(ops.mul(x, x), 1)),)


@rule("log2", "log10")
def log_base(ops, g, needs, x, base):
    return (ops.div(g, ops.mul(x, ops.log_scalar(base))),)


@rule("erf")
def erf(ops, g, needs, x):
    return (ops.mul(g, ops.mul(ops.exp(ops.neg(ops.mul(x, x))), 1.1283791670955126)),)


@rule("erfc")
def erfc(ops, g, needs, x):
    return (ops.mul(g, ops.mul(ops.exp(ops.neg(ops.mul(x, x))), -1.1283791670955126)),)


@rule("atan2")
def atan2(ops, g, needs, y, x):
    """PyTorch's formula: g * x / (x*x + y*y) and g * -y / (x*x + y*y), with the reciprocal
    of a zero denominator (the origin) taken as 0."""
    denom = ops.add(ops.mul(x, x), ops.mul(y, y))
    recip = ops.where(ops.eq(denom, 0), 0.0, ops.div(1.0, denom))
    gy = ops.mul(ops.mul(g, x), recip) if needs[0] else None
    gx = ops.mul(ops.mul(g, ops.neg(y)), recip) if needs[1] else None
    return gy, gx


@rule("hypot")
def hypot(ops, g, needs, a, b, result):
    ga = ops.mul(g, ops.div(a, result)) if needs[0] else None
    gb = ops.mul(g, ops.div(b, result)) if needs[1] else None
    return ga, gb


@rule("remainder")
def remainder(ops, g, needs, a, b, quotient):
    """a % b = a - floor(a / b) * b, with the quotient floor(a / b) piecewise constant (C's
    fmod is the same with trunc(a / b)); the caller computes the quotient."""
    return (g if needs[0] else None,
            ops.neg(ops.mul(g, quotient)) if needs[1] else None)


@rule("not_implemented")
def not_implemented(ops, g, needs):
    raise RuntimeError("this operation (floor_divide, heaviside, a number % a tensor, or the "
                       "gradient of scaled_dot_product_attention's fused CPU kernel) has no "
                       "derivative; "
                       "PyTorch does not differentiate it either")


@rule("copysign")
def copysign(ops, g, needs, a, result):
    """copysign(a, b) is |a| with b's sign: the slope in a is sign(a) * sign(result). A
    number b (eager CopysignBackward1) is no input, so the rule then has one gradient."""
    ga = ops.mul(g, ops.mul(ops.sign(a), ops.sign(result))) if needs[0] else None
    if len(needs) == 1:
        return (ga,)
    return ga, ops.zeros_like(g) if needs[1] else None


@rule("floor_divide", "div_rounding")
def floor_divide(ops, g, needs):
    return (ops.zeros_like(g) if needs[0] else None, ops.zeros_like(g) if needs[1] else None)
