"""Row sums read from their expression, lazy copies, and tapes nobody reads (issue 13: GradBench
kmeans and the fusion of reductions with their producers).

- `np.sum(e, axis=-1)` of an expression `e` whose temporary would be C-ordered is one pairwise
  sum per row read from e's leaves (no temporary, no run-time plan of numpy's calls), and of
  a C-contiguous array one per row in place: numpy's bits, checked against numpy on the
  layouts where the shortcut applies and on those where it does not (the planned path).
- `x.copy()` (forward mode copies a broadcast tangent) stays lazy when only read element by
  element and nothing writes its operand's memory before those reads.
- `x_bar[...] += sum_to(g, x.shape)` of reverse mode, g an expression: when g has x's shape
  at run time, the store reads g in place (no array summed into, no zero fill); otherwise g is
  summed into a new array first, as before.
- `sum_to(g, x.shape)` of an expression g read by something else than a store (a product:
  `x @ w - v`, whose adjoint `x.T @ sum_to(y_bar, (x @ w).shape)`): when g has the shape at run
  time, g is written into a new array once (no zero fill, no read of what is written), the
  array the Python backend returns; otherwise summed as before.
- A tape whose pops nothing live reads is dropped with its pushes (dce): forward mode over the
  gradient of kmeans' cost tapes no tangents.

Each program is run fused (the default), unfused (lower.FUSE off), on the Python backend and on
the interpreter; values, gradients and Newton directions must agree bit for bit, but for the
unfused program on operands that are not C-ordered: its temporaries are C-ordered where
numpy's follow their operands (docs/architecture.md), so a sum of one adds in another order.
"""

import numpy as np
import pytest

import adcompile as ac
from adcompile import api
from adcompile.backends.llvm import arrays, lower

# -- the functions -------------------------------------------------------------------------------


def squared_distances(c, p):
    return np.sum((c - p) ** 2, axis=1)


def row_means(c, p):
    return np.mean(c * p + 1.0, axis=-1), np.sum(c, axis=-1)


def batched_rows(x, y):
    return np.sum(x * y - y, axis=-1), np.sum(x, axis=2)


def copies(x, y):
    a = x.copy()
    b = (x * 0.0 + y).copy()
    c = x[:, 1:].copy()
    x[0] = 5.0
    return a * 2.0 + b, np.sum(a - b, axis=-1), a, np.sum(c * y[1:], axis=1)


def broadcast_loss(a, b):
    return np.sum((a * b + a) ** 2 / (1.0 + a * a) * b)


def loop_of_broadcasts(a, b):
    total = 0.0
    for i in range(3):
        total += np.sum((a - b * i) ** 2 * a)
    return total


def kmeans_cost(points, centroids):
    cost = 0.0
    for i in range(points.shape[0]):
        cost += np.min(np.sum((centroids - points[i]) ** 2, axis=1))
    return cost


# -- layouts and data ------------------------------------------------------------------------------


def _wide(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)


LAYOUTS = {"C": lambda a: a.copy(), "F": np.asfortranarray,
           "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
           "reversed": lambda a: a[::-1].copy()[::-1], "rows reversed": lambda a: a.copy()[::-1]}
SHAPES = ((3, 5), (10, 8), (6, 37), (5, 128), (40, 129), (9, 5000), (0, 4), (4, 0), (1, 7))


def _check_bits(ours, expected, what, rounding=False):
    if isinstance(expected, tuple):
        for k, (o, e) in enumerate(zip(ours, expected, strict=True)):
            _check_bits(o, e, f"{what}[{k}]", rounding)
        return
    o, e = np.asarray(ours), np.asarray(expected)
    assert o.dtype == e.dtype and o.shape == e.shape, f"{what}: {o.dtype}{o.shape}"
    if rounding:
        np.testing.assert_allclose(o, e, rtol=1e-13, err_msg=what)
        return
    assert np.array_equal(o, e, equal_nan=True), f"{what}: {ours!r} != {expected!r}"
    assert np.array_equal(np.signbit(o), np.signbit(e)), f"{what}: the sign of a zero"


def _variants(fn):
    """fn for the LLVM backend fused (default) and unfused (its programs are compiled on
    their first call, which _call makes with fusion off), on the Python backend and on the
    interpreter."""
    return {"fused": ac.adcompile(fn), "unfused": ac.adcompile(fn),
            "python": ac.adcompile(fn, backend="python"),
            "interp": ac.adcompile(fn, backend="interp")}


def _call(name, f, *args):
    """f(*args), with fusion off for the "unfused" variant."""
    if name != "unfused":
        return f(*args)
    saved = lower.FUSE
    lower.FUSE = False
    try:
        return f(*args)
    finally:
        lower.FUSE = saved


# -- row sums --------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("fn", [squared_distances, row_means])
def test_row_sums_are_numpys(fn, shape, layout):
    c = LAYOUTS[layout](_wide(*shape))
    p = LAYOUTS[layout](_wide(1, shape[1], seed=1))
    expected = fn(c, p)
    for name, f in _variants(fn).items():
        _check_bits(_call(name, f, c, p), expected, f"{fn.__name__} {name}",
                    rounding=name == "unfused" and layout != "C")


@pytest.mark.parametrize("layout", ["C", "F", "stepped", "swapped"])
def test_row_sums_of_three_axes(layout):
    make = {"C": lambda a: a, "F": np.asfortranarray, "stepped": lambda a: a[:, ::2],
            "swapped": lambda a: np.swapaxes(a, 0, 2)}[layout]
    x = make(_wide(6, 14, 40) if layout == "stepped" else _wide(6, 7, 40))
    y = _wide(*x.shape[1:], seed=1)
    expected = batched_rows(x, y)
    for name, f in _variants(batched_rows).items():
        _check_bits(_call(name, f, x, y), expected, f"batched_rows {name}",
                    rounding=name == "unfused" and layout != "C")


def test_row_sums_have_teeth():
    """Another order of additions than numpy's gives other bits on this data."""
    x = _wide(40, 129)
    rows = np.sum(x, axis=-1)
    assert not np.array_equal(rows, np.array([sum(r.tolist()) for r in x]))


# -- sums of short vectors (pairwise.added: the one block in the caller's code) ----------------------


def vector_sums(v, w):
    return np.sum(v), np.sum(v * w - 1.0), np.sum(v[::2]), np.sum((v > w).astype(np.float64))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 37, 128, 129, 300])
def test_short_vector_sums_are_numpys(n):
    v, w = _wide(n), _wide(n, seed=1)
    expected = vector_sums(v, w)
    for name, f in _variants(vector_sums).items():
        _check_bits(_call(name, f, v, w), expected, f"vector_sums {name}")


# -- the axis order of an expression's temporary (pairwise.c_ordered) -------------------------------
#
# axis_order takes C order without calling order_fn when no operand's strides ask for a move;
# the sums below depend on that order, on operands whose strides tie, are negative, are zero
# (broadcast) or belong to axes of length 1, and on pairs of operands that disagree.

def two_operand_sums(x, y):
    e = x * y - y
    return np.sum(e, axis=-1), np.sum(e, axis=0), np.sum(e)


ORDER_CASES = {
    "C, C": lambda a, b: (a, b),
    "F, C": lambda a, b: (np.asfortranarray(a), b),
    "C, F": lambda a, b: (a, np.asfortranarray(b)),
    "F, F": lambda a, b: (np.asfortranarray(a), np.asfortranarray(b)),
    "rows broadcast": lambda a, b: (a, b[:1]),
    "column broadcast": lambda a, b: (np.asfortranarray(a), b[:, :1]),
    "negative rows": lambda a, b: (a[::-1], b),
    "negative both": lambda a, b: (a[::-1, ::-1], np.asfortranarray(b)[::-1]),
    "swapped view": lambda a, b: (np.ascontiguousarray(a.T).T, b),
    "equal strides": lambda a, b: (np.lib.stride_tricks.as_strided(
        np.repeat(a.ravel(), 1), a.shape, (8, 8)), b),
    "one row": lambda a, b: (a[:1], np.asfortranarray(b)[:1]),
    "one column": lambda a, b: (np.asfortranarray(a)[:, :1], b[:, :1]),
}


@pytest.mark.parametrize("case", ORDER_CASES)
def test_sums_follow_the_temporarys_axis_order(case):
    x, y = ORDER_CASES[case](_wide(12, 9), _wide(12, 9, seed=1))
    expected = two_operand_sums(x, y)
    for name, f in _variants(two_operand_sums).items():
        _check_bits(_call(name, f, x, y), expected, f"{case} {name}",
                    rounding=name == "unfused")


# -- lazy copies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copies_are_taken_before_writes(layout):
    x0, y = _wide(4, 6), _wide(6, seed=1)
    expected_x = LAYOUTS[layout](x0)
    expected = copies(expected_x, y)
    for name, f in _variants(copies).items():
        x = LAYOUTS[layout](x0)
        _check_bits(_call(name, f, x, y), expected, f"copies {name}",
                    rounding=name == "unfused" and layout != "C")
        _check_bits(x, expected_x, f"copies {name}: x afterwards")


# -- sum_to with its store -------------------------------------------------------------------------

BROADCASTS = [((3, 4), (3, 4)), ((3, 1), (3, 4)), ((3, 4), (4,)), ((1, 4), (3, 1)), ((1,), (5,)),
              ((2, 3, 4), (3, 1))]


@pytest.mark.parametrize("fn", [broadcast_loss, loop_of_broadcasts])
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_gradients_summed_in_their_stores(fn, shapes):
    a = np.asarray(_wide(*shapes[0]) * 1e-8 + 0.5)
    b = np.asarray(_wide(*shapes[1], seed=1) * 1e-8 - 0.25)
    results = {}
    for name, f in _variants(fn).items():
        results[name] = _call(name, ac.value_and_grad(f, argnums=(0, 1)), a, b)
    # LLVM's sum_to adds in C order, numpy's in its own (docs/architecture.md): the LLVM
    # programs agree bit for bit, the others to rounding
    for name, got in results.items():
        want = results["unfused" if name == "fused" else "python"]
        _check_bits(got[0], want[0], f"{fn.__name__} value {name}")
        for k in range(2):
            _check_bits(got[1][k], want[1][k], f"{fn.__name__} grad {k} {name}",
                        rounding=name == "unfused")
    step = 1e-6
    bumped = a + step
    slope = (fn(bumped, b) - fn(a - step, b)) / (2 * step)
    np.testing.assert_allclose(np.sum(results["fused"][1][0]), slope, rtol=1e-5, atol=1e-8)


# -- sum_to read by a product -----------------------------------------------------------------------


def shifted_squares(w, v, x):
    y = x @ w - v
    return np.sum(y * y * 0.5)


# (x, w, v) shapes: y has (x @ w)'s shape (a copy), or more columns (summed); products of our
# own loops and of BLAS (at least 8192 multiply-adds)
SHIFTS = [((7, 3), (3, 3), (3,)), ((7, 3), (3, 3), (7, 3)), ((7, 3), (3, 3), (1,)),
          ((7, 3), (3, 1), (4,)), ((300, 8), (8, 8), (8,)), ((300, 8), (8, 1), (5,))]


def _signed(*shape, seed):
    """Wide values with zeros of both signs among them."""
    a = _wide(*shape, seed=seed)
    a.flat[::3] = 0.0
    a.flat[1::5] = -0.0
    return a


@pytest.mark.parametrize("shapes", SHIFTS, ids=str)
def test_sums_to_a_shape_read_by_a_product(shapes, monkeypatch, tmp_path):
    monkeypatch.setenv("ADCOMPILE_CACHE_DIR", str(tmp_path))  # lowered here, not loaded
    copies = []
    lazy_sum_to = arrays.ArrayLowering.lazy_sum_to
    monkeypatch.setattr(arrays.ArrayLowering, "lazy_sum_to",
                        lambda self, *a: copies.append(1) or lazy_sum_to(self, *a))
    x, w, v = (_signed(*shape, seed=k) for k, shape in enumerate(shapes))
    results = {name: _call(name, ac.value_and_grad(f, argnums=(0, 1)), w, v, x)
               for name, f in _variants(shifted_squares).items()}
    assert copies, "the fused gradient no longer sums an expression read by a product"
    # the fused and unfused LLVM programs agree bit for bit (a copy of g is g computed alone);
    # numpy's matmul and sums add in their own orders
    _check_bits(results["fused"], results["unfused"], "fused against unfused")
    _check_bits(results["interp"], results["python"], "interp against python")
    _check_bits(results["fused"], results["python"], "fused against python", rounding=True)
    step = 1e-7 * np.abs(w).max()
    bumped = [w + step, w - step]
    slope = (shifted_squares(bumped[0], v, x) - shifted_squares(bumped[1], v, x)) / (2 * step)
    np.testing.assert_allclose(np.sum(results["fused"][1][0]), slope, rtol=1e-4)


# -- kmeans: value, gradient, Newton direction -----------------------------------------------------


def _kmeans_input(n=50, k=6, d=5, seed=3):
    points = np.random.default_rng(seed).random((n, d))
    return points, points[-k:].copy()


def _direction(f, points, centroids):
    gradient = ac.grad(f, argnums=1)
    j, h = ac.jvp(gradient, (points, centroids), (None, np.ones_like(centroids)))
    return j, h


def test_kmeans_value_gradient_and_direction_agree_on_every_backend():
    points, centroids = _kmeans_input()
    results = {}
    for name, f in _variants(kmeans_cost).items():
        value = _call(name, f, points, centroids)
        grad = _call(name, ac.grad(f, argnums=1), points, centroids)
        j, h = _call(name, _direction, f, points, centroids)
        results[name] = (value, grad, j, h)
    assert results["python"][0] == kmeans_cost(points, centroids)
    for name, got in results.items():
        for k, what in enumerate(("value", "gradient", "J", "H")):
            _check_bits(got[k], results["python"][k], f"kmeans {what} {name}")
    _, grad, j, h = results["fused"]
    np.testing.assert_array_equal(j, grad)
    # the cost is piecewise quadratic: H is 2 x (points nearest each centroid)
    nearest = np.argmin(((points[:, None, :] - centroids[None]) ** 2).sum(2), axis=1)
    counts = np.bincount(nearest, minlength=len(centroids))
    np.testing.assert_array_equal(h, 2.0 * counts[:, None] * np.ones_like(centroids))


def test_forward_over_gradient_tapes_no_tangents():
    """The adjoint of np.min reads the taped distances only through ==: their tangents,
    pushed by forward mode, are never popped by live code, so the tapes go."""
    points, centroids = _kmeans_input()
    gradient = ac.grad(ac.adcompile(kmeans_cost, backend="python"), argnums=1)
    source = api.jvp_source(gradient, (points, centroids), (None, np.ones_like(centroids)))
    assert source.count("_Tape(") == 2, source
    assert "v_tape_dot" not in source
