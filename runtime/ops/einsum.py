"""torch.einsum, composed from recorded operations in the order PyTorch 2.13 composes them.

Each operand gets its repeated labels reduced to diagonals, a unit dimension for each label it
lacks, and one permute into a common label order (output labels first, then contracted ones);
a contracted label only one operand has is summed out of it; then the first two operands are
contracted and the result appended to the end, until one is left: a product without shared
contracted labels is a broadcasting `mul`, one with them a `bmm` over (kept, left-only,
summed) x (kept, summed, right-only) reshapes, as PyTorch's sumproduct_pair does; contracted
unit dimensions left at the end are dropped by one view. Labels are ASCII letters; `...`
stands for broadcast dimensions. Values, gradients and graphs equal PyTorch's for up to three
operands (with four or more PyTorch follows opt_einsum's cheapest path, this the given order:
values and gradients still agree).
"""

import string

import numpy as np

from runtime.autograd_meta import any_requires_grad, record
from runtime.function import Node
from runtime.ops._core import is_tensor, wrap
from runtime.rules import RULES

_LETTERS = string.ascii_uppercase + string.ascii_lowercase
ELLIPSIS = "."


def einsum(equation, *operands):
    if not isinstance(equation, str):
        equation, operands = _from_sublists(equation, operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): at least one operand is needed")
    inputs, output = _parse(equation, operands)
    return _contract(list(operands), inputs, output)


def _from_sublists(first, rest):
    """einsum(a, [0, 1], b, [1, 2], [0, 2]): the sublist format, rewritten as an equation."""
    args = (first,) + tuple(rest)
    out = args[-1] if len(args) % 2 else None
    body = args[:-1] if len(args) % 2 else args
    name = lambda s: "".join("..." if i is Ellipsis else _LETTERS[i] for i in s)  # noqa: E731
    eq = ",".join(name(s) for s in body[1::2])
    return (eq + ("->" + name(out) if out is not None else ""), body[0::2])


def _split_labels(term):
    term = term.replace(" ", "")
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise RuntimeError(f"einsum(): invalid subscript {term!r}: '.' only as one '...'")
    labels = list(term.replace("...", ELLIPSIS))
    for c in labels:
        if c != ELLIPSIS and c not in _LETTERS:
            raise RuntimeError(f"einsum(): invalid subscript {c!r}; use letters a-z, A-Z")
    return labels


def _parse(equation, operands):
    lhs, arrow, rhs = equation.partition("->")
    terms = [_split_labels(t) for t in lhs.split(",")]
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): the equation names {len(terms)} operands, but "
                           f"{len(operands)} were given")
    for labels, op in zip(terms, operands):
        if not is_tensor(op):
            raise TypeError(f"einsum(): operands must be Tensors, got {type(op).__name__}")
        named = len([c for c in labels if c != ELLIPSIS])
        nd = op._data.ndim
        if (ELLIPSIS in labels and nd < named) or (ELLIPSIS not in labels and nd != named):
            raise RuntimeError(f"einsum(): the subscript {''.join(labels)!r} does not fit an "
                               f"operand with {nd} dimensions")
    if arrow:
        output = _split_labels(rhs)
        seen = [c for t in terms for c in t]
        for c in output:
            if c != ELLIPSIS and c not in seen:
                raise RuntimeError(f"einsum(): output label {c!r} appears in no operand")
            if output.count(c) > 1:
                raise RuntimeError(f"einsum(): output label {c!r} appears more than once")
    else:
        counts = {}
        for t in terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        ell = [ELLIPSIS] if ELLIPSIS in counts else []
        output = ell + sorted(c for c, n in counts.items() if n == 1 and c != ELLIPSIS)
    return terms, output


def _contract(operands, inputs, output):
    ell_dims = max((op._data.ndim - len(t) + 1 for op, t in zip(operands, inputs)
                    if ELLIPSIS in t), default=0)
    order = _label_order(inputs, output, ell_dims)
    n_out = _expanded_len(output, ell_dims)
    permuted = [_align(op, labels, order, ell_dims) for op, labels in zip(operands, inputs)]
    _broadcast_sizes(permuted, order)
    present = [{i for i, key in enumerate(order)
                if (key[0] if isinstance(key, tuple) else key) in labels} for labels in inputs]
    return _fold(permuted, present, n_out, len(order))


def _expanded_len(labels, ell_dims):
    return sum(ell_dims if c == ELLIPSIS else 1 for c in labels)


def _label_order(inputs, output, ell_dims):
    """Axis keys of the common layout: output labels (ellipsis axes in place), then ellipsis
    axes not in the output, then contracted labels in PyTorch's order (A-Z, then a-z)."""
    order = []
    for c in output:
        order += [(ELLIPSIS, k) for k in range(ell_dims)] if c == ELLIPSIS else [c]
    used = {c for t in inputs for c in t}
    if ELLIPSIS in used and ELLIPSIS not in output:
        order += [(ELLIPSIS, k) for k in range(ell_dims)]
    order += [c for c in _LETTERS if c in used and c not in output]
    return order


def _align(op, labels, order, ell_dims):
    """Diagonals for repeated labels, unit axes for missing ones, one permute into `order`."""
    from runtime.ops import shape as S

    where = {}
    j = 0
    for c in labels:
        if c == ELLIPSIS:
            missing = ell_dims - (op._data.ndim - len(labels) + 1)
            for _ in range(missing):
                op = S.unsqueeze(op, j)
            for k in range(ell_dims):
                where[(ELLIPSIS, k)] = j
                j += 1
        elif c in where:
            op = _diagonal_into(op, where[c], j)
        else:
            where[c] = j
            j += 1
    perm = []
    for key in order:
        if key not in where:
            op = S.unsqueeze(op, -1)
            where[key] = j
            j += 1
        perm.append(where[key])
    return S.permute(op, *perm)


def _diagonal_into(op, keep, drop):
    """The diagonal of axes (keep, drop), moved to axis `keep` (drop > keep)."""
    from runtime.ops.shape import permute

    n = op._data.shape[keep]
    if op._data.shape[drop] != n:
        raise RuntimeError(f"einsum(): a repeated label spans axes of sizes {n} and "
                           f"{op._data.shape[drop]}")
    diag = diagonal(op, keep, drop)
    order = list(range(diag._data.ndim - 1))
    order.insert(keep, diag._data.ndim - 1)
    return permute(diag, *order)


# Made here rather than through node_class: shape ops may register a DiagonalBackward0 of
# their own with another rule signature.
DiagonalBackward0 = type("DiagonalBackward0", (Node,),
                         {"__slots__": (), "_rule": staticmethod(RULES["diagonal_dims"])})


def _strided_diagonal(data, dim1, dim2):
    """The diagonal of a private copy, with the strides PyTorch's diagonal view has (so later
    reshapes copy or view as PyTorch's do), without aliasing the input."""
    buf = np.ascontiguousarray(data).copy()
    diag = np.diagonal(buf, 0, dim1, dim2)
    return np.lib.stride_tricks.as_strided(buf, diag.shape, diag.strides, writeable=True)


def diagonal(x, dim1, dim2):
    """The main diagonal of axes dim1 < dim2, as a new last axis (a copy)."""
    out = wrap(_strided_diagonal(x._data, dim1, dim2), x._dtype)
    if any_requires_grad((x,)):
        record(DiagonalBackward0, (x,), out, (x._data.shape, dim1, dim2))
    return out


def _broadcast_sizes(ops, order):
    sizes = []
    for d in range(len(order)):
        size = 1
        for op in ops:
            n = op._data.shape[d]
            if n != 1:
                if size not in (1, n):
                    raise RuntimeError(f"einsum(): operands do not broadcast: sizes {size} "
                                       f"and {n} for one label")
                size = n
        sizes.append(size)
    return sizes


def _fold(ops, present, n_out, n_all):
    """Contract the aligned operands pairwise, first two first, each result appended to the
    end of the list (PyTorch's order along opt_einsum's path for small problems). Axes
    `present[i]` are the labels operand i really has; a contracted label only one operand has
    is summed out of it first."""
    from runtime.ops.elementwise import mul
    from runtime.ops.reductions import sum as sum_

    contracted = set(range(n_out, n_all))
    if len(ops) == 1:
        return sum_(ops[0], tuple(sorted(contracted))) if contracted else ops[0]
    ops, present = list(ops), [set(p) for p in present]
    for i, op in enumerate(ops):
        others = set().union(*(p for j, p in enumerate(present) if j != i))
        only = sorted((present[i] & contracted) - others)
        if only:
            ops[i] = sum_(op, tuple(only), True)
            present[i] -= set(only)
    while len(ops) > 1:
        a, b = ops.pop(0), ops.pop(0)
        pa, pb = present.pop(0), present.pop(0)
        summed = sorted(((pa | pb) & contracted) - set().union(*present))
        ops.append(_pair(a, b, summed) if summed else mul(a, b))
        present.append((pa | pb) - set(summed))
    result = ops[0]
    if n_all > n_out:  # the contracted axes are unit axes by now: a view drops them
        from runtime.ops.shape import view

        result = view(result, result._data.shape[:n_out])
    return result


def _pair(left, right, summed):
    """sum over `summed` of left * right (same rank, unit axes broadcast), as one bmm; the
    summed axes stay as unit axes."""
    from runtime.ops.linalg import bmm
    from runtime.ops.shape import permute, reshape

    ls, rs = left._data.shape, right._data.shape
    both, lo, ro = [], [], []
    for d in range(len(ls)):
        if d in summed:
            continue
        if ls[d] != 1 and rs[d] != 1:
            both.append(d)
        elif ls[d] != 1:
            lo.append(d)
        else:
            ro.append(d)
    size = lambda shape, dims: int(np.prod([shape[d] for d in dims]))  # noqa: E731
    lp = reshape(permute(left, *(both + lo + summed + ro)),
                 (size(ls, both), size(ls, lo), size(ls, summed)))
    rp = reshape(permute(right, *(both + summed + ro + lo)),
                 (size(rs, both), size(rs, summed), size(rs, ro)))
    out = bmm(lp, rp)
    layout = both + lo + summed + ro
    shape = [ls[d] for d in both + lo] + [1] * len(summed) + [rs[d] for d in ro]
    return permute(reshape(out, tuple(shape)), *np.argsort(layout).tolist())
