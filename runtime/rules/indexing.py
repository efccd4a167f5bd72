"""Derivative rules of issue 16's indexing and shape primitives.

All of them are linear in the differentiated input, so each rule is the transpose: a scatter's
is a gather (`ops.getitem` with the key the forward pass used), a gather's is a scatter-add
(`ops.embed_add`), a flip/roll/transpose moves the cotangent back. Keys are numpy index tuples
fixed by the forward pass; data-dependent weights (scatter_reduce's tie counts) are constants.
"""

from runtime.rules import rule


def _to_source(ops, g_part, src_slices, src_shape):
    """A source larger than its index receives zeros beyond the indexed block."""
    if ops.shape(g_part) == tuple(src_shape):
        return g_part
    return ops.embed(g_part, tuple(src_shape), src_slices)


@rule("scatter")
def scatter(ops, g, needs, key, src_slices, src_shape):
    return (ops.fill_at(g, key, 0.0) if needs[0] else None,
            _to_source(ops, ops.getitem(g, key), src_slices, src_shape) if needs[1] else None)


@rule("scatter_value", "index_fill")
def scatter_value(ops, g, needs, key):
    return (ops.fill_at(g, key, 0.0),)


@rule("scatter_legacy_reduce")
def scatter_legacy_reduce(ops, g, needs):
    raise RuntimeError("scatter(reduce=...) has no derivative (as in PyTorch); use "
                       "scatter_reduce(), which has one")


@rule("scatter_add")
def scatter_add(ops, g, needs, key, src_slices, src_shape):
    return (g if needs[0] else None,
            _to_source(ops, ops.getitem(g, key), src_slices, src_shape) if needs[1] else None)


@rule("scatter_reduce")
def scatter_reduce(ops, g, needs, key, src_slices, src_shape, weights, *prod):
    """Each output is a reduction of its own value and the sources scattered to it; the
    forward pass fixed the partial derivatives as weights (1, 1/count, a tie's share, the
    product of the other factors), so the rule is the weighted scatter's transpose.

    The weights of sum, mean, amax and amin are locally constant; prod's depend on the
    inputs (`prod` keeps them: self, src, dim, index, the kept-self mask), so under
    create_graph they are recomputed with recorded ops, and double backward sees them."""
    w_self, w_src = weights
    if prod and hasattr(g, "_grad_fn"):
        w_self, w_src = _prod_weights(ops, key, src_slices, *prod)
    gx = ops.mul(g, w_self) if needs[0] else None
    gsrc = None
    if needs[1]:
        gsrc = _to_source(ops, ops.mul(ops.getitem(g, key), w_src), src_slices, src_shape)
    return gx, gsrc


def _prod_weights(ops, key, src_slices, x, src, dim, index, keep):
    """d out / d self = the product of the sources scattered there (0 where self was left
    out); d out / d src = the product of the other factors of its output: the total over
    the source, or, for the only zero of its output, the total with that zero taken as 1
    (several zeros at one output: the value is right, its derivative is not, as PyTorch
    refuses that case)."""
    import numpy as np

    part = ops.getitem(src, src_slices)
    dt = part._data.dtype
    keep = keep.astype(dt)
    zero = part._data == 0
    counts = np.zeros(x._data.shape, dt)
    np.add.at(counts, key, zero.astype(dt))
    single = (zero & (counts[key] == 1)).astype(dt)
    single_full = np.zeros(src._data.shape, dt)
    single_full[src_slices] = single
    masked_src = ops.add(ops.mul(src, 1.0 - single_full), single_full)
    sources = ops.scatter_prod(x, dim, index, src)
    own = ops.add(ops.mul(x, keep), 1.0 - keep)
    total = ops.getitem(ops.mul(own, sources), key)
    by_total = ops.div(total, ops.add(part, zero.astype(dt)))
    by_masked = ops.getitem(ops.mul(own, ops.scatter_prod(x, dim, index, masked_src)), key)
    w_src = ops.add(ops.mul(by_masked, single), ops.mul(by_total, 1.0 - single))
    return ops.mul(sources, keep), w_src


@rule("index_add")
def index_add(ops, g, needs, key, alpha):
    part = ops.getitem(g, key) if needs[1] else None
    return (g if needs[0] else None,
            None if part is None else (part if alpha == 1 else ops.mul(part, alpha)))


@rule("index_fill_tensor")
def index_fill_tensor(ops, g, needs, key):
    return (ops.fill_at(g, key, 0.0) if needs[0] else None,
            ops.sum(ops.getitem(g, key)) if needs[1] else None)


@rule("index_copy")
def index_copy(ops, g, needs, key):
    return (ops.fill_at(g, key, 0.0) if needs[0] else None,
            ops.getitem(g, key) if needs[1] else None)


@rule("index_put_accumulate")
def index_put_accumulate(ops, g, needs, key, value_shape):
    return (g if needs[0] else None,
            ops.sum_to(ops.getitem(g, key), value_shape) if needs[1] else None)


@rule("masked_select")
def masked_select(ops, g, needs, shape, mask, x_shape):
    """Scatter into the broadcast shape, then sum back to the input's own shape (the node's
    own fitting cannot tell when the selection happens to have the input's shape)."""
    return (ops.sum_to(ops.embed(g, shape, mask), x_shape),)


@rule("masked_scatter")
def masked_scatter(ops, g, needs, mask, src_shape, count):
    gx = ops.where(mask, 0.0, g) if needs[0] else None
    gsrc = None
    if needs[1]:
        numel = 1
        for n in src_shape:
            numel *= n
        flat = ops.embed(ops.getitem(g, mask), (numel,), (slice(0, count),))
        gsrc = ops.reshape(flat, tuple(src_shape))
    return gx, gsrc


@rule("take")
def take(ops, g, needs, flat_index, shape):
    numel = 1
    for n in shape:
        numel *= n
    return (ops.reshape(ops.embed_add(g, (numel,), flat_index), tuple(shape)),)


@rule("flip")
def flip(ops, g, needs, dims):
    for d in dims:
        g = ops.flip(g, d)
    return (g,)


@rule("roll")
def roll(ops, g, needs, shifts, dims):
    return (ops.roll(g, tuple(-s for s in shifts), dims),)


@rule("tril")
def tril(ops, g, needs, k):
    return (ops.tril(g, k),)


@rule("triu")
def triu(ops, g, needs, k):
    return (ops.triu(g, k),)


@rule("diagonal_at")
def diagonal_at(ops, g, needs, shape, offset, d1, d2):
    return (ops.diag_scatter(g, tuple(shape), offset, d1, d2),)


@rule("diag_scatter", "diag_embed_at")
def diag_scatter(ops, g, needs, offset, d1, d2):
    return (ops.diagonal_at(g, offset, d1, d2),)


@rule("trace")
def trace(ops, g, needs, shape):
    n = min(shape)
    return (ops.diag_scatter(ops.expand(g, (n,)), tuple(shape), 0, 0, 1),)


@rule("unfold")
def unfold(ops, g, needs, shape, d, size, step):
    return (ops.unfold_backward(g, tuple(shape), d, size, step),)


@rule("unfold_backward")
def unfold_backward(ops, g, needs, d, size, step):
    return (ops.unfold(g, d, size, step),)
