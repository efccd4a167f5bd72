"""torch.einsum, composed from recorded operations in the order PyTorch 2.13 composes them.

Each operand gets its repeated labels reduced to diagonals, a unit dimension for each label it
lacks, and one permute into a common label order (output labels first, then contracted ones);
a contracted label only one operand has is summed out of it; then the first two operands are
contracted and the result appended to the end, until one is left: a product without shared
contracted labels is a broadcasting `mul`, one with them a `bmm` over (kept, left-only,
summed) x (kept, summed, right-only) reshapes, as PyTorch's sumproduct_pair does; contracted
unit dimensions left at the end are dropped by one view. Labels are ASCII letters; `...`
stands for broadcast dimensions. With three or more operands the pairs are taken along
opt_einsum's path when `torch.backends.opt_einsum` is enabled and the package is installed
(PyTorch asks opt_einsum the same way), else left to right as PyTorch does without it; so
values, gradients and graphs (grad_fn names along next_functions) equal PyTorch's.
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
    return _contract(list(operands), inputs, output, _path(equation, operands))


def _path(equation, operands):
    """The contraction order as PyTorch picks it: opt_einsum's path (pairs of positions in
    the shrinking operand list) for three or more operands when torch.backends.opt_einsum
    is enabled and installed, else None (left to right)."""
    from runtime.accelerators import opt_einsum

    if len(operands) < 3 or not opt_einsum.enabled:
        return None
    module = opt_einsum.get_opt_einsum()
    if module is None:
        return None
    shapes = [op._data.shape for op in operands]
    pairs = module.contract_path(equation, *shapes, optimize=opt_einsum.strategy,
                                 shapes=True)[0]
    return [tuple(sorted(p)) for p in pairs]


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


def _contract(operands, inputs, output, path=None):
    ell_dims = max((op._data.ndim - len(t) + 1 for op, t in zip(operands, inputs)
                    if ELLIPSIS in t), default=0)
    order = _label_order(inputs, output, ell_dims)
    n_out = _expanded_len(output, ell_dims)
    permuted = [_align(op, labels, order, ell_dims) for op, labels in zip(operands, inputs)]
    _broadcast_sizes(permuted, order)
    present = [{i for i, key in enumerate(order)
                if (key[0] if isinstance(key, tuple) else key) in labels} for labels in inputs]
    return _fold(permuted, present, n_out, len(order), path)


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


def _fold(ops, present, n_out, n_all, path=None):
    """Contract the aligned operands pairwise, each result appended to the end of the list:
    the pairs `path` names (positions in the current list), or the first two. Axes
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
    steps = iter(path or ())
    while len(ops) > 1:
        i, j = next(steps, (0, 1))
        b, pb = ops.pop(j), present.pop(j)
        a, pa = ops.pop(i), present.pop(i)
        summed = sorted(((pa | pb) & contracted) - set().union(*present))
        if summed and _right_first(a, b, summed):
            a, b = b, a
        at = len(ops) if path else 0  # along a path results go last, else first
        ops.insert(at, _pair(a, b, summed) if summed else mul(a, b))
        present.insert(at, (pa | pb) - set(summed))
    result = ops[0]
    if n_all > n_out:  # the contracted axes are unit axes by now: a view drops them
        from runtime.ops.shape import view

        result = view(result, result._data.shape[:n_out])
    return result


def _right_first(a, b, summed):
    """Whether PyTorch makes `b` the left bmm operand: when every kept axis only b spans
    (or neither does) comes before every kept axis only a spans, so that bmm writes the
    result in its final order."""
    left_only, right_only = [], []
    for d, (sa, sb) in enumerate(zip(a._data.shape, b._data.shape)):
        if d in summed or (sa != 1 and sb != 1):
            continue
        (left_only if sa != 1 else right_only).append(d)
    return bool(left_only and right_only) and right_only[-1] < left_only[0]


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
