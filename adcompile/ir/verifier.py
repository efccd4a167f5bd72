"""IR verifier: definitions before uses (dominance by nesting), one definition per value,
terminators, arities and types per primitive. Run after every pass in tests."""

from adcompile.errors import InternalError
from adcompile.ir import types as T
from adcompile.ir.prims import PRIMS


def verify(fn):
    defined = set(fn.params)
    _block(fn.body, defined, "return")


_EXPECTED_TERMINATOR = {"if": ("yield", "yield"), "for": ("yield",),
                        "while": ("condition", "yield")}


def _block(block, visible, terminator):
    visible = set(visible) | set(block.params)
    if not block.ops or block.terminator.prim != terminator:
        raise InternalError(f"a block must end with '{terminator}'")
    for i, op in enumerate(block.ops):
        prim = PRIMS.get(op.prim)
        if prim is None:
            raise InternalError(f"unknown primitive {op.prim!r}")
        if prim.terminator and i != len(block.ops) - 1:
            raise InternalError(f"'{op.prim}' in the middle of a block")
        for v in op.operands:
            if v not in visible:
                raise InternalError(f"{op.prim} uses {v!r} before (or outside) its definition")
        _check_signature(op, prim)
        for region, expected in zip(op.regions, _EXPECTED_TERMINATOR.get(op.prim, ())):
            _block(region, visible, expected)
        _check_region_types(op)
        for r in op.results:
            if r in visible:
                raise InternalError(f"{r!r} is defined twice")
            visible.add(r)


def _check_signature(op, prim):
    if prim.arity is not None and len(op.operands) != prim.arity:
        raise InternalError(f"{op.prim} takes {prim.arity} operands, got {len(op.operands)}")
    if op.prim in _EXPECTED_TERMINATOR or prim.terminator:
        return
    expected = prim.type_rule([v.type for v in op.operands], op.attrs)
    if [r.type for r in op.results] != list(expected):
        raise InternalError(f"{op.prim}: result types {[str(r.type) for r in op.results]} "
                            f"do not follow from its operands ({[str(t) for t in expected]})")


def _check_region_types(op):
    results = [r.type for r in op.results]
    for region in op.regions:
        term = region.terminator
        yielded = term.operands[1:] if term.prim == "condition" else term.operands
        if [v.type for v in yielded] != results:
            raise InternalError(f"{op.prim}: a region yields {[str(v.type) for v in yielded]} "
                                f"but the op has results {[str(t) for t in results]}")
    if op.prim == "for":
        params = [p.type for p in op.regions[0].params]
        if params[0] != T.INT or params[1:] != results:
            raise InternalError("for: body parameters do not match the carried values")
