"""A builder that appends typed operations to a block (used by the IR -> IR transforms)."""

from adcompile.errors import InternalError
from adcompile.ir import types as T
from adcompile.ir.nodes import Op
from adcompile.ir.prims import PRIMS


class IRBuilder:
    def __init__(self, block=None):
        self.block = block
        self.loc = None  # the location given to ops emitted without one (e.g. "grad of: ...")

    def emit(self, prim, operands=(), attrs=None, names=(), loc=None, result_types=None):
        attrs = dict(attrs or {})
        if result_types is None:
            try:
                result_types = PRIMS[prim].type_rule([v.type for v in operands], attrs)
            except TypeError as e:
                raise InternalError(f"{prim}: {e}") from None
        op = Op(prim, operands, result_types, attrs, loc=loc or self.loc, names=names)
        self.block.ops.append(op)
        return op

    def value(self, prim, operands=(), attrs=None, name=None, loc=None):
        return self.emit(prim, operands, attrs, names=(name,), loc=loc).result

    def const(self, value, type=None, name=None):
        return self.value("const", (), {"value": value, "type": type or T.of_value(value)},
                          name=name)

    def cast(self, v, to):
        if v.type == to:
            return v
        if isinstance(v.type, T.Array):  # an array's cast names the new element type
            to = T.Scalar(to.dtype)
            if v.type.dtype == to.dtype:
                return v
        return self.value("cast", (v,), {"to": to}, name=v.name)
