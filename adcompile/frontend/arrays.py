"""Whole-array numpy code in the front end: indexing with slices, methods of arrays, and the
numpy functions that take or make arrays (reductions, products, joins, constructors).

Each numpy callable maps to a lowering function in `FUNCTIONS`; an array method maps to the
same lowering with the array as first argument. Everything known only at compile time (axes,
keepdims, the layout of an index) becomes attributes; everything else (sizes, bounds) operands.
"""

import ast
import builtins

import numpy as np

from adcompile.ir import types as T

DTYPES = {np.float64: "f64", np.float32: "f32", np.int64: "i64", float: "f64", int: "i64",
          np.bool_: "bool", bool: "bool", "float64": "f64", "float32": "f32", "int64": "i64",
          "bool": "bool"}


class Method:
    """`x.name` of an array x, waiting for its call."""

    def __init__(self, array, name):
        self.array = array
        self.name = name


# -- indexing ----------------------------------------------------------------------------------

def index_items(lw, node, array):
    """The items of `array[...]`: ("int", v), ("slice", start, stop, step) with Values or None,
    ("new",), ("array", v) for integer arrays, ("mask", v) for boolean arrays; `...` expanded."""
    elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    items, ellipsis = [], None
    for e in elts:
        if isinstance(e, ast.Slice):
            bounds = [None if b is None else _int(lw, b) for b in (e.lower, e.upper, e.step)]
            items.append(("slice", *bounds))
        elif isinstance(e, ast.Constant) and e.value is Ellipsis:
            if ellipsis is not None:
                raise lw.error(e, "an index can only have a single ellipsis ('...')")
            ellipsis = len(items)
        elif isinstance(e, ast.Constant) and e.value is None:
            items.append(("new",))
        else:
            found = lw.expr(e)  # evaluated once: an index may call a function with effects
            if getattr(found, "obj", 0) is None and not hasattr(found, "type"):
                items.append(("new",))  # np.newaxis
                continue
            v = lw.as_value(found, e)
            if isinstance(v.type, T.Array) and v.type.dtype == "bool":
                items.append(("mask", v, e))
            elif isinstance(v.type, T.Array) and v.type.dtype == "i64":
                items.append(("array", v, e))
            elif isinstance(v.type, T.Scalar) and v.type.dtype in ("i64", "bool") and \
                    not (v.type.dtype == "bool"):
                items.append(("int", v))
            else:
                raise lw.error(e, f"array indices must be integers, slices, None, '...', "
                                  f"integer arrays or a boolean mask, not {v.type}")
    taken = sum(1 for it in items if it[0] != "new")
    ndim = array.type.ndim
    if taken > ndim:
        raise lw.error(node, f"too many indices for a {ndim}-d array: {taken} given")
    if ellipsis is not None:
        items[ellipsis:ellipsis] = [("slice", None, None, None)] * (ndim - taken)
    return items


def _int(lw, node):
    v = lw.as_value(lw.expr(node), node)
    if not (isinstance(v.type, T.Scalar) and v.type.dtype == "i64"):
        raise lw.error(node, f"slice bounds must be integers, not {v.type}")
    return v


def subscript(lw, node, array):
    """`array[...]` read: an element (load), a view (slice), or a copy (integer arrays and
    boolean masks)."""
    items = index_items(lw, node, array)
    kinds = [it[0] for it in items]
    if all(k == "int" for k in kinds):  # an element, or a row view
        indices = [it[1] for it in items]
        return lw.b.value("load", [array] + indices, node=node,
                          name=element_name(array, indices))
    if "mask" in kinds:
        if len(items) != 1 or items[0][1].type.ndim > array.type.ndim:
            raise lw.error(node, "a boolean mask must be the only index, with at most the "
                                 "array's number of dimensions")
        return lw.b.value("mask", (array, items[0][1]), node=node)
    if "array" in kinds:
        if not all(k == "array" for k in kinds):
            raise lw.error(node, "integer-array indexing mixed with slices or integers is not "
                                 "supported; index with integer arrays only (x[idx], "
                                 "x[rows, cols])")
        return lw.b.value("take", [array] + [it[1] for it in items], node=node)
    return view(lw, array, items, node)


def element_name(array, indices):
    """A readable name for a loaded element: x[i, j] -> x_i_j."""
    parts = [array.name or "a"]
    for v in indices:
        if v.owner is not None and v.owner.prim == "const":
            parts.append(str(v.owner.attrs["value"]).replace("-", "m"))
        else:
            parts.append(v.name or "k")
    return "_".join(parts)


def view(lw, array, items, node):
    operands, layout = [array], []
    for it in items:
        if it[0] == "int":
            operands.append(it[1])
            layout.append(("int",))
        elif it[0] == "new":
            layout.append(("new",))
        else:
            present = tuple(b is not None for b in it[1:])
            operands += [b for b in it[1:] if b is not None]
            layout.append(("slice",) + present)
    return lw.b.value("slice", operands, {"index": tuple(layout)}, node=node,
                      name=f"{array.name or 'a'}_view")


def store(lw, target, value_fn, node, op=None):
    """`target[...] = value` (op None) or `target[...] op= value`: the value (from
    value_fn(), called after the target is evaluated, as Python does) stored into an element,
    or broadcast into a view where the index has a slice, None or '...'."""
    array = lw.as_value(lw.expr(target.value), target.value)
    if not isinstance(array.type, T.Array):
        raise lw.error(target, f"an index assignment needs an array, not {array.type}")
    items = index_items(lw, target, array)
    kinds = [it[0] for it in items]
    if all(k == "int" for k in kinds) and len(items) == array.type.ndim:
        indices = [it[1] for it in items]
        if op is None:
            lw.b.emit("store", [array] + indices + [lw.as_value(value_fn(), node)], node=node)
            return True
        old = lw.b.value("load", [array] + indices, node=node)
        new = lw.binary(op, old, value_fn(), node)
        lw.b.emit("store", [array] + indices + [new], node=node)
        return True
    if "mask" in kinds or "array" in kinds:
        raise lw.error(target, "assigning through integer arrays or a boolean mask is not "
                               "supported; use np.where(mask, new, x) or a loop")
    dst = view(lw, array, items, target) if items else array
    value = lw.as_value(value_fn(), node)
    if op is None:
        lw.b.emit("assign", (dst, value), node=node)
    else:
        augment_in_place(lw, dst, op, value, node)
    return True


def augment_in_place(lw, dst, op, value, node):
    """`dst op= value` on an array: computed in place (numpy), so the result must fit dst's
    dtype (numpy refuses int_array += 1.5)."""
    value = lw.as_value(value, node)
    if op == "matmul":
        raise lw.error(node, "@= is not supported; write x = x @ y")
    try:
        from adcompile.ir.prims import PRIMS
        (result,) = PRIMS[op].type_rule([dst.type, value.type], {})
    except TypeError as e:
        raise lw.error(node, str(e)) from None
    if result.kind > dst.type.element.kind:
        raise lw.error(node, f"the result of this in-place operation is {result.dtype}, which "
                             f"numpy does not store into a {dst.type} array in place; write "
                             f"x = x {_SYMBOL.get(op, op)} y for a new array")
    lw.b.emit("iadd", (dst, value), {"op": op}, node=node)


_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%",
           "pow": "**", "bit_and": "&", "bit_or": "|", "bit_xor": "^"}


# -- attributes and methods --------------------------------------------------------------------

METHODS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "reshape", "ravel",
           "flatten", "astype", "copy", "transpose", "dot", "clip", "squeeze", "trace",
           "diagonal")


def attribute(lw, value, name, node):
    if name == "T":
        return lw.b.value("transpose", (value,), {"perm": tuple(range(value.type.ndim))[::-1]},
                          node)
    if name in METHODS:
        from adcompile.frontend.lower import Static

        return Static(Method(value, name))
    return None


def call_method(lw, method, node):
    fn = _METHOD_FUNCTIONS[method.name]
    return fn(lw, node, [method.array] + _args(lw, node), _keywords(lw, node))


# -- calls -------------------------------------------------------------------------------------

def _args(lw, node):
    return [lw.expr(a) for a in node.args]


def _keywords(lw, node):
    return {k.arg: (k.value, lw.expr(k.value)) for k in node.keywords}


def _value(lw, arg, node):
    return lw.as_value(arg, node)


def _array_arg(lw, arg, node, what):
    v = lw.as_value(arg, node)
    if not isinstance(v.type, T.Array):
        raise lw.error(node, f"{what} needs an array, not {v.type}")
    return v


def _static_int(lw, arg, node, what):
    """A compile-time integer (a constant or a constant expression)."""
    v = getattr(arg, "obj", None) if not hasattr(arg, "type") else None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if hasattr(arg, "owner") and arg.owner is not None and arg.owner.prim == "const" and \
            isinstance(arg.owner.attrs["value"], int):
        return arg.owner.attrs["value"]
    if hasattr(arg, "owner") and arg.owner is not None and arg.owner.prim == "neg":
        inner = arg.owner.operands[0].owner
        if inner is not None and inner.prim == "const":
            return -inner.attrs["value"]
    raise lw.error(node, f"{what} must be an integer constant")


def _axes(lw, kw, ndim, node, what, allow_tuple=True):
    """The `axis=` keyword as a tuple of non-negative axes, or None."""
    if "axis" not in kw:
        return None
    vnode, arg = kw["axis"]
    return _axis_value(lw, arg, vnode, ndim, what, allow_tuple)


def _axis_value(lw, arg, vnode, ndim, what, allow_tuple=True):
    if getattr(arg, "obj", 0) is None and not hasattr(arg, "type"):
        return None
    if hasattr(arg, "obj") and isinstance(arg.obj, tuple):
        if not allow_tuple:
            raise lw.error(vnode, f"{what}: axis must be one integer")
        axes = [_static_int(lw, a, vnode, "axis") for a in arg.obj]
    else:
        axes = [_static_int(lw, arg, vnode, "axis")]
    normal = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise lw.error(vnode, f"{what}: axis {a} is out of range for a {ndim}-d array")
        normal.append(a % ndim)
    if len(set(normal)) != len(normal):
        raise lw.error(vnode, f"{what}: an axis is repeated")
    return tuple(sorted(normal))


def _keepdims(lw, kw):
    if "keepdims" not in kw:
        return False
    vnode, arg = kw["keepdims"]
    value = getattr(arg, "obj", None)
    if hasattr(arg, "owner") and arg.owner is not None and arg.owner.prim == "const":
        value = arg.owner.attrs["value"]
    if not isinstance(value, bool):
        raise lw.error(vnode, "keepdims must be True or False (a constant)")
    return value


def _check_keywords(lw, node, kw, allowed, what):
    for name in kw:
        if name not in allowed:
            raise lw.error(node, f"{what} does not take the keyword argument '{name}' in "
                                 f"compiled code" + (f" (supported: {', '.join(allowed)})"
                                                     if allowed else ""))


def _reduce(prim, what):
    def lower(lw, node, args, kw):
        _check_keywords(lw, node, kw, ("axis", "keepdims"), what)
        if len(args) > 2:
            raise lw.error(node, f"{what} takes the array and an axis")
        if len(args) == 2:
            kw = dict(kw, axis=(node.args[-1] if node.args else node, args[1]))
        x = lw.as_value(args[0], node)
        if isinstance(x.type, T.Scalar):
            if prim in ("argmax", "argmin"):
                return lw.b.const(0, T.I64)
            return lw.b.cast(x, T.Scalar(x.type.dtype if x.type.dtype != "bool" or prim in
                                         ("amax", "amin") else "i64"), node)
        axes = _axes(lw, kw, x.type.ndim, node, what, prim not in ("argmax", "argmin"))
        attrs = {"axis": axes, "keepdims": _keepdims(lw, kw)}
        return lw.b.value(prim, (x,), attrs, node)

    return lower


def _builtin_sum(lw, node, args, kw):
    """sum(x) is the loop Python runs: 0 + x[0] + x[1] + ..., each addition with numpy's
    semantics (float32 elements add in float32; the rows of a 2-d array add as arrays). A
    reduction would add in another order and, for float32, in float64."""
    if len(args) != 1 or kw:
        raise lw.error(node, "sum() in compiled code takes one array (a start value is not "
                             "supported)")
    x = _array_arg(lw, args[0], node, "sum()")
    if x.type.ndim == 0:
        raise lw.error(node, "sum() of a 0-d array is a TypeError in Python (it cannot be "
                             "iterated); use the value itself")
    start = lw.b.const(0) if x.type.ndim == 1 else _zero_row(lw, node, x)
    lw.env[SUM] = start
    stop = lw.b.value("shape", (x,), {"axis": 0}, node)

    def add_item(index):  # index < len(x): the load cannot raise, so no effect to keep
        item = lw.b.value("load", (x, index), {"in_bounds": True}, node,
                          name=element_name(x, [index]))
        lw.env[SUM] = lw.b.value("add", (lw.env[SUM], item), node=node)

    bounds = [lw.b.const(0, T.INT), stop, lw.b.const(1, T.INT)]
    total = lw.build_loop(node, {SUM}, "for", bounds, add_item)[SUM]
    del lw.env[SUM]
    return total


SUM = "__sum"  # the running total of sum(x) in the environment while its loop is lowered


def _zero_row(lw, node, x):
    """Zeros shaped like a row of `x`, of the dtype of 0 + a row: the same first addition as
    Python's int 0 (0 + -0.0 is 0.0 either way)."""
    dims = [lw.b.value("shape", (x,), {"axis": k}, node) for k in range(1, x.type.ndim)]
    dtype = T.promote(T.INT, x.type.element).dtype
    return lw.b.value("alloc", dims, {"dtype": dtype, "ndim": x.type.ndim - 1, "fill": 0},
                      node)


def _matmul(lw, node, args, kw):
    _check_keywords(lw, node, kw, (), "np.matmul()")
    a, b = (_array_arg(lw, x, node, "np.matmul()") for x in args)
    return lw.b.value("matmul", (a, b), node=node)


def _dot(lw, node, args, kw):
    _check_keywords(lw, node, kw, (), "np.dot()")
    if len(args) != 2:
        raise lw.error(node, "np.dot() takes two arguments")
    a, b = (lw.as_value(x, node) for x in args)
    if isinstance(a.type, T.Scalar) or isinstance(b.type, T.Scalar):
        return lw.b.value("mul", (a, b), node=node)
    if a.type.ndim > 2 or b.type.ndim > 2:
        raise lw.error(node, "np.dot() of arrays with more than 2 dimensions is not supported; "
                             "use @ (np.matmul) for stacks of matrices")
    return lw.b.value("matmul", (a, b), node=node)


def _inner(lw, node, args, kw):
    a, b = (_array_arg(lw, x, node, "np.inner()") for x in args)
    if a.type.ndim != 1 or b.type.ndim != 1:
        raise lw.error(node, "np.inner() is supported for 1-d arrays; use @ otherwise")
    return lw.b.value("matmul", (a, b), node=node)


def _outer(lw, node, args, kw):
    a, b = (_array_arg(lw, x, node, "np.outer()") for x in args)
    a = _ravel(lw, node, [a], {}) if a.type.ndim != 1 else a
    b = _ravel(lw, node, [b], {}) if b.type.ndim != 1 else b
    column = view(lw, a, [("slice", None, None, None), ("new",)], node)
    row = view(lw, b, [("new",), ("slice", None, None, None)], node)
    return lw.b.value("mul", (column, row), node=node)


def _trace(lw, node, args, kw):
    """np.trace(m) is the sum of m's diagonal (a view): its derivatives come from those."""
    m = _array_arg(lw, args[0], node, "np.trace()")
    if m.type.ndim != 2:
        raise lw.error(node, f"np.trace() of a {m.type.ndim}-d array is not supported (a "
                             f"matrix only)")
    return lw.b.value("sum", (_diagonal(lw, node, [m], {}),), {"axis": None, "keepdims": False},
                      node)


def _diagonal(lw, node, args, kw):
    m = _array_arg(lw, args[0], node, "np.diagonal()")
    return lw.b.value("diagonal", (m,), node=node, name=f"{m.name or 'a'}_diagonal")


def _transpose(lw, node, args, kw):
    x = _array_arg(lw, args[0], node, "transpose()")
    ndim = x.type.ndim
    axes = args[1:]
    if "axes" in kw:
        axes = [kw["axes"][1]]
    if len(axes) == 1 and hasattr(axes[0], "obj") and isinstance(axes[0].obj, tuple):
        axes = list(axes[0].obj)
    if not axes:
        perm = tuple(range(ndim))[::-1]
    else:
        perm = tuple(_static_int(lw, a, node, "an axis") % max(ndim, 1) for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise lw.error(node, f"transpose(): {perm} is not a permutation of the {ndim} axes")
    return lw.b.value("transpose", (x,), {"perm": perm}, node)


def _shape_dims(lw, node, args):
    """Sizes given as separate arguments or as one tuple."""
    if len(args) == 1 and hasattr(args[0], "obj") and isinstance(args[0].obj, tuple):
        args = list(args[0].obj)
    dims = [lw.as_value(a, node) for a in args]
    for d in dims:
        if not (isinstance(d.type, T.Scalar) and d.type.is_int):
            raise lw.error(node, f"array sizes must be integers, not {d.type}")
    return dims


def _reshape(lw, node, args, kw):
    _check_keywords(lw, node, kw, (), "reshape()")
    x = _array_arg(lw, args[0], node, "reshape()")
    dims = _shape_dims(lw, node, args[1:])
    return lw.b.value("reshape", [x] + dims, node=node)


def _ravel(lw, node, args, kw):
    """ravel: a reshape to 1-d, but numpy's is a view only of a C-contiguous array (a
    reshape is one whenever the strides allow: x[:, ::2].reshape(-1) of a C matrix)."""
    x = _array_arg(lw, args[0], node, "ravel()")
    return lw.b.value("reshape", (x, lw.b.const(-1)), {"ravel": True}, node=node)


def _flatten(lw, node, args, kw):
    return lw.b.value("copy", (_ravel(lw, node, args, kw),), node=node)


def _squeeze(lw, node, args, kw):
    raise lw.error(node, "squeeze() is not supported (the sizes are not known when compiling); "
                         "index the axis with 0 instead (x[:, 0])")


def _expand_dims(lw, node, args, kw):
    x = _array_arg(lw, args[0], node, "np.expand_dims()")
    axis = _static_int(lw, args[1] if len(args) > 1 else kw.get("axis", (node, None))[1], node,
                       "axis")
    ndim = x.type.ndim + 1
    if not -ndim <= axis < ndim:
        raise lw.error(node, f"np.expand_dims(): axis {axis} is out of range")
    axis %= ndim
    items = [("slice", None, None, None)] * x.type.ndim
    items.insert(axis, ("new",))
    return view(lw, x, items, node)


def _astype(lw, node, args, kw):
    x = lw.as_value(args[0], node)
    dtype = _dtype_of(lw, args[1] if len(args) > 1 else kw.get("dtype", (node, None))[1], node)
    if isinstance(x.type, T.Scalar):
        return lw.b.cast(x, T.Scalar(dtype), node)
    return lw.b.value("cast", (x,), {"to": T.Scalar(dtype)}, node)


def _dtype_of(lw, arg, node):
    obj = getattr(arg, "obj", None)
    try:
        if obj in DTYPES:
            return DTYPES[obj]
    except TypeError:
        pass
    raise lw.error(node, "dtype must be np.float64, np.float32, np.int64 or np.bool_")


def _copy(lw, node, args, kw):
    x = lw.as_value(args[0], node)
    if isinstance(x.type, T.Scalar):
        return x
    return lw.b.value("copy", (x,), node=node)


def _concatenate(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("axis",), "np.concatenate()")
    items = _sequence(lw, node, args[0] if args else None, "np.concatenate()")
    arrays = [_array_arg(lw, a, node, "np.concatenate()") for a in items]
    axis_arg = args[1] if len(args) > 1 else kw.get("axis", (node, None))[1]
    axis = 0 if axis_arg is None else _static_int(lw, axis_arg, node, "axis")
    ndim = arrays[0].type.ndim
    if not -ndim <= axis < ndim:
        raise lw.error(node, f"np.concatenate(): axis {axis} is out of range")
    return lw.b.value("concatenate", arrays, {"axis": axis % ndim}, node)


def _stack(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("axis",), "np.stack()")
    items = [lw.as_value(a, node) for a in _sequence(lw, node, args[0] if args else None,
                                                      "np.stack()")]
    axis_arg = args[1] if len(args) > 1 else kw.get("axis", (node, None))[1]
    axis = 0 if axis_arg is None else _static_int(lw, axis_arg, node, "axis")
    ndim = (items[0].type.ndim if isinstance(items[0].type, T.Array) else 0) + 1
    if not -ndim <= axis < ndim:
        raise lw.error(node, f"np.stack(): axis {axis} is out of range")
    return lw.b.value("stack", items, {"axis": axis % ndim, "dtype": _joined_dtype(items)},
                      node)


def _sequence(lw, node, arg, what):
    if arg is not None and hasattr(arg, "obj") and isinstance(arg.obj, tuple):
        return list(arg.obj)
    raise lw.error(node, f"{what} needs a list or tuple of arrays written in the call "
                         f"(np.concatenate([a, b]))")


def array_literal(lw, node, elts, dtype=None):
    """np.array([...]) of numbers or equal-shaped arrays, nested lists allowed."""
    items = []
    for e in elts:
        if isinstance(e, (ast.List, ast.Tuple)):
            items.append(array_literal(lw, e, e.elts))
        else:
            items.append(lw.as_value(lw.expr(e), e))
    if not items:
        raise lw.error(node, "np.array([]) of no items is not supported (its shape and type "
                             "are unknown); use np.zeros(0)")
    return lw.b.value("stack", items, {"axis": 0, "dtype": dtype or _joined_dtype(items)},
                      node)


def _joined_dtype(items):
    """The dtype numpy gives an array made of `items`: each item becomes an array first, so a
    Python float is a float64 there, not weak (np.array([0.5, np.float32(1)]) is float64)."""
    element = None
    for v in items:
        strong = T.Scalar(v.type.dtype)
        element = strong if element is None else T.promote(element, strong)
    return element.dtype


def _np_array(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("dtype",), "np.array()")
    dtype = _dtype_of(lw, kw["dtype"][1], node) if "dtype" in kw else None
    first = node.args[0] if node.args else None
    if isinstance(first, (ast.List, ast.Tuple)):
        return array_literal(lw, node, first.elts, dtype)
    x = lw.as_value(args[0], node)
    if isinstance(x.type, T.Array):
        copied = lw.b.value("copy", (x,), node=node)
        return copied if dtype is None else lw.b.value("cast", (copied,),
                                                         {"to": T.Scalar(dtype)}, node)
    raise lw.error(node, "np.array() needs a list written in the call ([a, b, c]) or an array")


def _arange(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("dtype",), "np.arange()")
    values = [lw.as_value(a, node) for a in args]
    if not 1 <= len(values) <= 3:
        raise lw.error(node, "np.arange() takes 1 to 3 arguments")
    if len(values) == 1:
        values = [lw.b.const(0)] + values
    if len(values) == 2:
        values.append(lw.b.const(1))
    attrs = {"dtype": _dtype_of(lw, kw["dtype"][1], node)} if "dtype" in kw else {}
    return lw.b.value("arange", values, attrs, node)


def _linspace(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("num", "dtype"), "np.linspace()")
    values = [lw.as_value(a, node) for a in args]
    if "num" in kw:
        values.append(lw.as_value(kw["num"][1], node))
    if len(values) == 2:
        values.append(lw.b.const(50))
    if len(values) != 3:
        raise lw.error(node, "np.linspace() takes start, stop and num")
    attrs = {"dtype": _dtype_of(lw, kw["dtype"][1], node)} if "dtype" in kw else {}
    return lw.b.value("linspace", values, attrs, node)


def _where(lw, node, args, kw):
    if len(args) != 3:
        raise lw.error(node, "np.where() needs a condition and two values (np.where(c) with "
                             "one argument is not supported)")
    c, a, b = (lw.as_value(x, node) for x in args)
    if not (c.type.dtype == "bool"):
        c = lw.b.value("ne", (c, lw.b.const(0)), node=node)
    element = T.promote(_element(a.type), _element(b.type))
    return lw.b.value("select", (c, _cast_elements(lw, a, element, node),
                                 _cast_elements(lw, b, element, node)), node=node)


def _element(t):
    return t.element if isinstance(t, T.Array) else t


def _cast_elements(lw, v, element, node):
    if isinstance(v.type, T.Array):
        if v.type.dtype == element.dtype:
            return v
        return lw.b.value("cast", (v,), {"to": T.Scalar(element.dtype)}, node)
    return lw.b.cast(v, element if not v.type.weak or not element.weak else v.type, node)


def _clip(lw, node, args, kw):
    x, lo, hi = (lw.as_value(a, node) for a in args)
    numpy = {"lib": "numpy", "keep_int": True}  # clip of integers by integers stays integer
    # bounds first: numpy's clip keeps x where it equals a bound (-0.0 clipped at 0 stays -0.0),
    # and np.maximum(a, b) returns b on a tie
    return lw.b.value("minimum", (hi, lw.b.value("maximum", (lo, x), numpy, node)), numpy, node)


def _square(lw, node, args, kw):
    x = lw.as_value(args[0], node)
    return lw.b.value("mul", (x, x), node=node)


def _reciprocal(lw, node, args, kw):
    x = lw.as_value(args[0], node)
    one = lw.b.const(1.0) if x.type.dtype in ("f32", "f64") else lw.b.const(1)
    return lw.b.value("div", (one, x), node=node)


def _logaddexp(lw, node, args, kw):
    """log(exp(a) + exp(b)) computed as numpy does, without overflow: max + log1p(exp(-|a-b|))."""
    a, b = (lw.as_value(x, node) for x in args)
    big = lw.b.value("maximum", (a, b), {"lib": "numpy"}, node)
    gap = lw.b.value("abs", (lw.b.value("sub", (a, b), node=node),), {"lib": "numpy"}, node)
    tail = lw.b.value("log1p", (lw.b.value("exp", (lw.b.value("neg", (gap,), node=node),),
                                           {"lib": "numpy"}, node),), {"lib": "numpy"}, node)
    return lw.b.value("add", (big, tail), node=node)


def _sign(lw, node, args, kw):
    return lw.b.value("sign", (lw.as_value(args[0], node),), node=node)


def _logical_not(lw, node, args, kw):
    x = lw.as_value(args[0], node)
    if x.type.dtype != "bool":
        x = lw.b.value("ne", (x, lw.b.const(0)), node=node)
    return lw.b.value("not", (x,), node=node) if isinstance(x.type, T.Array) else \
        lw.b.cast(lw.b.value("not", (x,), node=node), T.Scalar("bool"), node)


def _logical(prim):
    def lower(lw, node, args, kw):
        a, b = (lw.as_value(x, node) for x in args)
        a, b = (v if v.type.dtype == "bool" else lw.b.value("ne", (v, lw.b.const(0)), node=node)
                for v in (a, b))
        return lw.b.value(prim, (a, b), node=node)

    return lower


def _round(lw, node, args, kw):
    if len(args) > 1 or kw:
        raise lw.error(node, "np.round() with decimals is not supported; use "
                             "np.round(x * 10.0 ** k) / 10.0 ** k")
    x = lw.as_value(args[0], node)
    return lw.b.value("round", (x,), {"lib": "numpy", "keep_int": True}, node)


def _linalg(prim):
    def lower(lw, node, args, kw):
        return lw.b.value(prim, [lw.as_value(a, node) for a in args], node=node)

    return lower


def _norm(lw, node, args, kw):
    _check_keywords(lw, node, kw, ("axis", "keepdims", "ord"), "np.linalg.norm()")
    x = _array_arg(lw, args[0], node, "np.linalg.norm()")
    if "ord" in kw or len(args) > 1:
        raise lw.error(node, "np.linalg.norm() with ord= is not supported; the default (the "
                             "2-norm of all elements) is: np.sqrt(np.sum(np.abs(x) ** p)) for "
                             "others")
    axes = _axes(lw, kw, x.type.ndim, node, "np.linalg.norm()")
    if axes is not None and len(axes) > 1:
        raise lw.error(node, "np.linalg.norm() over two axes is a matrix norm, which is not "
                             "supported; use np.sqrt(np.sum(x * x, axis=...))")
    squares = lw.b.value("mul", (x, x), node=node)
    total = lw.b.value("sum", (squares,), {"axis": axes, "keepdims": _keepdims(lw, kw)}, node)
    return lw.b.value("sqrt", (total,), {"lib": "numpy"}, node)


def _eye(lw, node, args, kw):
    """np.eye(n) / np.identity(n): zeros with ones written on the diagonal (a view)."""
    _check_keywords(lw, node, kw, ("dtype",), "np.eye()")
    if len(args) != 1:
        raise lw.error(node, "np.eye() is supported with one size (a square matrix)")
    n = lw.as_value(args[0], node)
    if not (isinstance(n.type, T.Scalar) and n.type.is_int):
        raise lw.error(node, f"np.eye() needs an integer size, not {n.type}")
    dtype = _dtype_of(lw, kw["dtype"][1], node) if "dtype" in kw else "f64"
    eye = lw.b.value("alloc", (n, n), {"dtype": dtype, "ndim": 2, "fill": 0}, node,
                     name="eye")
    diagonal = lw.b.value("diagonal", (eye,), node=node)
    lw.b.emit("assign", (diagonal, lw.b.const(1)), node=node)
    return eye


def _full_like(lw, node, args, kw):
    raise lw.error(node, "np.full_like() is not supported; use np.full(x.shape, value)")


FUNCTIONS = {
    np.sum: _reduce("sum", "np.sum()"), np.mean: _reduce("mean", "np.mean()"),
    np.prod: _reduce("prod", "np.prod()"), np.max: _reduce("amax", "np.max()"),
    np.min: _reduce("amin", "np.min()"), np.amax: _reduce("amax", "np.max()"),
    np.amin: _reduce("amin", "np.min()"), np.argmax: _reduce("argmax", "np.argmax()"),
    np.argmin: _reduce("argmin", "np.argmin()"), np.matmul: _matmul, np.dot: _dot,
    np.inner: _inner, np.outer: _outer, np.trace: _trace, np.diagonal: _diagonal,
    np.transpose: _transpose,
    np.reshape: _reshape, np.ravel: _ravel, np.expand_dims: _expand_dims,
    np.concatenate: _concatenate, np.stack: _stack, np.array: _np_array,
    np.asarray: _np_array, np.arange: _arange, np.linspace: _linspace, np.where: _where,
    np.clip: _clip, np.square: _square, np.reciprocal: _reciprocal, np.logaddexp: _logaddexp,
    np.sign: _sign, np.copy: _copy, np.logical_not: _logical_not, np.round: _round,
    np.logical_and: _logical("bit_and"), np.logical_or: _logical("bit_or"), np.linalg.det: _linalg("det"),
    np.linalg.inv: _linalg("inv"), np.linalg.solve: _linalg("solve"), np.linalg.norm: _norm,
    builtins.sum: _builtin_sum, np.full_like: _full_like, np.eye: _eye, np.identity: _eye,
}
_METHOD_FUNCTIONS = {
    "sum": FUNCTIONS[np.sum], "mean": FUNCTIONS[np.mean], "prod": FUNCTIONS[np.prod],
    "max": FUNCTIONS[np.max], "min": FUNCTIONS[np.min], "argmax": FUNCTIONS[np.argmax],
    "argmin": FUNCTIONS[np.argmin], "reshape": _reshape, "ravel": _ravel, "flatten": _flatten,
    "astype": _astype, "copy": _copy, "transpose": _transpose, "dot": _dot, "clip": _clip,
    "squeeze": _squeeze, "trace": _trace, "diagonal": _diagonal,
}
# numpy functions that are not supported, with the nearest supported spelling
NEAREST = {np.einsum: "@, np.dot or np.sum of a product (x * y)", np.cumsum: "a loop",
           np.sort: None, np.unique: None, np.diff: "x[1:] - x[:-1]",
           np.cross: "the components written out", np.tensordot: "@ or np.dot",
           np.average: "np.sum(w * x) / np.sum(w)",
           np.var: "np.mean((x - np.mean(x)) ** 2)", np.std: "np.sqrt(np.var-like expression)",
           np.exp2: "2.0 ** x", np.cbrt: "np.sign(x) * np.abs(x) ** (1/3)",
           np.fft.fft: None, np.vstack: "np.stack or np.concatenate",
           np.hstack: "np.concatenate", np.tile: "np.concatenate", np.repeat: "np.concatenate",
           np.diag: "np.diagonal(x) to read, or np.eye(n) * v to build",
           np.nansum: "np.sum(np.where(x != x, 0.0, x)) (x != x is NaN)",
           np.nanmean: "np.sum and a count of x == x", np.linalg.pinv:
           "np.linalg.inv (square, invertible) or np.linalg.solve",
           np.linalg.eigh: None, np.linalg.svd: None, np.linalg.lstsq: "np.linalg.solve of "
           "the normal equations (A.T @ A, A.T @ b)", np.isnan: "x != x", np.all: "np.min of the boolean array", np.any: "np.max of the boolean "
           "array"}
