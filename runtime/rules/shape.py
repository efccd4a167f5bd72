"""Derivative rules of shape and indexing primitives (views, joins, splits, scatters).

Views are linear maps that move elements, so each rule is the transpose: it moves the cotangent
back (reshape, permute) or embeds it into zeros of the input's shape (select, slice, index).
"""

import numpy as np

from runtime.rules import rule


@rule("view", "unsafe_view", "squeeze", "unsqueeze", "flatten")
def reshape_back(ops, g, needs, shape):
    return (ops.reshape(g, shape),)


@rule("t")
def t(ops, g, needs):
    return (ops.mT(g) if ops.ndim(g) == 2 else g,)


@rule("transpose")
def transpose(ops, g, needs, d0, d1):
    return (g if ops.ndim(g) == 0 else ops.swapaxes(g, d0, d1),)


@rule("permute")
def permute(ops, g, needs, perm):
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return (ops.permute(g, tuple(inverse)),)


@rule("expand")
def expand(ops, g, needs, shape):
    return (ops.sum_to(g, shape),)


@rule("select", "slice")
def select(ops, g, needs, shape, key):
    return (ops.embed(g, shape, key),)


@rule("index")
def index(ops, g, needs, shape, key):
    return (ops.embed_add(g, shape, key),)


@rule("index_put")
def index_put(ops, g, needs, key, value_shape):
    gself = ops.fill_at(g, key, 0.0) if needs[0] else None
    gvalue = ops.sum_to(ops.getitem(g, key), value_shape) if needs[1] else None
    return gself, gvalue


@rule("cat")
def cat(ops, g, needs, dim, sizes):
    """Size None: a 1-d empty input cat() skipped, whose gradient PyTorch makes afresh
    (an empty tensor outside the graph)."""
    grads, start = [], 0
    for size, need in zip(sizes, needs):
        if size is None:
            grads.append(ops.zeros((0,), g) if need else None)
            continue
        grads.append(ops.narrow(g, dim, start, size) if need else None)
        start += size
    return tuple(grads)


@rule("stack")
def stack(ops, g, needs, dim):
    return tuple(ops.select(g, dim, i) if need else None for i, need in enumerate(needs))


def _cotangents(gs):
    """A multi-output node with a single output receives its cotangent bare, not in a list."""
    return gs if isinstance(gs, (list, tuple)) else [gs]


@rule("split")
def split(ops, gs, needs, shape, dim, sizes):
    gs = _cotangents(gs)
    # one piece too is joined by cat, as PyTorch does: a new tensor, not the piece's gradient
    like = next(g for g in gs if g is not None)
    parts = []
    for g, size in zip(gs, sizes):
        part_shape = shape[:dim] + (size,) + shape[dim + 1 :]
        parts.append(ops.zeros(part_shape, like) if g is None else g)
    return (ops.cat(parts, dim),)


@rule("unbind")
def unbind(ops, gs, needs, shape, dim):
    gs = _cotangents(gs)
    like = next(g for g in gs if g is not None)
    part_shape = shape[:dim] + shape[dim + 1 :]
    return (ops.stack([ops.zeros(part_shape, like) if g is None else g for g in gs], dim),)


@rule("repeat")
def repeat(ops, g, needs, repeats, shape):
    """PyTorch's form: the leading dimensions repeat added are summed away one at a time,
    then each tiled dimension is viewed as (tiles, size) and its tiles summed; where nothing
    is tiled the cotangent itself is the gradient (a view, when it is one)."""
    if 0 in repeats:
        return (ops.zeros(tuple(shape), g),)
    lead = len(repeats) - len(shape)
    for _ in range(lead):
        g = ops.sum_dim(g, 0, False)
    sizes, tiled = [], []
    for r, n in zip(repeats[lead:], shape):
        if r != 1:
            tiled.append(len(sizes))
            sizes.append(r)
        sizes.append(n)
    if not tiled:
        return (g,)
    return (ops.sum_dim(ops.reshape(g, tuple(sizes)), tuple(tiled), False),)


@rule("diagonal")
def diagonal(ops, g, needs, shape):
    return (ops.diag_embed(g, shape),)


@rule("diag_embed")
def diag_embed(ops, g, needs, shape):
    return (ops.diagonal(g),)


@rule("scatter_dim")
def scatter_dim(ops, g, needs, dim, indices, shape):
    return (ops.gather_dim(g, dim, indices),)


@rule("gather_dim")
def gather_dim(ops, g, needs, dim, indices, shape):
    return (ops.scatter_dim(g, dim, indices, shape),)


@rule("embed")
def embed(ops, g, needs, key):
    return (ops.getitem(g, key),)


@rule("embed_add")
def embed_add(ops, g, needs, key):
    return (ops.getitem(g, key),)


@rule("view_replay")
def view_replay(ops, g, needs, base_shape, steps, empty=False):
    """AsStridedBackward0: g put back into the base's place. As PyTorch's, a view or base
    without elements (`empty`) gets plain zeros, which start no graph under create_graph."""
    if empty:
        return (ops.zeros(base_shape, g),)
    return (ops.embed_view(g, base_shape, steps),)


@rule("embed_view")
def embed_view(ops, g, needs, base_shape, steps):
    return (ops.view_region(g, base_shape, steps),)


@rule("nll_loss")
def nll_loss(ops, g, needs, shape, target, coeff):
    """The cotangent goes to each row's target class, scaled by -weight (/ total for mean).

    `target` holds the class indices with a trailing axis of size 1; `coeff` the per-row
    factors, both fixed by the forward pass."""
    picked = ops.mul(g, coeff)
    return (ops.scatter_dim(ops.reshape(picked, ops.shape(target)), 1, target, shape),)


def rotate90(ops, x, k, dims):
    """x turned k quarter turns from dims[0] towards dims[1] (PyTorch's composition)."""
    d0, d1 = dims  # non-negative
    turns = {0: lambda: x, 1: lambda: ops.swapaxes(ops.flip(x, d1), d0, d1),
             2: lambda: ops.flip(ops.flip(x, d0), d1),
             3: lambda: ops.swapaxes(ops.flip(x, d0), d0, d1)}
    return turns[k % 4]()


@rule("block_diag")
def block_diag(ops, g, needs, shapes):
    """Each input's block of the cotangent, reshaped back (0-d and 1-d inputs were one row)."""
    grads, r, c = [], 0, 0
    for shape, need in zip(shapes, needs):
        rows, cols = (1, int(np.prod(shape))) if len(shape) < 2 else shape
        block = ops.getitem(g, (slice(r, r + rows), slice(c, c + cols)))
        grads.append(ops.reshape(block, shape) if need else None)
        r, c = r + rows, c + cols
    return tuple(grads)


@rule("rot90")
def rot90(ops, g, needs, k, dims):
    """A rotation's transpose is the opposite rotation."""
    return (rotate90(ops, g, -k, dims),)
