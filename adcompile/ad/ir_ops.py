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
        return self._bin("div", a, b)

    def pow(self, a, b):
        return self.b.value("pow", (self._v(a), self._v(b)), {"nonneg_int_exponent": False})

    def rsub(self, x, c):
        return self._bin("sub", c, x)

    def neg(self, x):
        return self.b.value("neg", (self._v(x),))

    def _unary(self, prim, x):
        return self.b.value(prim, (self._v(x),), {"lib": "numpy"})

    def sin(self, x):
        return self._unary("sin", x)

    def cos(self, x):
        return self._unary("cos", x)

    def exp(self, x):
        return self._unary("exp", x)

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
        return self._bin("and", a, b)

    def where(self, cond, a, b):
        a, b = self._v(a), self._v(b)
        t = T.unify(a.type, b.type)
        return self.b.value("select", (self._v(cond), self.b.cast(a, t), self.b.cast(b, t)))

    def zeros_like(self, x):
        return self.b.const(0.0, x.type if x.type.is_float else T.FLOAT)

    def threshold_backward(self, g, result):
        return self.where(self.gt(result, 0), g, 0.0)

    # scalar IR values never broadcast, so fitting a gradient is only a cast
    def sum_to(self, g, shape):
        return g

    @staticmethod
    def shape(x):
        return ()

    def cast(self, g, np_dtype):
        return g
