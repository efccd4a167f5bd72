"""LLVM IR of runtime/rules/layer_norm_cpu.py's row statistics (`moments`), compiled with
the other kernels by runtime/simd_compiled.py: per row, each of the 8 lanes' Welford runs of
16 vectors and their binary cascade, the plain Welford tail and the lanes merged into it, in
scalar float32 with explicit `llvm.fma` where the numpy reference calls fma (the lanes are
independent, so running them one after another keeps every rounding). One call for all rows
instead of ~15 numpy calls per vector; the numpy code stays the reference and the fallback.
"""

MOMENTS = """
; runtime/rules/layer_norm_cpu.py's row statistics (moments), one row at a time, each lane's
; Welford runs and their cascade in scalar float32 (the lanes are independent, so the vector
; order is kept lane by lane)
define internal void @ln_merge(ptr %ca_p, ptr %m1a_p, ptr %m2a_p, i64 %cb, float %m1b,
                               float %m2b) {
entry:
  %ca = load i64, ptr %ca_p
  %empty = icmp eq i64 %ca, 0
  br i1 %empty, label %take, label %merge
take:
  store i64 %cb, ptr %ca_p
  store float %m1b, ptr %m1a_p
  store float %m2b, ptr %m2a_p
  ret void
merge:
  %m1a = load float, ptr %m1a_p
  %m2a = load float, ptr %m2a_p
  %n = add i64 %ca, %cb
  %cbf = sitofp i64 %cb to float
  %nf = sitofp i64 %n to float
  %c = fdiv float %cbf, %nf
  %delta = fsub float %m1b, %m1a
  %step = fmul float %c, %delta
  %m1 = fadd float %m1a, %step
  %caf = sitofp i64 %ca to float
  %dca = fmul float %delta, %caf
  %m2s = fadd float %m2a, %m2b
  %m2 = call float @llvm.fma.f32(float %dca, float %step, float %m2s)
  store i64 %n, ptr %ca_p
  store float %m1, ptr %m1a_p
  store float %m2, ptr %m2a_p
  ret void
}

; one run of `count` vectors from vector `first` of the lane at %p (stride 8 elements)
define internal void @ln_run(ptr %p, i64 %first, i64 %count, ptr %m1_p, ptr %m2_p) {
entry:
  store float 0.0, ptr %m1_p
  store float 0.0, ptr %m2_p
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%knext, %loop]
  %v = add i64 %first, %k
  %at = mul i64 %v, 8
  %px = getelementptr float, ptr %p, i64 %at
  %x = load float, ptr %px
  %m1 = load float, ptr %m1_p
  %m2 = load float, ptr %m2_p
  %k1 = add i64 %k, 1
  %k1f = sitofp i64 %k1 to float
  %r = fdiv float 1.0, %k1f
  %delta = fsub float %x, %m1
  %m1n = call float @llvm.fma.f32(float %r, float %delta, float %m1)
  %d2 = fsub float %x, %m1n
  %m2n = call float @llvm.fma.f32(float %delta, float %d2, float %m2)
  store float %m1n, ptr %m1_p
  store float %m2n, ptr %m2_p
  %knext = add i64 %k, 1
  %again = icmp slt i64 %knext, %count
  br i1 %again, label %loop, label %done
done:
  ret void
}

; the lane's (mean, m2) after the cascade of runs of 16 vectors over `vectors` vectors
define internal void @ln_lane(ptr %p, i64 %vectors, ptr %out_m1, ptr %out_m2) {
entry:
  %cs = alloca [64 x i64]
  %m1s = alloca [64 x float]
  %m2s = alloca [64 x float]
  %rm1 = alloca float
  %rm2 = alloca float
  %v15 = add i64 %vectors, 15
  %runs = sdiv i64 %v15, 16
  %rm = sub i64 %runs, 1
  %lz = call i64 @llvm.ctlz.i64(i64 %rm, i1 false)
  %bits = sub i64 64, %lz
  %small = icmp slt i64 %bits, 1
  %depth = select i1 %small, i64 1, i64 %bits
  br label %clear
clear:
  %ci = phi i64 [0, %entry], [%cinext, %clear]
  %cp = getelementptr i64, ptr %cs, i64 %ci
  store i64 0, ptr %cp
  %m1p0 = getelementptr float, ptr %m1s, i64 %ci
  store float 0.0, ptr %m1p0
  %m2p0 = getelementptr float, ptr %m2s, i64 %ci
  store float 0.0, ptr %m2p0
  %cinext = add i64 %ci, 1
  %cmore = icmp slt i64 %cinext, %depth
  br i1 %cmore, label %clear, label %runs_loop
runs_loop:
  %i = phi i64 [0, %clear], [%inext, %cascade_end]
  %first = mul i64 %i, 16
  %left = sub i64 %vectors, %first
  %few = icmp slt i64 %left, 16
  %count = select i1 %few, i64 %left, i64 16
  call void @ln_run(ptr %p, i64 %first, i64 %count, ptr %rm1, ptr %rm2)
  %a1 = load float, ptr %rm1
  %a2 = load float, ptr %rm2
  call void @ln_merge(ptr %cs, ptr %m1s, ptr %m2s, i64 %count, float %a1, float %a2)
  %mask0 = add i64 %i, 1
  br label %cascade
cascade:
  %level = phi i64 [1, %runs_loop], [%lnext, %cascade_step]
  %mask = phi i64 [%mask0, %runs_loop], [%mnext, %cascade_step]
  %deep = icmp slt i64 %level, %depth
  %bit = and i64 %mask, 1
  %even = icmp eq i64 %bit, 0
  %go = and i1 %deep, %even
  br i1 %go, label %cascade_step, label %cascade_end
cascade_step:
  %below = sub i64 %level, 1
  %bc = getelementptr i64, ptr %cs, i64 %below
  %b1 = getelementptr float, ptr %m1s, i64 %below
  %b2 = getelementptr float, ptr %m2s, i64 %below
  %lc = getelementptr i64, ptr %cs, i64 %level
  %l1 = getelementptr float, ptr %m1s, i64 %level
  %l2 = getelementptr float, ptr %m2s, i64 %level
  %bcv = load i64, ptr %bc
  %b1v = load float, ptr %b1
  %b2v = load float, ptr %b2
  call void @ln_merge(ptr %lc, ptr %l1, ptr %l2, i64 %bcv, float %b1v, float %b2v)
  store i64 0, ptr %bc
  store float 0.0, ptr %b1
  store float 0.0, ptr %b2
  %mnext = lshr i64 %mask, 1
  %lnext = add i64 %level, 1
  br label %cascade
cascade_end:
  %inext = add i64 %i, 1
  %rmore = icmp slt i64 %inext, %runs
  br i1 %rmore, label %runs_loop, label %fold_check
fold_check:
  %fold_any = icmp sgt i64 %depth, 1
  br i1 %fold_any, label %fold, label %finish
fold:
  %f = phi i64 [1, %fold_check], [%fnext, %fold]
  %fc = getelementptr i64, ptr %cs, i64 %f
  %f1 = getelementptr float, ptr %m1s, i64 %f
  %f2 = getelementptr float, ptr %m2s, i64 %f
  %fcv = load i64, ptr %fc
  %f1v = load float, ptr %f1
  %f2v = load float, ptr %f2
  call void @ln_merge(ptr %cs, ptr %m1s, ptr %m2s, i64 %fcv, float %f1v, float %f2v)
  %fnext = add i64 %f, 1
  %fmore = icmp slt i64 %fnext, %depth
  br i1 %fmore, label %fold, label %finish
finish:
  %r1 = load float, ptr %m1s
  %r2 = load float, ptr %m2s
  store float %r1, ptr %out_m1
  store float %r2, ptr %out_m2
  ret void
}

; mean[r], rstd[r] of each row of the C-ordered float32 (rows, n) array at %x
define void @ln_moments(ptr %x, ptr %mean, ptr %rstd, i64 %rows, i64 %n, float %eps) {
entry:
  %lm1 = alloca float
  %lm2 = alloca float
  %vectors = sdiv i64 %n, 8
  %full = mul i64 %vectors, 8
  %tailn = sub i64 %n, %full
  %nf = sitofp i64 %n to float
  %any = icmp sgt i64 %rows, 0
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [0, %entry], [%rnext, %row_end]
  %roff = mul i64 %r, %n
  %base = getelementptr float, ptr %x, i64 %roff
  %has_tail = icmp sgt i64 %tailn, 0
  br i1 %has_tail, label %tail, label %lanes_check
tail:
  %k = phi i64 [0, %row], [%knext, %tail]
  %t1 = phi float [0.0, %row], [%t1n, %tail]
  %t2 = phi float [0.0, %row], [%t2n, %tail]
  %col = add i64 %full, %k
  %px = getelementptr float, ptr %base, i64 %col
  %xv = load float, ptr %px
  %delta = fsub float %xv, %t1
  %k1 = add i64 %k, 1
  %k1f = sitofp i64 %k1 to float
  %q = fdiv float %delta, %k1f
  %t1n = fadd float %t1, %q
  %d2 = fsub float %xv, %t1n
  %pr = fmul float %delta, %d2
  %t2n = fadd float %t2, %pr
  %knext = add i64 %k, 1
  %kmore = icmp slt i64 %knext, %tailn
  br i1 %kmore, label %tail, label %lanes_check
lanes_check:
  %s1 = phi float [0.0, %row], [%t1n, %tail]
  %s2 = phi float [0.0, %row], [%t2n, %tail]
  %has_vec = icmp sgt i64 %vectors, 0
  br i1 %has_vec, label %lane, label %stats
lane:
  %j = phi i64 [0, %lanes_check], [%jnext, %lane]
  %cnt = phi i64 [%tailn, %lanes_check], [%total, %lane]
  %a1 = phi float [%s1, %lanes_check], [%a1n, %lane]
  %a2 = phi float [%s2, %lanes_check], [%a2n, %lane]
  %lp = getelementptr float, ptr %base, i64 %j
  call void @ln_lane(ptr %lp, i64 %vectors, ptr %lm1, ptr %lm2)
  %lane1 = load float, ptr %lm1
  %lane2 = load float, ptr %lm2
  %total = add i64 %cnt, %vectors
  %vf = sitofp i64 %vectors to float
  %tf = sitofp i64 %total to float
  %c = fdiv float %vf, %tf
  %ld = fsub float %lane1, %a1
  %dd = fmul float %ld, %ld
  %ddc = fmul float %dd, %c
  %cntf = sitofp i64 %cnt to float
  %inner = call float @llvm.fma.f32(float %ddc, float %cntf, float %lane2)
  %a2n = fadd float %a2, %inner
  %a1n = call float @llvm.fma.f32(float %c, float %ld, float %a1)
  %jnext = add i64 %j, 1
  %jmore = icmp slt i64 %jnext, 8
  br i1 %jmore, label %lane, label %stats
stats:
  %m1 = phi float [%s1, %lanes_check], [%a1n, %lane]
  %m2 = phi float [%s2, %lanes_check], [%a2n, %lane]
  %var = fdiv float %m2, %nf
  %ve = fadd float %var, %eps
  %sq = call float @llvm.sqrt.f32(float %ve)
  %rs = fdiv float 1.0, %sq
  %pm = getelementptr float, ptr %mean, i64 %r
  store float %m1, ptr %pm
  %ps = getelementptr float, ptr %rstd, i64 %r
  store float %rs, ptr %ps
  br label %row_end
row_end:
  %rnext = add i64 %r, 1
  %rmore = icmp slt i64 %rnext, %rows
  br i1 %rmore, label %row, label %done
done:
  ret void
}
"""
