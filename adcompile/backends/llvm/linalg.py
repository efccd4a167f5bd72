"""np.linalg.det / inv / solve on the LLVM backend, computed as numpy computes them.

The matrix is copied into a column-major work buffer of float64 (numpy linearises it the
same way, and computes in double precision whatever the input, float32 results rounded back),
factored by LU with partial pivoting (getrf) and, for inv and solve, the right-hand side (the
identity for inv) solved in place (getrs). numpy's gesv is getrf followed by getrs, so a
singular matrix raises numpy.linalg.LinAlgError("Singular matrix") exactly when getrf reports
a zero pivot, as numpy's does; det of a singular matrix is 0.0, and det is
sign * exp(sum(log|u_ii|)) as in numpy.

getrf/getrs are LAPACK's (scipy.linalg.cython_lapack's function pointers, bound when the code
is linked) when scipy is installed, else our own unblocked LU with LAPACK's pivot choice (the
first largest magnitude in the column) written here in LLVM IR; `lapack` in the lowering
says which, and is part of the cache key.
"""

import llvmlite.ir as ir

from adcompile.backends.llvm.values import I8, I32, I64, PTR, REG, ArrayV, i32, i64, zero

SINGULAR = "Singular matrix"
BLAS_MIN = 8192  # multiply-adds from which a matrix product calls BLAS
BAND_WORK = 1 << 21  # multiply-adds: a larger product is computed in bands of rows
BAND_ROWS = 256  # a band's rows are a multiple of this


class LinalgLowering:
    """det, inv and solve, mixed into the kernel's lowering (lower._Lowering)."""

    def square(self, a, loc):
        bad = self.b.icmp_signed("!=", a.shape[0], a.shape[1])
        self.fail_with(bad, "LinAlgError", "Last 2 dimensions of the array must be square",
                       loc)
        return a.shape[0]

    def column_major(self, a, dtype, loc):
        """A new buffer holding the n x k array a (a vector: n x 1) in column-major order."""
        n = a.shape[0]
        k = a.shape[1] if a.ndim == 2 else i64(1)
        work = self.new_array(dtype, [k, n], loc)  # C order of the transpose
        strides = [i64(1), n][:a.ndim]
        self.copy_into(work.view(work.data, a.shape, strides), a)
        return work

    def factor(self, work, n, dtype, loc):
        """getrf in place on the column-major n x n buffer; returns (pivots buffer, info)."""
        pivots = self.new_array("i64", [n], loc)  # room for n int32 (LAPACK's ints)
        if self.lapack:
            info = self.lapack_call(f"{_prefix(dtype)}getrf", [n, n, work.data, self.lead(n),
                                                                pivots.data], info=True)
        else:
            info = self.own_getrf(work.data, pivots.data, n, dtype)
        return pivots, info

    def solve_factored(self, work, pivots, rhs, n, nrhs, dtype):
        if self.lapack:
            trans = self.scratch(ir.IntType(8), "trans")
            self.b.store(ir.Constant(ir.IntType(8), ord("N")), trans)
            lead = self.lead(n)
            self.lapack_call(f"{_prefix(dtype)}getrs", [trans, n, nrhs, work.data, lead,
                                                         pivots.data, rhs.data, lead], info=True)
        else:
            self.own_getrs(work.data, pivots.data, rhs.data, n, nrhs, dtype)

    # -- the primitives ----------------------------------------------------------------------
    def det(self, op):
        a = self.v(op.operands[0])
        result = op.results[0].type.dtype
        dtype = "f64"  # numpy computes in double precision, float32 too, and casts back
        n = self.square(a, op.loc)
        work = self.column_major(a, dtype, op.loc)
        pivots, info = self.factor(work, n, dtype, op.loc)
        value = self.factored_det(work, pivots, n, dtype)
        self.release(work)
        self.release(pivots)
        return self.cast_to(self.b.select(self.b.icmp_signed("==", info, i64(0)), value,
                                          zero(REG[dtype])), dtype, result)

    def factored_det(self, work, pivots, n, dtype):
        """det from getrf's factors: sign * exp(sum(log|u_ii|)), as numpy's det."""
        t = REG[dtype]
        sign, logdet = self.scratch(t, "sign"), self.scratch(t, "logdet")
        b = self.b
        b.store(ir.Constant(t, 1.0), sign)
        b.store(zero(t), logdet)

        def term(i):
            u = b.load(self.at_raw(work.data, b.add(i, b.mul(i, n)), dtype), typ=t)
            pivot = b.load(self.at_raw(pivots.data, i, "i32"), typ=I32)
            swapped = b.icmp_signed("!=", b.sext(pivot, I64), b.add(i, i64(1)))
            negative = b.fcmp_ordered("<", u, zero(t))
            flip = b.xor(swapped, negative)
            old = b.load(sign, typ=t)
            b.store(b.select(flip, b.fneg(old), old), sign)
            magnitude = self.intrinsic("llvm.fabs", [u])
            b.store(b.fadd(b.load(logdet, typ=t), self.call_math("log", [magnitude], dtype)),
                    logdet)

        self.loop(n, term)
        return b.fmul(b.load(sign, typ=t), self.call_math("exp", [b.load(logdet, typ=t)],
                                                       dtype))

    def cofactor(self, op):
        """adj(A)^T, as array_impl.cofactor computes it: det(A) inv(A)^T when getrf finds
        no zero pivot, else from the factors (cofactor_singular)."""
        a = self.v(op.operands[0])
        result, dtype = op.results[0].type.dtype, "f64"  # (as det)
        n = self.square(a, op.loc)
        work = self.column_major(a, dtype, op.loc)
        pivots, info = self.factor(work, n, dtype, op.loc)
        out = self.new_array(result, [n, n], op.loc)
        rhs = self.new_array(dtype, [n, n], op.loc)
        self.zero_fill(rhs)
        with self.b.if_else(self.b.icmp_signed("==", info, i64(0))) as (regular, singular):
            with regular:
                self.cofactor_regular(work, pivots, rhs, n, out)
            with singular:
                self.cofactor_singular(work, pivots, rhs, n, out)
        for buffer in (work, pivots, rhs):
            self.release(buffer)
        return out

    def cofactor_regular(self, work, pivots, rhs, n, out):
        """det(A) * inv(A)^T, each rounded to the result's dtype first (numpy's two calls).
        inv's column-major buffer read in C order is inv^T."""
        det = self.cast_to(self.factored_det(work, pivots, n, "f64"), "f64", out.dtype)
        one = ir.Constant(REG["f64"], 1.0)
        self.loop(n, lambda i: self.write(rhs, self.b.mul(i, self.b.add(n, i64(1))), one,
                                          "f64"))
        self.solve_factored(work, pivots, rhs, n, n, "f64")

        def element(m):
            inverse = self.b.load(self.at_raw(rhs.data, m, "f64"), typ=REG["f64"])
            value = self.b.fmul(det, self.cast_to(inverse, "f64", out.dtype))
            self.write(out, m, value, out.dtype)

        self.loop(self.b.mul(n, n), element)

    def cofactor_singular(self, work, pivots, vectors, n, out):
        """array_impl.cofactor_singular on getrf's factors, step for step: 0 unless exactly
        one pivot u_kk is 0, else p det(P) (P w) x^T (x, w: the first two rows of
        `vectors`)."""
        b, t = self.b, REG["f64"]
        self.zero_fill(out)
        count, k = self.scratch(I64, "zeros"), self.scratch(I64, "k")
        b.store(i64(0), count)
        b.store(i64(0), k)

        def lu(row, col):
            return b.load(self.at_raw(work.data, b.add(row, b.mul(col, n)), "f64"), typ=t)

        def find(i):
            hit = b.fcmp_ordered("==", lu(i, i), zero(t))
            b.store(b.add(b.load(count, typ=I64), b.zext(hit, I64)), count)
            b.store(b.select(hit, i, b.load(k, typ=I64)), k)

        self.loop(n, find)
        with b.if_then(b.icmp_signed("==", b.load(count, typ=I64), i64(1))):
            kk = b.load(k, typ=I64)
            x = vectors.data
            w = b.gep(vectors.data, [n], source_etype=t)
            self.null_vectors(lu, x, w, kk, n)
            scale = self.adjugate_scale(lu, pivots, w, kk, n)

            def row(i):
                wi = b.fmul(scale, b.load(self.at_raw(w, i, "f64"), typ=t))
                self.loop(n, lambda j: self.write(out, b.add(b.mul(i, n), j), b.fmul(
                    wi, b.load(self.at_raw(x, j, "f64"), typ=t)), "f64"))

            self.loop(n, row)

    def null_vectors(self, lu, x, w, k, n):
        """U x = 0 (x_k = 1), y^T U = 0 (y_k = 1) and L^T w = y (in w), as array_impl."""
        b, t = self.b, REG["f64"]
        one = ir.Constant(t, 1.0)
        b.store(one, self.at_raw(x, k, "f64"))
        b.store(one, self.at_raw(w, k, "f64"))

        def dot(coefficient, vector, lo, hi):
            acc = self.scratch(t, "acc")
            b.store(zero(t), acc)
            self.loop(hi, lambda m: b.store(b.fadd(b.load(acc, typ=t), b.fmul(
                coefficient(m), b.load(self.at_raw(vector, m, "f64"), typ=t))), acc), start=lo)
            return b.load(acc, typ=t)

        def back(step):  # i = k - 1 down to 0
            i = b.sub(b.sub(k, i64(1)), step)
            total = dot(lambda m: lu(i, m), x, b.add(i, i64(1)), b.add(k, i64(1)))
            b.store(b.fdiv(b.fneg(total), lu(i, i)), self.at_raw(x, i, "f64"))

        self.loop(k, back)

        def forward(j):
            total = dot(lambda m: lu(m, j), w, k, j)
            b.store(b.fdiv(b.fneg(total), lu(j, j)), self.at_raw(w, j, "f64"))

        self.loop(n, forward, start=b.add(k, i64(1)))

        def unit_lower(step):  # i = n - 1 down to 0
            i = b.sub(b.sub(n, i64(1)), step)
            total = dot(lambda m: lu(m, i), w, b.add(i, i64(1)), n)
            slot = self.at_raw(w, i, "f64")
            b.store(b.fsub(b.load(slot, typ=t), total), slot)

        self.loop(n, unit_lower)

    def adjugate_scale(self, lu, pivots, w, k, n):
        """p det(P): the product of the pivots but u_kk, in order, negated per row swap; the
        swaps, last first, applied to w (P w)."""
        b, t = self.b, REG["f64"]
        scale = self.scratch(t, "scale")
        b.store(ir.Constant(t, 1.0), scale)

        def product(i):
            old = b.load(scale, typ=t)
            b.store(b.select(b.icmp_signed("==", i, k), old, b.fmul(old, lu(i, i))), scale)

        self.loop(n, product)

        def swap(step):
            i = b.sub(b.sub(n, i64(1)), step)
            p = b.sub(b.sext(b.load(self.at_raw(pivots.data, i, "i32"), typ=I32), I64), i64(1))
            with b.if_then(b.icmp_signed("!=", p, i)):
                b.store(b.fneg(b.load(scale, typ=t)), scale)
                self.swap(self.at_raw(w, i, "f64"), self.at_raw(w, p, "f64"), t)

        self.loop(n, swap)
        return b.load(scale, typ=t)

    def inv(self, op):
        a = self.v(op.operands[0])
        result, dtype = op.results[0].type.dtype, "f64"  # (as det)
        n = self.square(a, op.loc)
        work = self.column_major(a, dtype, op.loc)
        pivots, info = self.factor(work, n, dtype, op.loc)
        self.fail_with(self.b.icmp_signed("!=", info, i64(0)), "LinAlgError", SINGULAR, op.loc)
        rhs = self.new_array(dtype, [n, n], op.loc)
        self.zero_fill(rhs)
        one = ir.Constant(REG[dtype], 1.0)
        self.loop(n, lambda i: self.write(rhs, self.b.mul(i, self.b.add(n, i64(1))), one,
                                          dtype))
        self.solve_factored(work, pivots, rhs, n, n, dtype)
        out = self.new_array(result, [n, n], op.loc)
        self.copy_into(out, rhs.view(rhs.data, [n, n], [i64(1), n]))
        for buffer in (work, pivots, rhs):
            self.release(buffer)
        return out

    def solve(self, op):
        a, rhs_in = self.v(op.operands[0]), self.v(op.operands[1])
        result, dtype = op.results[0].type.dtype, "f64"  # (as det)
        n = self.square(a, op.loc)
        signature = "(m,m),(m)->(m)" if rhs_in.ndim == 1 else "(m,m),(m,n)->(m,n)"
        self.fail_with(self.b.icmp_signed("!=", rhs_in.shape[0], n), "ValueError",
                       "solve: Input operand 1 has a mismatch in its core dimension 0, with "
                       f"gufunc signature {signature} (size %lld is different from %lld)",
                       op.loc, rhs_in.shape[0], n)
        work = self.column_major(a, dtype, op.loc)
        pivots, info = self.factor(work, n, dtype, op.loc)
        self.fail_with(self.b.icmp_signed("!=", info, i64(0)), "LinAlgError", SINGULAR, op.loc)
        rhs = self.column_major(rhs_in, dtype, op.loc)
        nrhs = rhs_in.shape[1] if rhs_in.ndim == 2 else i64(1)
        self.solve_factored(work, pivots, rhs, n, nrhs, dtype)
        out = self.new_array(result, rhs_in.shape, op.loc)
        self.copy_into(out, rhs.view(rhs.data, rhs_in.shape, [i64(1), n][:rhs_in.ndim]))
        for buffer in (work, pivots, rhs):
            self.release(buffer)
        return out

    # -- LAPACK --------------------------------------------------------------------------------
    def lead(self, n):
        """A leading dimension LAPACK accepts: max(n, 1)."""
        return self.b.select(self.b.icmp_signed("<", n, i64(1)), i64(1), n)

    def lapack_call(self, name, args, info=False):
        """Call LAPACK's `name` (Fortran: every argument by reference); i64 arguments are
        passed as int32, pointers as they are. Returns INFO as an i64."""
        refs = []
        for value in args:
            if value.type == PTR:
                refs.append(value)
                continue
            slot = self.scratch(I32, "arg")
            self.b.store(self.b.trunc(value, I32), slot)
            refs.append(slot)
        status = None
        if info:
            status = self.scratch(I32, "info")
            self.b.store(i32(0), status)
            refs.append(status)
        fn = self.libc(f"adc_lapack_{name}", ir.VoidType(), [PTR] * len(refs))
        self.b.call(fn, refs)
        return self.b.sext(self.b.load(status, typ=I32), I64) if info else None

    # -- BLAS products ---------------------------------------------------------------------
    def blas_or_loops(self, a, c, out, offsets, sizes, strides, loops):
        """out = a @ c for one (m x k) @ (k x n) product at `offsets`, as numpy's matmul
        computes it: BLAS when numpy's matmul would call it and BLAS can address the operands
        (blas_product_fn, one function per dtype that every product of the module calls:
        the decision is 300-400 lines of IR, which each product used to repeat), else
        `loops()` (numpy's own loops add in order of k, as ours do). BLAS orders each sum its
        own way."""
        b = self.b
        o, oa, oc = offsets
        done = self.scratch(I8, "blas")
        status = b.call(self.blas_product_fn(out.dtype),
                        [self.ctx, a.data, c.data, out.data, o, oa, oc, *sizes, *strides, done])
        self.exit_unless_ok(status, "blas")
        with b.if_then(b.icmp_unsigned("==", b.load(done, typ=I8), ir.Constant(I8, 0))):
            loops()

    def blas_product_fn(self, dtype):
        """`i32 adc.blas_product.<dtype>(ctx, a*, c*, out*, o, oa, oc, m, k, n, so_m, so_n,
        sa_m, sa_k, sc_k, sc_n, done*)`: the product by BLAS when it is worth a call and
        possible (blas_dispatch), *done set to 1; else *done = 0 and nothing written.
        Shared by the module's products of that dtype, kept out of line."""
        name = f"adc.blas_product.{dtype}"
        fn = self.module.globals.get(name)
        if fn is not None:
            return fn
        fnty = ir.FunctionType(I32, [PTR] * 4 + [I64] * 12 + [PTR])
        fn = ir.Function(self.module, fnty, name=name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("optnone")  # (control: one call a product; see pairwise.planning)
        sub = self.sub_lowering(fn)
        a, c, out = (ArrayV(dtype, None, p, [], []) for p in fn.args[1:4])
        args = fn.args[4:-1]
        sub.blas_dispatch(a, c, out, args[0:3], args[3:6], args[6:12], fn.args[-1])
        sub.finish()  # (it reads no array element: no alias scopes to share)
        return fn

    def blas_dispatch(self, a, c, out, offsets, sizes, strides, done):
        """numpy's choice for one product once it is worth a call (BLAS_MIN multiply-adds):
        BLAS gemm when no length is 1, gemv for a row times a matrix or a matrix times a
        column, provided BLAS can address the operands (one unit stride, the other at least
        a row's length; vectors: a positive stride). *done says whether BLAS computed it."""
        b = self.b
        o, oa, oc = offsets
        m, k, n = sizes
        so_m, so_n, sa_m, sa_k, sc_k, sc_n = strides
        big = b.icmp_signed(">=", b.mul(b.mul(m, n), k), i64(BLAS_MIN))
        for d in (m, n, k):
            big = b.and_(big, b.icmp_signed("<", d, i64(2 ** 31 - 1)))
        one_m, one_n = b.icmp_signed("==", m, i64(1)), b.icmp_signed("==", n, i64(1))
        some_k = b.icmp_signed(">", k, i64(1))
        # C^T = C'^T A^T in column-major terms: gemm(op_c, op_a, n, m, k, c, a, out^T)
        a_trans, a_ld, a_ok = self.blas_layout(m, k, sa_m, sa_k)
        c_trans, c_ld, c_ok = self.blas_layout(k, n, sc_k, sc_n)
        o_trans, o_ld, o_ok = self.blas_layout(m, n, so_m, so_n)
        gemm = b.and_(b.and_(a_ok, c_ok), b.and_(o_ok, b.not_(o_trans)))
        gemm = b.and_(gemm, b.and_(some_k, b.not_(b.or_(one_m, one_n))))
        for s in (a_ld, c_ld, o_ld):
            gemm = b.and_(gemm, b.icmp_signed("<", s, i64(2 ** 31 - 1)))
        # a row times a matrix: out_row = C^T a_row; a matrix times a column: out = A c
        ct_trans, ct_ld, ct_ok = self.blas_layout(n, k, sc_n, sc_k)
        row_gemv = b.and_(b.and_(one_m, b.not_(one_n)), b.and_(ct_ok, some_k))
        row_gemv = b.and_(row_gemv, self.blas_vector(sa_k, so_n, ct_ld))
        col_gemv = b.and_(b.and_(one_n, b.not_(one_m)), b.and_(a_ok, some_k))
        col_gemv = b.and_(col_gemv, self.blas_vector(sc_k, so_m, a_ld))
        dtype = out.dtype
        p = _prefix(dtype)
        one, nothing = ir.Constant(REG[dtype], 1.0), zero(REG[dtype])
        blas = b.and_(big, b.or_(gemm, b.or_(row_gemv, col_gemv)))
        b.store(b.zext(blas, I8), done)
        with b.if_then(blas):
            with b.if_else(gemm) as (matrices, vector):
                with matrices:
                    def gemm(lo, rows):  # rows [lo, lo + rows) of out = a @ c
                        at = self.b  # a band's own builder when it runs as a piece
                        self.blas_call(f"{p}gemm", [
                            _char(at, c_trans), _char(at, a_trans), n, rows, k, one,
                            self.element(c, oc), c_ld,
                            self.element(a, at.add(oa, at.mul(lo, sa_m))), a_ld, nothing,
                            self.element(out, at.add(o, at.mul(lo, so_m))), o_ld])

                    self.gemm_bands(m, b.mul(n, k), gemm)
                with vector:
                    with b.if_else(row_gemv) as (row, col):
                        with row:
                            self.gemv(ct_trans, n, k, c, oc, ct_ld, a, oa, sa_k, out, o, so_n)
                        with col:
                            self.gemv(a_trans, m, k, a, oa, a_ld, c, oc, sc_k, out, o, so_m)

    def gemm_bands(self, m, nk, gemm):
        """gemm(lo, rows) over the m rows of a product with n*k multiply-adds per row: one
        call, or bands of BAND_ROWS-multiple rows fixed by the shape alone (at least
        BAND_WORK multiply-adds each) that the pool may run on its threads. BLAS runs on one
        thread (blaslib), and a band's bits do not depend on who computes it, so the
        result is the same for every thread count and for parallel=False."""
        b = self.b
        rows = b.sdiv(b.add(i64(BAND_WORK - 1), nk), b.select(
            b.icmp_signed(">", nk, i64(0)), nk, i64(1)))
        rows = b.mul(b.sdiv(b.add(rows, i64(BAND_ROWS - 1)), i64(BAND_ROWS)), i64(BAND_ROWS))
        bands = b.sdiv(b.add(m, b.sub(rows, i64(1))), rows)

        def run(first, last):
            def band(j):
                at = self.b  # the piece's builder when it runs on the pool
                lo, hi = at.mul(j, rows), at.add(at.mul(j, rows), rows)
                gemm(lo, at.sub(at.select(at.icmp_signed("<", hi, m), hi, m), lo))

            self.loop(last, band, start=first, kind="scalar")

        with b.if_else(b.icmp_signed(">", bands, i64(1))) as (split, whole):
            with split:
                if self.parallel_cap is None:
                    run(i64(0), bands)
                else:
                    self.parallel_range(bands, b.mul(m, nk), run)
            with whole:
                gemm(i64(0), m)

    def gemv(self, transposed, rows, cols, matrix, offset, ld, x, x_offset, incx, y, y_offset,
             incy):
        """y = M x for the rows x cols matrix M (in BLAS's terms `transposed`: stored as a
        column-major cols x rows matrix, which gemv is told to transpose back)."""
        b = self.b
        trans = b.select(transposed, ir.Constant(ir.IntType(8), ord("N")),
                         ir.Constant(ir.IntType(8), ord("T")))
        dtype = y.dtype
        self.blas_call(f"{_prefix(dtype)}gemv", [
            trans, b.select(transposed, rows, cols), b.select(transposed, cols, rows),
            ir.Constant(REG[dtype], 1.0), self.element(matrix, offset), ld,
            self.element(x, x_offset), incx, zero(REG[dtype]), self.element(y, y_offset),
            incy])

    def blas_vector(self, incx, incy, ld):
        b = self.b
        ok = b.and_(b.icmp_signed(">=", incx, i64(1)), b.icmp_signed(">=", incy, i64(1)))
        for s in (incx, incy, ld):
            ok = b.and_(ok, b.icmp_signed("<", s, i64(2 ** 31 - 1)))
        return ok

    def blas_layout(self, rows, cols, r, c):
        """How BLAS addresses a rows x cols matrix with element strides (r, c): (whether it
        is transposed as column-major, its leading dimension, whether it can)."""
        b = self.b
        one_row = b.icmp_signed("==", rows, i64(1))
        one_col = b.icmp_signed("==", cols, i64(1))
        wide = self.lead(cols)
        tall = self.lead(rows)
        row_ld = b.select(one_row, wide, r)
        row_major = b.and_(b.icmp_signed("==", c, i64(1)), b.or_(
            one_row, b.icmp_signed(">=", r, wide)))
        col_ld = b.select(one_col, tall, c)
        col_major = b.and_(b.icmp_signed("==", r, i64(1)), b.or_(
            one_col, b.icmp_signed(">=", c, tall)))
        # row-major is column-major of the transpose: BLAS is told "not transposed" for it
        transposed = b.not_(row_major)
        return transposed, b.select(row_major, row_ld, col_ld), b.or_(row_major, col_major)

    def blas_call(self, name, args):
        """Call BLAS's `name` (Fortran: every argument by reference); i64 arguments are
        passed as int32, pointers as they are, other registers through a stack slot."""
        refs = []
        for value in args:
            if value.type == PTR:
                refs.append(value)
                continue
            if value.type == I64:
                slot = self.scratch(I32, "arg")
                self.b.store(self.b.trunc(value, I32), slot)
            else:
                slot = self.scratch(value.type, "arg")
                self.b.store(value, slot)
            refs.append(slot)
        fn = self.libc(f"adc_blas_{name}", ir.VoidType(), [PTR] * len(refs))
        self.b.call(fn, refs)

    # -- our own LU (without scipy) ------------------------------------------------------------
    def at_raw(self, base, index, dtype):
        etype = I32 if dtype == "i32" else REG[dtype]
        return self.b.gep(base, [index], source_etype=etype)

    def own_getrf(self, w, pivots, n, dtype):
        """LAPACK's dgetf2 on the column-major n x n matrix at w: for each column, the first
        row of largest magnitude is the pivot (1-based in `pivots`), rows are swapped, the
        column below is divided by the pivot and the trailing matrix updated. INFO is the
        (1-based) column of the first zero pivot, or 0."""
        b, t = self.b, REG[dtype]
        info = self.scratch(I64, "info")
        b.store(i64(0), info)

        def ref(row, col):
            return self.at_raw(w, b.add(row, b.mul(col, n)), dtype)

        def column(j):
            best, where = self.scratch(t, "best"), self.scratch(I64, "pivot")
            b.store(ir.Constant(t, -1.0), best)
            b.store(j, where)

            def look(i):
                magnitude = self.intrinsic("llvm.fabs", [b.load(ref(i, j), typ=t)])
                larger = b.fcmp_ordered(">", magnitude, b.load(best, typ=t))
                b.store(b.select(larger, magnitude, b.load(best, typ=t)), best)
                b.store(b.select(larger, i, b.load(where, typ=I64)), where)

            self.loop(n, look, start=j)
            p = b.load(where, typ=I64)
            b.store(b.trunc(b.add(p, i64(1)), I32), self.at_raw(pivots, j, "i32"))
            pivot = b.load(ref(p, j), typ=t)
            nonzero = b.fcmp_unordered("!=", pivot, zero(t))
            with b.if_else(nonzero) as (use, singular):
                with use:
                    with b.if_then(b.icmp_signed("!=", p, j)):
                        self.loop(n, lambda c: self.swap(ref(j, c), ref(p, c), t))
                    self.loop(n, lambda i: b.store(b.fdiv(b.load(ref(i, j), typ=t), pivot),
                                                   ref(i, j)), start=b.add(j, i64(1)))
                with singular:
                    first = b.icmp_signed("==", b.load(info, typ=I64), i64(0))
                    b.store(b.select(first, b.add(j, i64(1)), b.load(info, typ=I64)), info)

            def update(c):
                factor = b.load(ref(j, c), typ=t)
                self.loop(n, lambda i: b.store(b.fsub(b.load(ref(i, c), typ=t), b.fmul(
                    b.load(ref(i, j), typ=t), factor)), ref(i, c)), start=b.add(j, i64(1)))

            self.loop(n, update, start=b.add(j, i64(1)))

        self.loop(n, column)
        return b.load(info, typ=I64)

    def swap(self, p, q, t):
        x, y = self.b.load(p, typ=t), self.b.load(q, typ=t)
        self.b.store(y, p)
        self.b.store(x, q)

    def own_getrs(self, w, pivots, rhs, n, nrhs, dtype):
        """LAPACK's dgetrs ('N'): the row swaps applied to the right-hand sides, then L (unit
        diagonal) and U solved column by column as dtrsm does."""
        b, t = self.b, REG[dtype]

        def lu(row, col):
            return b.load(self.at_raw(w, b.add(row, b.mul(col, n)), dtype), typ=t)

        def rhs_column(c):
            def x(row):
                return self.at_raw(rhs, b.add(row, b.mul(c, n)), dtype)

            def swap_row(j):
                p = b.sub(b.sext(b.load(self.at_raw(pivots, j, "i32"), typ=I32), I64), i64(1))
                with b.if_then(b.icmp_signed("!=", p, j)):
                    self.swap(x(j), x(p), t)

            self.loop(n, swap_row)

            def forward(k):
                xk = b.load(x(k), typ=t)
                self.loop(n, lambda i: b.store(b.fsub(b.load(x(i), typ=t),
                                                      b.fmul(xk, lu(i, k))), x(i)),
                          start=b.add(k, i64(1)))

            self.loop(n, forward)

            def backward(step):
                k = b.sub(b.sub(n, i64(1)), step)
                xk = b.fdiv(b.load(x(k), typ=t), lu(k, k))
                b.store(xk, x(k))
                self.loop(k, lambda i: b.store(b.fsub(b.load(x(i), typ=t),
                                                      b.fmul(xk, lu(i, k))), x(i)))

            self.loop(n, backward)

        self.loop(nrhs, rhs_column)


def _prefix(dtype):
    return "s" if dtype == "f32" else "d"


def _char(b, transposed):
    """BLAS's transpose flag for an operand `transposed` in column-major terms."""
    return b.select(transposed, ir.Constant(ir.IntType(8), ord("T")),
                    ir.Constant(ir.IntType(8), ord("N")))


LINALG_RULES = {"det": "det", "inv": "inv", "cofactor": "cofactor", "solve": "solve"}
