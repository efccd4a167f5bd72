"""Tiled runs (LLVM backend): consecutive loops over one-dimensional arrays run tile by tile.

After fusion (fusion.py, joins.py) an RK4 step is still one loop per stage: each stage reads
the one before it one element shifted (`x[1:] * k1[:-1]`), which no lazy value can express,
so every stage is written to memory and read back, and at 10^5 elements (800 KB an array)
each loop streams its operands from the last-level cache. A *run* is a stretch of a block
whose ops are such loops (the stores `x[...] = v` / `x[...] += v` and store groups, and the
one-dimensional elementwise ops and concatenations that fusion computes into a new array,
each a *unit*) and ops that make no loop (constants, shapes, views, scalar arithmetic, lazy
values, tape pushes, empty allocations). `plan_runs` finds them; `TileLowering.tiled_run`
lowers one as:
- the ops that make no loop, in order, and each computed unit's array allocated, its value
  kept as the lazy value the unit stores into it;
- at run time, when the longest unit reaches MIN_TILED elements, a table of every array
  access of the units (its byte range, its address at index 0, which unit, whether it
  writes) goes to `adc.tiles.order`, which says whether the units may run tile by tile,
  ascending or descending: they may when every two accesses of different units that
  overlap, one of them a write, reach each element at indices p (the earlier unit) and q
  (the later) with p <= q for every element (ascending) or p >= q (descending), so that the
  earlier unit has done its part of that element in the same tile or an earlier one. The
  forward stages read the stage before one element back (ascending); reverse mode's
  adjoint stages one element on (descending). A unit that stores a number (no array read)
  and that no earlier unit touches runs before the tiles (the `t_bar[-1:] = 0` after each
  adjoint stage). Two accesses of one unit that overlap must reach each element at one
  index; anything else (a stride other than 1, a broadcast read, another item size) that
  meets a write keeps the run untiled;
- then the tiles (TILE elements of each unit's index range in turn, each unit's usual
  lowering on the tile's part of its destination and operands), or, where they may not,
  one tile as long as the longest unit: every unit whole, in order, as if it were not in a
  run (one copy of the code for both; each store's check that its value fits is made where
  it stands, before any tile cuts both to fit).
All of it, the table included, goes into a noinline function of its own, `adc.run.N`
(parallel.outlined_range), called where the run stands: LLVM then compiles it apart from the
kernel (jit.py's parts), which a long chain of runs would otherwise make the largest
function of its module.
A run needs two units at least, one of which reads what an earlier one wrote.
Every element is computed by the same scalar ops from the same operands as untiled, so the
bits are the same; only the order in which elements are visited changes. Destinations must
be arrays the kernel made (an error part-way leaves nothing the caller sees half written).
`TILES = False` (or ADCOMPILE_LLVM_TILES=0) turns runs off.
"""

import itertools
import os

import llvmlite.ir as ir

from adcompile.backends.llvm.joins import _stand_in
from adcompile.backends.llvm.values import I1, I64, ITEMSIZE, PTR, ArrayV, JoinV, LazyV, i64
from adcompile.ir import types as T
from adcompile.ir.nodes import Op, Value
from adcompile.ir.prims import ELEMENTWISE

TILES = os.environ.get("ADCOMPILE_LLVM_TILES", "1") != "0"
TILE = 1024  # elements of each unit's range per tile (about 6-12 arrays of them stay in L1-L2)
MIN_TILED = 32768  # a run whose units are all shorter runs them whole (in the cache anyway)
_WRITE, _BAD, _FIRST = 1, 2, 4  # access flags: writes; not unit-stride; unit runs first
_SIZE = 8  # the flags' bits from here on: the item size
_RECORD = ir.ArrayType(I64, 5)  # lowest byte, end byte, address at index 0, unit, flags
_PURE = frozenset(["const", "shape", "size", "slice", "transpose", "tape_push"])


# -- planning (IR) ---------------------------------------------------------------------------
def plan_runs(block, params, fusion):
    """fusion.runs[first op] = the ops of each run of `block` with two units at least."""
    run, units, last, found = [], 0, 0, set()
    for op in block.ops + [None]:
        kind = None if op is None else _kind(op, params, fusion)
        if kind is None:
            if units >= 2 and _connected([u for u in run if u in found], fusion):
                fusion.runs[run[0]] = run[:last]
                fusion.in_run.update(run[1:last])
                fusion.units.update(u for u in run[:last] if u in found)
            run, units, last, found = [], 0, 0, set()
            continue
        if kind == "unit" or run:
            run.append(op)
        if kind == "unit":
            units += 1
            last = len(run)
            found.add(op)


def _connected(units, fusion):
    """Whether some unit reads what an earlier one wrote (else tiles gain little: two
    unrelated loops share no array but their operands)."""
    from adcompile.backends.llvm.fusion import _root
    written = set()
    for op in units:
        members = fusion.groups[op][0] if op in fusion.groups else [op]
        values = [m.operands[1] for m in members] if op.prim in ("assign", "iadd") else \
            op.operands
        leaves = {leaf for v in values
                  for leaf in (fusion.leaves[v] if v in fusion.lazy else {v})}
        leaves.update(m.operands[0] for m in members if m.prim == "iadd")
        if any(_root(leaf) in written for leaf in leaves):
            return True
        if op.prim in ("assign", "iadd"):
            written.update(_root(m.operands[0]) for m in members)
        else:
            written.add(op.results[0])
    return False


def _kind(op, params, fusion):
    """"unit", "other" (makes no loop) or None (a run cannot hold op)."""
    from adcompile.backends.llvm.fusion import _fusible
    if op in fusion.later:
        return "other"
    if op.prim in ("assign", "iadd"):
        members = fusion.groups[op][0] if op in fusion.groups else [op]
        return "unit" if all(_tileable_store(m, params, fusion) for m in members) else None
    if len(op.results) == 1 and op.results[0] in fusion.lazy:
        return None if op.results[0] in fusion.deferred else "other"
    if len(op.results) == 1 and not op.regions and _fusible(op) and _one_axis(op):
        return "unit"
    if op.prim in _PURE or (op.prim == "alloc" and op.attrs.get("fill") is None):
        return "other"
    if op.prim in ELEMENTWISE and all(isinstance(r.type, T.Scalar) for r in op.results):
        return "other"
    return None


def _one_axis(op):
    """A float result of one axis, from operands of at most one."""
    t = op.results[0].type
    return isinstance(t, T.Array) and t.ndim == 1 and t.is_float and all(
        not isinstance(x.type, T.Array) or x.type.ndim <= 1 for x in op.operands)


def _tileable_store(op, params, fusion):
    from adcompile.backends.llvm.fusion import _made_here, _root
    dst, value = op.operands[0].type, op.operands[1].type
    if not (isinstance(dst, T.Array) and dst.ndim == 1 and dst.is_float):
        return False
    if isinstance(value, T.Array) and value.ndim > 1 or op.operands[1] in fusion.deferred:
        return False
    root = _root(op.operands[0])
    return _made_here(root) and root not in params


def _by_destination(stores):
    """The stores cut where the destination changes: the additions into one view that
    passes/adjacent_additions.py brought together stay one unit, one loop (each element
    loaded and stored once)."""
    return [list(run) for _, run in itertools.groupby(stores, lambda op: id(op.operands[0]))]


# -- lowering ----------------------------------------------------------------------------------
class _Unit:
    """One loop of a run: `stores` (a store or a group's stores, `pairs` as _plan_groups
    made them) or `made` (an op computed into the new array `out` from its lazy `form`)."""

    def __init__(self, stores=(), pairs=None, made=None, out=None, form=None, skip=None):
        self.stores, self.pairs = list(stores), pairs
        self.made, self.out, self.form = made, out, form
        self.skip = skip  # a made array no one reads on this trip (fusion.spare): i1

    @property
    def first(self):
        """A store of a number, run before the tiles when no earlier unit touches it."""
        return len(self.stores) == 1 and self.stores[0].prim == "assign" and \
            not isinstance(self.stores[0].operands[1].type, T.Array)


class TileLowering:
    """Tiled runs in the kernel's lowering (mixed into lower._Lowering)."""

    def tiled_run(self, ops):
        units = []
        for op in ops:
            if op in self.fusion.later:
                continue
            if op in self.fusion.units and op.prim in ("assign", "iadd"):
                group = self.fusion.groups.get(op)
                if group:  # a unit per destination: a group's shifted destinations overlap,
                    self.lower_hoisted(op)  # which would keep the run from being tiled
                for stores in _by_destination(group[0] if group else [op]):
                    pairs = [(p, q) for q in range(len(stores)) for p in range(q)]
                    units.append(_Unit(stores, pairs))
                    self.check_fits(units[-1])
            elif op in self.fusion.units:
                units.append(self.made_unit(op))
            else:
                result = self.lower_alone(op)
                if len(op.results) == 1:
                    self.values[op.results[0]] = result
        self.run_tiles(units)
        for unit in units:
            if unit.made is not None:
                self.values[unit.made.results[0]] = unit.out

    def made_unit(self, op):
        """op's lazy value (its rule's, as if fusion had made it lazy) and a new array for
        it."""
        r = op.results[0]
        self.fusion.lazy.add(r)
        try:
            form = self.lower_alone(op)
        finally:
            self.fusion.lazy.discard(r)
        out = self.new_array(r.type.dtype, list(form.shape), op.loc)
        self.values[r] = out
        return _Unit(made=op, out=out, form=form, skip=self.last_trip.get(r))

    def unit_whole(self, unit, lo=None):
        """The unit over its whole range, or over the tile from `lo` (TILE long); nothing
        where it is skipped (the array's shape is all this trip needs)."""
        if unit.made is not None:
            if unit.skip is None:
                self.made_store(unit, lo)
                return
            with self.b.if_then(self.b.not_(unit.skip)):
                self.made_store(unit, lo)
            return
        saved = {x: self.v(x) for op in unit.stores for x in op.operands[:2]}
        if lo is not None:
            for op in unit.stores:
                self.restrict_store(op, lo, saved)
        if len(unit.stores) > 1:
            self.store_group(unit.stores, unit.pairs)
        else:
            self.lower_alone(unit.stores[0])
        self.values.update(saved)

    def made_store(self, unit, lo):
        op, out, form = unit.made, unit.out, unit.form
        dst = Value(op.results[0].type, "tile")
        if lo is not None:
            n = self.tile_length(lo, out.shape[0])
            out, form = self.part_of(out, lo, n, out.strides[0]), \
                self.restricted(form, lo, n, form.shape[0])
        store = Op("assign", [dst, op.results[0]], loc=op.loc)
        self.values[dst] = out
        self.values[op.results[0]] = form
        self.lower_alone(store)
        self.values[op.results[0]] = unit.out
        del self.values[dst]

    def restrict_store(self, op, lo, saved):
        """op's destination and value (`saved`: the whole ones) cut to the tile from lo."""
        dst_ir, value_ir = op.operands
        dst, value = saved[dst_ir], saved[value_ir]
        n = self.tile_length(lo, dst.shape[0])
        if isinstance(value, (ArrayV, LazyV, JoinV)) and value.ndim == 1:
            self.values[value_ir] = self.restricted(value, lo, n, dst.shape[0])
        self.values[dst_ir] = self.part_of(dst, lo, n, dst.strides[0])

    def check_fits(self, unit):
        """numpy's error for a value that does not fit its destination, raised where the
        store stands (each store then runs on a tile's part of both, which always fit)."""
        for op in unit.stores:
            value = self.v(op.operands[1])
            if isinstance(value, (ArrayV, LazyV, JoinV)):
                what = "assignment" if op.prim == "assign" else "augmented assignment"
                self.fit_into(_stand_in(value), self.v(op.operands[0]).shape, op.loc, what)

    def tile_length(self, lo, n):
        return self.clip(self.b.sub(n, lo), i64(0), self.tile_size)

    def run_tiles(self, units):
        """The units tile by tile in the order tile_order finds (1 ascending, 2
        descending), or, where it is 0, in one tile as long as the longest unit: each whole,
        in turn, as without runs (one copy of the code for both). All of it, the table of
        accesses too, in a function of its own (parallel.outlined_range): a kernel of many
        runs (ode's RK4 steps and their adjoints) then stays small enough for jit.py's parts
        to share out."""
        self.outlined_range(i64(1), lambda lo, hi: self.tiles(units), "run")

    def tiles(self, units):
        b = self.b
        order = self.tile_order(units)
        tiled = b.icmp_signed("!=", order, i64(0))
        for unit in units:
            if unit.first:
                with b.if_then(tiled):
                    self.unit_whole(unit)
        longest = self.longest(units)
        size = b.select(tiled, i64(TILE), b.select(b.icmp_signed(">", longest, i64(0)),
                                                    longest, i64(1)))
        count = b.sdiv(b.add(longest, b.sub(size, i64(1))), size)
        descending = b.icmp_signed("==", order, i64(2))

        def tile(k):
            t = b.select(descending, b.sub(b.sub(count, i64(1)), k), k)
            lo = b.mul(t, size)
            self.tile_size = size
            for unit in units:
                if not unit.first:
                    self.unit_whole(unit, lo)
                    continue
                with b.if_then(b.not_(tiled)):
                    self.unit_whole(unit)

        self.loop(count, tile, kind="control")

    def longest(self, units):
        b = self.b
        most = i64(0)
        for unit in units:
            lengths = [unit.out.shape[0]] if unit.made is not None else \
                [self.v(op.operands[0]).shape[0] for op in unit.stores]
            for n in lengths:  # (a group's stores may differ in length)
                most = b.select(b.icmp_signed(">", n, most), n, most)
        return most

    # -- may the units run tile by tile, and which way ----------------------------------------
    def tile_order(self, units):
        """0 (run each unit whole), 1 (tiles ascending) or 2 (descending), at run time."""
        b = self.b
        slot = self.scratch(I64, "tile.order")
        b.store(i64(0), slot)
        with b.if_then(b.icmp_signed(">=", self.longest(units), i64(MIN_TILED))):
            records = [r for k, unit in enumerate(units) for r in self.accesses(unit, k)]
            kind = ir.ArrayType(_RECORD, len(records))
            table = self.scratch(kind, "tile.accesses")
            for j, record in enumerate(records):
                for m, field in enumerate(record):
                    b.store(field, b.gep(table, [i64(0), i64(j), i64(m)], source_etype=kind))
            b.store(b.call(_order_function(self.module), [table, i64(len(records))]), slot)
        return b.load(slot, typ=I64)

    def accesses(self, unit, k):
        """The records of unit k's accesses (see _RECORD)."""
        first = _FIRST if unit.first else 0
        if unit.made is not None:
            out = unit.out
            return [self.record(out, i64(0), out.shape[0], out.strides[0], k, _WRITE)] + \
                self.reads(unit.form, out.shape[0], k)
        records = []
        for j, op in enumerate(unit.stores):
            dst = self.v(op.operands[0])
            n = dst.shape[0]
            records.append(self.record(dst, i64(0), n, dst.strides[0], (k, j),
                                       _WRITE | first))
            value = self.v(op.operands[1])
            if isinstance(value, (ArrayV, LazyV, JoinV)):
                records += self.reads(value, n, (k, j))
        return records

    def reads(self, value, n, k):
        """Records of what reading `value` (broadcast to length n) at each index reads."""
        if isinstance(value, JoinV):
            return [r for start, length, piece in self.stretched(value, n)
                    for r in self.leaf_reads(piece, start, length, k)]
        if value.ndim == 0:
            return self.leaf_reads(value, i64(0), i64(1), k, broadcast=True)
        return self.leaf_reads(value, i64(0), n, k)

    def leaf_reads(self, v, start, n, k, broadcast=False):
        b = self.b
        same = ir.Constant(I1, 0) if broadcast else b.icmp_signed("==", v.shape[0], n)
        if isinstance(v, ArrayV):
            pairs = [(v, v.strides[0] if v.ndim else i64(0))]
        else:
            strides = v.strides[0].items if v.ndim else [i64(0)] * v.width
            pairs = list(zip(v.node.leaves(), strides))
        # a value of length 1 read at every index reads its element with stride 0
        return [self.record(leaf, start, n, b.select(same, s, i64(0)), k, 0)
                for leaf, s in pairs]

    def record(self, a, start, n, stride, unit, flags):
        """The record of reading (or writing) a.data[(p - start) * stride] for p in
        [start, start + n)."""
        b = self.b
        size = ITEMSIZE[a.dtype]
        base = b.ptrtoint(a.data, I64)
        last = b.mul(b.mul(b.sub(n, i64(1)), stride), i64(size))
        low = b.add(base, b.select(b.icmp_signed("<", last, i64(0)), last, i64(0)))
        high = b.add(b.add(base, b.select(b.icmp_signed(">", last, i64(0)), last, i64(0))),
                     i64(size))
        empty = b.icmp_signed("<=", n, i64(0))
        high = b.select(empty, low, high)
        unit_stride = b.icmp_signed("==", stride, i64(1))
        flags = b.or_(i64(flags | size << _SIZE), b.select(unit_stride, i64(0), i64(_BAD)))
        at_zero = b.sub(base, b.mul(start, i64(size)))
        number = unit[0] * 64 + unit[1] if isinstance(unit, tuple) else unit * 64
        return [low, high, at_zero, i64(number), flags]


def _order_function(module):
    """`i64 adc.tiles.order(records*, count)`: 0, 1 or 2 as TileLowering.tile_order says."""
    name = "adc.tiles.order"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I64, [PTR, I64]), name=name)
    fn.linkage = "internal"
    table, count = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    ok = b.alloca(I64)
    b.store(i64(3), ok)

    def field(j, m):
        return b.load(b.gep(table, [j, i64(m)], source_etype=_RECORD), typ=I64)

    def loop(lo, hi, body):
        head, inside, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), inside, done)
        b.position_at_end(inside)
        body(i)
        i.add_incoming(b.add(i, i64(1)), b.block)
        b.branch(head)
        b.position_at_end(done)

    def pair(i, j):
        lo_i, hi_i, at_i, unit_i, flags_i = (field(i, m) for m in range(5))
        lo_j, hi_j, at_j, unit_j, flags_j = (field(j, m) for m in range(5))
        either = b.or_(flags_i, flags_j)
        meet = b.and_(b.icmp_unsigned("<", lo_i, hi_j), b.icmp_unsigned("<", lo_j, hi_i))
        meet = b.and_(meet, b.and_(b.icmp_unsigned("<", lo_i, hi_i),
                                   b.icmp_unsigned("<", lo_j, hi_j)))
        meet = b.and_(meet, b.icmp_unsigned("!=", b.and_(either, i64(_WRITE)), i64(0)))
        unit_stride = b.and_(b.icmp_unsigned("==", b.and_(either, i64(_BAD)), i64(0)),
                             b.icmp_unsigned("==", b.lshr(flags_i, i64(_SIZE)),
                                             b.lshr(flags_j, i64(_SIZE))))
        same_unit = b.icmp_unsigned("==", unit_i, unit_j)
        same = b.and_(unit_stride, b.icmp_unsigned("==", at_i, at_j))
        first_i = b.icmp_unsigned("!=", b.and_(flags_i, i64(_FIRST)), i64(0))
        first_j = b.icmp_unsigned("!=", b.and_(flags_j, i64(_FIRST)), i64(0))
        up = b.and_(unit_stride, b.icmp_unsigned("<=", at_j, at_i))
        down = b.and_(unit_stride, b.icmp_unsigned("<=", at_i, at_j))
        up = b.select(first_j, ir.Constant(I1, 0), b.select(first_i, ir.Constant(I1, 1), up))
        down = b.select(first_j, ir.Constant(I1, 0),
                        b.select(first_i, ir.Constant(I1, 1), down))
        up, down = b.select(same_unit, same, up), b.select(same_unit, same, down)
        allowed = b.or_(b.zext(up, I64), b.shl(b.zext(down, I64), i64(1)))
        allowed = b.select(meet, allowed, i64(3))
        b.store(b.and_(b.load(ok, typ=I64), allowed), ok)

    loop(i64(0), count, lambda i: loop(b.add(i, i64(1)), count, lambda j: pair(i, j)))
    result = b.load(ok, typ=I64)
    b.ret(b.select(b.icmp_unsigned("==", result, i64(3)), i64(1), result))
    return fn
