"""The IR `ops` namespace: running a rule from runtime/rules with it emits the rule's
derivative code into the IR being built. This is how the compiler reuses the eager runtime's
derivative rules instead of keeping a second copy of any formula.

Values are IR Values or Python numbers (which become constants of weak type, so they adopt
the other operand's precision exactly as in the eager code).
"""

import math

from adcompile.ir import types as T


class IROps:
    def __init__(self, builder):
        self.b = builder
        # the reverse-mode scope the derivative code is emitted in: a libm call of values
        # it already has the result of (reverse.py's `remember_libm`) is not made again
        self.scope = None

    def _v(self, x):
        if isinstance(x, bool):
            return self.b.const(x, T.BOOL)
        if isinstance(x, (int, float)):
            return self.b.const(x)
        return x

    def _bin(self, prim, a, b):
        return self.b.value(prim, (self._v(a), self._v(b)))

    def add(self, a, b):
        return self._bin("add", a, b)

    def sub(self, a, b):
        return self._bin("sub", a, b)

    def mul(self, a, b):
        return self._bin("mul", a, b)

    def div(self, a, b):
        a, b = self._v(a), self._v(b)
        return self.b.value("div", (a, b), self._ieee(a, b))

    def pow(self, a, b):
        a, b = self._v(a), self._v(b)
        return self.b.value("pow", (a, b), {"nonneg_int_exponent": False, **self._ieee(a, b)})

    @staticmethod
    def _ieee(a, b):
        """Derivative code computes like numpy: of Python numbers, where `/` and `**` would
        raise (1.0 / 0.0, 1e-300 ** -2.0), it gives inf or nan as JAX and PyTorch do, so a
        gradient never raises where its function returns."""
        return {"ieee": True} if a.type.weak and b.type.weak else {}

    @staticmethod
    def conj(x):
        """Compiled values are real: their conjugate is themselves (no code)."""
        return x

    @staticmethod
    def is_complex(x):
        return False

    def rsub(self, x, c):
        return self._bin("sub", c, x)

    def neg(self, x):
        return self.b.value("neg", (self._v(x),))

    def _unary(self, prim, x):
        x = self._v(x)
        known = None if self.scope is None else self.scope.known_value((prim, (x,)))
        if known is None or known.type.dtype != x.type.dtype:
            return self.b.value(prim, (x,), {"lib": "numpy"})
        strong = T.Scalar(x.type.dtype)  # numpy's result: math.cos(x) is a Python float
        return known if known.type == strong else self.b.value("cast", (known,), {"to": strong})

    def sin(self, x):
        return self._unary("sin", x)

    def cos(self, x):
        return self._unary("cos", x)

    def exp(self, x):
        return self._unary("exp", x)

    def sinh(self, x):
        return self._unary("sinh", x)

    def cosh(self, x):
        return self._unary("cosh", x)

    def log(self, x):
        return self._unary("log", x)

    def sign(self, x):
        return self.b.value("sign", (self._v(x),))

    def abs(self, x):
        return self.b.value("abs", (self._v(x),))

    @staticmethod
    def log_scalar(c):
        return math.log(c)

    def eq(self, a, b):
        return self._bin("eq", a, b)

    def gt(self, a, b):
        return self._bin("gt", a, b)

    def ge(self, a, b):
        return self._bin("ge", a, b)

    def lt(self, a, b):
        return self._bin("lt", a, b)

    def le(self, a, b):
        return self._bin("le", a, b)

    def logical_and(self, a, b):
        a, b = self._v(a), self._v(b)
        if isinstance(a.type, T.Array) or isinstance(b.type, T.Array):
            return self._bin("bit_and", a, b)  # of two masks: elementwise
        return self._bin("and", a, b)

    def where(self, cond, a, b):
        a, b = self._v(a), self._v(b)
        if isinstance(a.type, T.Array) or isinstance(b.type, T.Array) or \
                isinstance(cond.type, T.Array):
            return self.b.value("select", (self._v(cond), a, b))
        t = T.unify(a.type, b.type)
        return self.b.value("select", (self._v(cond), self.b.cast(a, t), self.b.cast(b, t)))

    def zeros_like(self, x):
        element = x.type.element if isinstance(x.type, T.Array) else x.type
        return self.b.const(0.0, element if element.is_float else T.FLOAT)

    def threshold_backward(self, g, result):
        return self.where(self.gt(result, 0), g, 0.0)

    # the caller fits each gradient to its input (reverse.py: sum_to for broadcasting)
    def sum_to(self, g, shape):
        return g

    def shape(self, x):
        """The shape of an IR array: a tuple of integer values (() for a scalar)."""
        if not isinstance(getattr(x, "type", None), T.Array):
            return ()
        return tuple(self.b.value("shape", (x,), {"axis": i}) for i in range(x.type.ndim))

    @staticmethod
    def ndim(x):
        return x.type.ndim if isinstance(getattr(x, "type", None), T.Array) else 0

    def cast(self, g, np_dtype):
        return g

    # -- whole arrays ----------------------------------------------------------------------
    def reshape(self, g, shape):
        g = self._v(g)
        if not isinstance(g.type, T.Array):  # a full reduction's scalar: it broadcasts as is
            return g
        return self.b.value("reshape", [g] + [self._v(d) for d in shape])

    def expand(self, g, shape):
        """Broadcasting is implicit in every consumer (elementwise ops, accumulation)."""
        return g

    def sum(self, x):
        return self.b.value("sum", (x,), {"axis": None, "keepdims": False})

    def sum_dim(self, x, dims, keepdim):
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        return self.b.value("sum", (x,), {"axis": dims, "keepdims": bool(keepdim)})

    def cast_like(self, x, like):
        element = like.type.element if isinstance(like.type, T.Array) else like.type
        return self.b.value("cast", (x,), {"to": T.Scalar(element.dtype)})

    def mT(self, x):
        n = x.type.ndim
        perm = tuple(range(n - 2)) + (n - 1, n - 2)
        return self.b.value("transpose", (x,), {"perm": perm})

    def matmul(self, a, b):
        return self.b.value("matmul", (a, b))

    def outer(self, a, b):
        whole = ("slice", False, False, False)
        column = self.b.value("slice", (a,), {"index": (whole, ("new",))})
        row = self.b.value("slice", (b,), {"index": (("new",), whole)})
        return self.b.value("mul", (column, row))

    def prod_others(self, x, result, dims):
        """For each element of x, the product of the other elements of its slice over `dims`
        (None: all); `result` is the product, broadcast back. Where x is 0 that is the
        product of the nonzero others when x holds the slice's only zero, else 0; elsewhere
        it is result / x."""
        zero = self.eq(x, 0.0)
        nonzero = self.where(zero, 1.0, x)
        keep = {"axis": None if dims is None else tuple(dims), "keepdims": dims is not None}
        product = self.b.value("prod", (nonzero,), keep)
        zeros = self.b.value("sum", (self.b.value("cast", (zero,), {"to": T.I64}),), keep)
        only = self.where(self.eq(zeros, 1), product, 0.0)
        return self.where(zero, only, self.div(result, nonzero))

    def inv(self, a):
        return self.b.value("inv", (a,))

    def cofactor(self, a):
        return self.b.value("cofactor", (a,))

    def det(self, a):
        return self.b.value("det", (a,))

    def solve(self, a, b):
        return self.b.value("solve", (a, b))
