"""The order in which PyTorch's CPU kernels leave tied elements: an emulation of the C++
standard library's unstable sort (GNU libstdc++'s introsort: median-of-three quicksort down to
runs of 16, a heapsort when the recursion gets too deep, then insertion sort), written from
its documented algorithm.

sort(stable=False) and mode use that sort on (value, index) pairs, comparing values only, so
which of several equal values comes first is decided by this algorithm; nanmedian of an
all-nan row picks with the library's nth_element (introselect). Everything else about those
ops is computed with numpy. Only rows that have ties need it (`needs_emulation`). The
emulation runs in Python: O(n log n) per emulated row.
"""

import math

_RUN = 16  # insertion sort finishes runs up to this length


def order(keys, less):
    """The permutation the library's sort leaves on pairs (keys[i], i) under `less` (a
    comparison of keys): result[p] is the original index at position p."""
    items = [(k, i) for i, k in enumerate(keys)]
    _sort_range(items, 0, len(items), less)
    return [i for _, i in items]


def _sort_range(a, first, last, less):
    n = last - first
    if n > 1:
        _introsort(a, first, last, 2 * int(math.log2(n)), less)
        _final_insertion_sort(a, first, last, less)


def topk(keys, k, largest, sort):
    """The original indices PyTorch's CPU topk kernel returns: partial_sort when k is small
    against the row (k * 64 <= n), else nth_element, then a sort of the first k - 1."""
    less = descending if largest else ascending
    items = [(key, i) for i, key in enumerate(keys)]
    if k == 0:
        return []
    if k * 64 <= len(items):  # partial_sort: heap_select, then sort_heap
        _heap_select(items, 0, k, len(items), less)
        _sort_heap(items, 0, k, less)
        return [i for _, i in items[:k]]
    _nth_element(items, k - 1, less)
    if sort:
        _sort_range(items, 0, k - 1, less)
    return [i for _, i in items[:k]]


def _introsort(a, first, last, depth, less):
    while last - first > _RUN:
        if depth == 0:
            _heapsort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort(a, cut, last, depth, less)
        last = cut


def _partition_pivot(a, first, last, less):
    mid = first + (last - first) // 2
    _median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _median_to_first(a, result, x, y, z, less):
    lt = lambda i, j: less(a[i][0], a[j][0])  # noqa: E731
    if lt(x, y):
        pick = y if lt(y, z) else (z if lt(x, z) else x)
    elif lt(x, z):
        pick = x
    else:
        pick = z if lt(y, z) else y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(a, first, last, pivot, less):
    while True:
        while less(a[first][0], a[pivot][0]):
            first += 1
        last -= 1
        while less(a[pivot][0], a[last][0]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(a, first, last, less):
    if last - first > _RUN:
        _insertion_sort(a, first, first + _RUN, less)
        for i in range(first + _RUN, last):
            _linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(a, first, last, less):
    for i in range(first + 1, last):
        if less(a[i][0], a[first][0]):
            a[first:i + 1] = [a[i]] + a[first:i]
        else:
            _linear_insert(a, i, less)


def _linear_insert(a, last, less):
    value = a[last]
    while less(value[0], a[last - 1][0]):
        a[last] = a[last - 1]
        last -= 1
    a[last] = value


def nth(keys, position, less):
    """The original index the library's nth_element (introselect) leaves at `position`."""
    items = [(k, i) for i, k in enumerate(keys)]
    _nth_element(items, position, less)
    return items[position][1]


def _nth_element(a, position, less):
    first, last = 0, len(a)
    depth = 2 * int(math.log2(last)) if last else 0
    while last - first > 3:
        if depth == 0:
            _heap_select(a, first, position + 1, last, less)
            a[first], a[position] = a[position], a[first]
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        if cut <= position:
            first = cut
        else:
            last = cut
    _insertion_sort(a, first, last, less)


def _heap_select(a, first, middle, last, less):
    n = middle - first
    _make_heap(a, first, middle, less)
    for i in range(middle, last):
        if less(a[i][0], a[first][0]):
            value = a[i]
            a[i] = a[first]
            _adjust_heap(a, first, 0, n, value, less)


# -- the heapsort fallback (make_heap, then pop_heap until sorted) ------------------------------

def _heapsort(a, first, last, less):
    _make_heap(a, first, last, less)
    _sort_heap(a, first, last, less)


def _make_heap(a, first, last, less):
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(a, first, parent, n, a[first + parent], less)


def _sort_heap(a, first, last, less):
    n = last - first
    while n > 1:
        n -= 1
        value = a[first + n]
        a[first + n] = a[first]
        _adjust_heap(a, first, 0, n, value, less)


def _adjust_heap(a, first, hole, n, value, less):
    top = hole
    child = hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child][0], a[first + child - 1][0]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    _push_heap(a, first, hole, top, value, less)


def _push_heap(a, first, hole, top, value, less):
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent][0], value[0]):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value


# -- comparisons PyTorch's kernels use ----------------------------------------------------------

def ascending(x, y):
    """nan last, else smaller first."""
    return (x == x and y != y) or x < y


def descending(x, y):
    """nan first, else larger first."""
    return (x != x and y == y) or x > y


def plain_less(x, y):
    return x < y


def never(x, y):
    """The comparison of two nans in PyTorch's median kernels: neither comes first."""
    return False


def has_ties(row):
    """Whether a 1-D numpy row holds equal values (nans count as equal)."""
    if row.size < 2:
        return False
    s = row[~(row != row)] if row.dtype.kind in "fc" else row
    nans = row.size - s.size
    return nans > 1 or len(set(s.tolist())) < s.size
