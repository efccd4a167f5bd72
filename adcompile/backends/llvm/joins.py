"""Lazy concatenations (LLVM backend): `np.concatenate` read part by part.

A one-dimensional `np.concatenate` of parts of its own dtype, every use of which reads it
element by element in one of the ways below (fusion.py decides), is not copied into a new
array: it is a JoinV, its parts in order, each covering its own index range (a *piece*).
- An elementwise op over a join is a join: the op over each piece, its other operands
  restricted to that piece's range (a second join splits the piece again), lazy like any
  fused op (fusion.py);
- a slice without a step of a join keeps the pieces it overlaps, clipped to it;
- a consumer runs its loop once per piece, over that piece's range: `x[...] = v`,
  `x[...] += v` (into the last axis of x), an elementwise op computed into a new array, a
  part of another concatenation.
So `y + h * np.concatenate((x[:1], x[1:] * y[:-1]))` is computed in one pass over y and x
(a loop of one element, then one over the rest) with no array for the concatenation. Each
element is computed by the same scalar ops as when the concatenation is copied, so the bits
are the same. A join of length 1 broadcast against a longer axis has one piece of length 1
and empty others: its ranges are stretched to the whole axis and read with stride 0.
"""

from adcompile.backends.llvm.values import MEM, ArrayV, JoinV, LazyV, Pack, i64


class JoinLowering:
    """Lazy concatenations in the kernel's lowering (mixed into lower._Lowering)."""

    def lazy_join(self, op, parts):
        """The JoinV of `op`, a lazy concatenation of `parts` (one-dimensional)."""
        pieces, start = [], i64(0)
        for part in parts:
            if isinstance(part, JoinV):
                pieces += [(self.b.add(start, s), n, v) for s, n, v in part.pieces]
            else:
                pieces.append((start, part.shape[0], part))
            start = self.b.add(start, part.shape[0])
        return JoinV(op.results[0].type.dtype, [start], pieces)

    def join_elementwise(self, op, values):
        """Elementwise `op` over `values`, some of them joins: a join when op is lazy, else
        a new array computed piece by piece."""
        t = op.results[0].type
        arrays = [_stand_in(v) for v in values if isinstance(v, (ArrayV, LazyV, JoinV))]
        shape, _ = self.broadcast(arrays, t.ndim, op.loc)
        join = JoinV(t.dtype, shape, self.spread(op, values, shape[0]))
        if op.results[0] in self.fusion.lazy:
            return join
        out = self.new_array(t.dtype, shape, op.loc)
        self.join_into(out, join, self.copy_into)
        return out

    def spread(self, op, values, n):
        """The pieces of elementwise `op` over `values` (one at least a join) broadcast to
        length n, each a lazy value over its range."""
        k = next(j for j, v in enumerate(values) if isinstance(v, JoinV))
        pieces = []
        for start, length, piece in self.stretched(values[k], n):
            local = [piece if j == k else self.restricted(v, start, length, n)
                     for j, v in enumerate(values)]
            if any(isinstance(v, JoinV) for v in local):
                pieces += [(self.b.add(start, s), m, v)
                           for s, m, v in self.spread(op, local, length)]
                continue
            strides = [self.strides_in(v, [length]) for v in local
                       if isinstance(v, (ArrayV, LazyV))]
            pieces.append((start, length, self.lazy_value(op, local, [length], strides)))
        return pieces

    def restricted(self, v, start, length, n):
        """Operand v of an op whose result has length n, restricted to [start, start +
        length) of the result (a number or a 0-d array as it is; a length-1 axis read with
        stride 0)."""
        if isinstance(v, JoinV):
            return self.join_slice(JoinV(v.dtype, [n], self.stretched(v, n)), start, length)
        if not isinstance(v, (ArrayV, LazyV)) or v.ndim == 0:
            return v
        return self.part_of(v, start, length, self.broadcast_stride(v.shape[0], v.strides[0]))

    def stretched(self, join, n):
        """The pieces of `join` read as an operand of length n: its own, or when it has
        length 1 (broadcast), every range times n, read with stride 0."""
        total = join.shape[0]
        if total is n:
            return join.pieces
        one = self.b.icmp_signed("==", total, i64(1))
        times = self.b.select(one, n, i64(1))
        pieces = []
        for start, length, v in join.pieces:
            length = self.b.mul(length, times)
            pieces.append((self.b.mul(start, times), length,
                           self.part_of(v, i64(0), length, self.zero_where(one, v.strides[0]))))
        return pieces

    def join_slice(self, join, start, length):
        """join[start:start + length]: each piece clipped to the window (maybe empty)."""
        b = self.b
        pieces = []
        for s, n, v in join.pieces:
            lo = self.clip(b.sub(s, start), i64(0), length)
            hi = self.clip(b.sub(b.add(s, n), start), i64(0), length)
            first = b.sub(b.add(lo, start), s)  # (any index when the piece is left empty)
            pieces.append((lo, b.sub(hi, lo), self.part_of(v, first, b.sub(hi, lo),
                                                           v.strides[0])))
        return JoinV(join.dtype, [length], pieces)

    def part_of(self, v, first, length, stride):
        """The one-dimensional array or lazy value v from index `first` on, `length` long,
        read with `stride` (v's own, or 0 where it is broadcast)."""
        origin = Pack([i64(0)] * v.width) if isinstance(v, LazyV) else i64(0)
        offset = self.plus_times(origin, first, stride)
        if isinstance(v, ArrayV):
            return v.view(self.b.gep(v.data, [offset], source_etype=MEM[v.dtype]), [length],
                          [stride])
        return self.lazy_at(v, offset, [length], [stride])

    def join_into(self, dst, join, store):
        """store(part of dst, piece) for each piece of `join`, into the range of dst's last
        axis it covers (the join broadcast into dst's shape: fit_into has checked it)."""
        axis = dst.ndim - 1
        for start, length, v in self.stretched(join, dst.shape[axis]):
            data = self.b.gep(dst.data, [self.b.mul(start, dst.strides[axis])],
                              source_etype=MEM[dst.dtype])
            store(dst.view(data, dst.shape[:axis] + [length], dst.strides), v)

    def join_store(self, op, dst, join, store, what):
        """`dst[...] = join` or `dst += join` (store(dst part, piece) does one piece), after
        numpy's check that the join fits; into a 0-d dst through a new array."""
        self.fit_into(_stand_in(join), dst.shape, op.loc, what)
        if dst.ndim > 0:
            self.join_into(dst, join, store)
            return
        copy = self.new_array(join.dtype, join.shape, op.loc)
        self.join_into(copy, join, self.copy_into)
        store(dst, copy)
        self.release(copy)


def _stand_in(v):
    """An array of v's shape, for broadcasting checks (a join has no strides of its own)."""
    if isinstance(v, JoinV):
        return ArrayV(v.dtype, None, None, v.shape, [i64(1)])
    return v
