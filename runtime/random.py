"""PyTorch-compatible CPU random number generation, in numpy.

After `manual_seed(s)` the factories here return exactly the numbers that PyTorch 2.13 on CPU
returns after `torch.manual_seed(s)`, and they consume the generator's stream in the same
amounts, so interleaved calls stay in step too.

How PyTorch's CPU generator works (and so how this module works):

* The engine is a 32-bit Mersenne Twister (mt19937) seeded with the standard `init_genrand`
  recurrence from the low 32 bits of the seed.  numpy's `MT19937` bit generator, given that key,
  produces the identical raw stream (`random_raw`), so it serves as the engine.  A "64-bit draw"
  is two consecutive 32-bit draws, the first one forming the high half.

* Uniform floats: the low `digits` bits of a draw (24 bits of a 32-bit draw for float32 and
  float16, 53 bits of a 64-bit draw for float64) scaled by 2**-digits, then mapped to [a, b) by
  one fused multiply-add, `x * (b - a) + a`, in float (float32/float16) or double (float64).
  float16 results are computed in float32 and rounded once at the end.  A result that rounds
  onto b itself (in the tensor's dtype) is replaced by a, keeping the interval half-open.

* Normals come from the Box-Muller transform, by one of four routes depending on the tensor:
  - "scalar" route (fewer than 16 elements, or a non-contiguous tensor, any dtype): each pair of
    64-bit uniforms (u1, u2) gives r = sqrt(-2 log1p(-u2)), theta = 2 pi u1; the element gets
    r cos(theta) and r sin(theta) is cached in the generator and handed out by the next scalar
    draw (the cache survives between calls and is cleared by seeding).  All in double, with
    libm's functions, then `fma(z, std, mean)` and a cast to the tensor's dtype.
  - float32 with at least 16 contiguous elements: all n uniforms are drawn first; every full
    block of 16 is transformed in place (u1 = 1 - block[0:8], u2 = block[8:16]) with 8-wide
    single-precision polynomial log/sincos approximations (Cephes-style, as vectorised by the
    AVX "mathfun" code), whose multiply-adds the compiler fused into FMAs; if n is not a multiple
    of 16, 16 fresh uniforms are drawn and the last 16 elements are recomputed from them.
  - float64 with at least 16 contiguous elements: same block structure, in double, with libm's
    log/cos/sin (no caching).
  - float16 with at least 16 contiguous elements: float32 arithmetic as for float32, but only
    whole blocks are drawn: ceil(n/16) blocks of fresh uniforms, the last block's 16 results
    landing on the last 16 elements.
  The float32 route above is the one PyTorch uses on x86 machines with AVX2 (it is also what an
  AVX-512 machine uses: the normal kernel is never dispatched to the AVX-512 build).

* Integers (`randint`): range = high - low as an unsigned 64-bit number; each element is
  `(draw % range) + low`, where the draw is a 64-bit draw when range >= 2**28 (whatever the
  dtype), otherwise a 32-bit draw; the sum wraps to int64 and is cast to the dtype.  For float
  dtypes, bounds the dtype cannot represent are first nudged inward the way PyTorch does.

* `randperm(n)`: Fisher-Yates with one 32-bit draw per position: for i in 0..n-2 swap element i
  with element i + draw % (n - i).  (For n >= 2**32 / 20 PyTorch switches to an "inside-out"
  shuffle with 64-bit draws, reproduced here too.)

Elements are produced in memory order (PyTorch's TensorIterator walks an output in the order of
its strides); for non-contiguous arrays the values are generated for that order and scattered.

`get_rng_state()` returns the same 5056-byte layout as `torch.get_rng_state()` (as a uint8 numpy
array) so states can even be exchanged with PyTorch.
"""

import math
import os

import numpy as np

__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "rand",
    "randn",
    "randint",
    "randperm",
    "uniform_",
    "normal_",
]

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_MT_N = 624
_STATE_BYTES = 5056
_U64 = np.uint64
_MASK24 = _U64((1 << 24) - 1)
_MASK53 = _U64((1 << 53) - 1)
_F32 = np.float32
_F64 = np.float64
_WIDE_RANGE = 1 << 28  # randint ranges from here on take 64-bit draws
_FLOAT_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _normalize_seed(value):
    """PyTorch's rules: int(seed), accepted from -2**63 to 2**64 - 1, negatives wrap mod 2**64."""
    value = int(value)
    if value < -(1 << 63) or value >= (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return value & 0xFFFFFFFFFFFFFFFF


def _init_genrand(seed32):
    """The standard mt19937 key initialisation from a 32-bit seed (as PyTorch seeds it)."""
    key = [seed32]
    prev = seed32
    for i in range(1, _MT_N):
        prev = (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
        key.append(prev)
    return np.array(key, np.uint32)


class Generator:
    """A CPU random generator with PyTorch's stream semantics (mt19937 plus a normal cache)."""

    def __init__(self, device="cpu"):
        if str(device) != "cpu":
            raise RuntimeError(f"Generator: only the cpu device is supported, got {device!r}")
        self.device = "cpu"
        self._engine = np.random.MT19937()
        self._next_double_normal = None
        self._next_float_normal = None  # never produced on CPU; kept for state round-trips
        self._seed_engine(_DEFAULT_SEED)

    # ------------------------------------------------------------------ seeding and state
    def _seed_engine(self, seed_value):
        self._initial_seed = seed_value
        self._engine.state = {
            "bit_generator": "MT19937",
            "state": {"key": _init_genrand(seed_value & 0xFFFFFFFF), "pos": _MT_N},
        }
        self._fresh = True  # mt19937 just initialised: torch reports next=0, left=1
        self._next_double_normal = None
        self._next_float_normal = None

    def manual_seed(self, seed):
        self._seed_engine(_normalize_seed(seed))
        return self

    def seed(self):
        """Re-seed from a non-deterministic source; returns the new seed."""
        value = int.from_bytes(os.urandom(8), "little")
        self._seed_engine(value)
        return value

    def initial_seed(self):
        return self._initial_seed

    def get_state(self):
        """The generator state as a uint8 array laid out like `torch.Generator.get_state()`."""
        st = self._engine.state["state"]
        pos = int(st["pos"])
        if pos >= _MT_N:
            left, nxt = 1, (0 if self._fresh else _MT_N)
        else:
            left, nxt = _MT_N + 1 - pos, pos
        buf = bytearray(_STATE_BYTES)
        buf[0:8] = np.array([self._initial_seed], "<u8").tobytes()
        buf[8:16] = np.array([left, 1], "<i4").tobytes()
        buf[16:24] = np.array([nxt], "<u8").tobytes()
        buf[24:5016] = np.asarray(st["key"], np.uint32).astype("<u8").tobytes()
        if self._next_double_normal is not None:
            buf[5024:5032] = np.array([self._next_double_normal], "<f8").tobytes()
            buf[5040:5044] = np.array([1], "<i4").tobytes()
        if self._next_float_normal is not None:
            buf[5044:5048] = np.array([self._next_float_normal], "<f4").tobytes()
            buf[5048] = 1
        return np.frombuffer(bytes(buf), np.uint8).copy()

    def set_state(self, state):
        """Restore a state from `get_state()` (or from `torch.get_rng_state()`)."""
        if hasattr(state, "numpy") and not isinstance(state, np.ndarray):
            state = state.numpy()
        raw = np.ascontiguousarray(np.asarray(state, dtype=np.uint8)).tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(
                f"Expected either a THGeneratorState of size {_STATE_BYTES} but found the input "
                f"RNG state size to be {len(raw)}"
            )
        initial = int(np.frombuffer(raw, "<u8", 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(raw, "<i4", 2, 8))
        nxt = int(np.frombuffer(raw, "<u8", 1, 16)[0]) & 0xFFFFFFFF
        key = np.frombuffer(raw, "<u8", _MT_N, 24).astype(np.uint32)
        if not (seeded and 0 < left <= _MT_N and nxt <= _MT_N):
            raise RuntimeError("Invalid mt19937 state")
        pos = _MT_N if left == 1 else nxt
        self._engine.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self._initial_seed = initial
        self._fresh = left == 1 and nxt == 0
        dbl_valid = int(np.frombuffer(raw, "<i4", 1, 5040)[0])
        self._next_double_normal = (
            float(np.frombuffer(raw, "<f8", 1, 5024)[0]) if dbl_valid else None
        )
        flt_valid = raw[5048]
        self._next_float_normal = (
            float(np.frombuffer(raw, "<f4", 1, 5044)[0]) if flt_valid else None
        )
        return self

    def __repr__(self):
        return f"<Generator object at {hex(id(self))}>"

    # ------------------------------------------------------------------ raw draws
    def _draw32(self, n):
        """n consecutive 32-bit draws, as uint64 values."""
        if n <= 0:
            return np.empty(0, _U64)
        self._fresh = False
        return self._engine.random_raw(n)

    def _draw64(self, n):
        """n 64-bit draws (each = first 32-bit draw << 32 | second 32-bit draw)."""
        r = self._draw32(2 * n)
        return (r[0::2] << _U64(32)) | r[1::2]

    def _uniform24(self, n):
        """n float32 uniforms in [0, 1) with 24 random bits each."""
        return (self._draw32(n) & _MASK24).astype(_F32) * _F32(2.0**-24)

    def _uniform53(self, n):
        """n float64 uniforms in [0, 1) with 53 random bits each."""
        return (self._draw64(n) & _MASK53).astype(_F64) * (2.0**-53)


# Like PyTorch's, the default generator starts from a non-deterministic seed; call
# `manual_seed` for reproducible streams.  (`Generator()` objects start from PyTorch's fixed
# default seed 67280421310721.)
default_generator = Generator()
default_generator.seed()


def _gen(generator):
    return default_generator if generator is None else generator


def manual_seed(seed):
    """Seed the default generator; returns it (like `torch.manual_seed`)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


# ====================================================================== exact arithmetic helpers


def _fma32(a, b, c):
    """Single-rounding float32 a*b + c, computed in float64 with a double-rounding correction."""
    p = np.multiply(a, b, dtype=_F64)  # exact: 24 + 24 significant bits
    s = np.add(p, c, dtype=_F64)
    # Rounding s to float32 differs from rounding the exact sum only when s sits exactly on a
    # float32 rounding midpoint while the exact sum does not; nudge those toward the true value.
    # (The midpoint test assumes a normal float32 result, which is all the callers produce.)
    tie = (s.view(_U64) & _U64(0x1FFFFFFF)) == _U64(0x10000000)
    if tie.any():
        idx = np.nonzero(tie)
        ps = np.broadcast_to(p, s.shape)[idx]
        cs = np.broadcast_to(np.asarray(c, _F64), s.shape)[idx]
        ss = s[idx]
        bv = ss - ps
        err = (ps - (ss - bv)) + (cs - bv)  # ss + err == ps + cs exactly
        s = s.copy() if s.base is not None else s
        s[idx] = np.where(err == 0, ss, np.nextafter(ss, np.where(err > 0, np.inf, -np.inf)))
    return s.astype(_F32)


def _two_sum(a, b):
    s = a + b
    bv = s - a
    return s, (a - (s - bv)) + (b - bv)


def _two_prod(a, b):
    p = a * b
    ca = 134217729.0 * a
    ah = ca - (ca - a)
    al = a - ah
    cb = 134217729.0 * b
    bh = cb - (cb - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _fma64(a, b, c):
    """Correctly rounded float64 a*b + c (Boldo-Melquiond emulation via rounding to odd)."""
    a, b, c = np.broadcast_arrays(np.asarray(a, _F64), np.asarray(b, _F64), np.asarray(c, _F64))
    with np.errstate(over="ignore", invalid="ignore"):
        ph, pl = _two_prod(a, b)
        th, tl = _two_sum(c, ph)
        v, verr = _two_sum(tl, pl)
        # round v to odd: if inexact and its last bit is even, step toward the exact value
        fix = (verr != 0) & ((v.view(_U64) & _U64(1)) == 0)
        if np.any(fix):
            v = np.where(fix, np.nextafter(v, np.where(verr > 0, np.inf, -np.inf)), v)
        out = th + v
    # the emulation is not valid for non-finite intermediates; fall back to the plain formula
    bad = ~np.isfinite(out) | ~np.isfinite(ph)
    if np.any(bad):
        out = np.where(bad, a * b + c, out)
    return out


def _libm(fn, values):
    """Apply a libm function (through Python's math module) elementwise to a float64 array."""
    return np.fromiter(map(fn, values.tolist()), _F64, count=values.size)


# ====================================================================== vectorised log / sincos
# Single-precision approximations used by PyTorch's AVX2 normal kernel; their multiply/add
# pairs were fused into FMAs by the compiler, and that is reproduced exactly below.

_C = {
    name: _F32(val)
    for name, val in dict(
        sqrthf=0.707106781186547524,
        q1=-2.12194440e-4,
        q2=0.693359375,
        fopi=1.27323954473516,
        dp1=-0.78515625,
        dp2=-2.4187564849853515625e-4,
        dp3=-3.77489497744594108e-8,
        two_pi=2.0 * math.pi,
    ).items()
}
_LOG_P = [
    _F32(v)
    for v in (
        7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
        -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
    )
]
_SIN_P = [_F32(v) for v in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_COS_P = [_F32(v) for v in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)]
_MIN_NORM = np.array([0x00800000], np.uint32).view(_F32)[0]
_HALF_BITS = np.uint32(0x3F000000)
_INV_EXP_MASK = np.uint32(~0x7F800000 & 0xFFFFFFFF)


def _log_ps(x):
    """Natural log of positive float32 values (Cephes polynomial, FMA-fused)."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.uint32)
    e = ((bits >> np.uint32(23)).astype(np.int32) - 127).astype(_F32) + _F32(1)
    x = ((bits & _INV_EXP_MASK) | _HALF_BITS).view(_F32)  # mantissa in [0.5, 1)
    small = x < _C["sqrthf"]
    x = (x - _F32(1)) + np.where(small, x, _F32(0))
    e = e - np.where(small, _F32(1), _F32(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for coef in _LOG_P[1:]:
        y = _fma32(y, x, coef)
    y = y * x
    y = _fma32(y, z, e * _C["q1"])
    y = y - z * _F32(0.5)  # z * 0.5 is exact, so fused or not gives the same
    return _fma32(e, _C["q2"], x + y)


def _sincos_ps(x):
    """(sin x, cos x) of float32 values (Cephes polynomials, FMA-fused)."""
    xbits = x.view(np.uint32)
    sign_sin = xbits & np.uint32(0x80000000)
    x = np.abs(x)
    j = (x * _C["fopi"]).astype(np.int32)  # truncation, like cvttps2dq
    j = (j + 1) & ~1
    y = j.astype(_F32)
    sign_sin = sign_sin ^ ((j & 4).astype(np.uint32) << np.uint32(29))
    sign_cos = ((~(j - 2)) & 4).astype(np.uint32) << np.uint32(29)
    use_first = (j & 2) == 0
    x = _fma32(y, _C["dp1"], x)
    x = _fma32(y, _C["dp2"], x)
    x = _fma32(y, _C["dp3"], x)
    z = x * x
    yc = _fma32(_COS_P[0], z, _COS_P[1])
    yc = _fma32(yc, z, _COS_P[2])
    yc = yc * z
    yc = _fma32(yc, z, -(z * _F32(0.5)))
    yc = yc + _F32(1)
    ys = _fma32(_SIN_P[0], z, _SIN_P[1])
    ys = _fma32(ys, z, _SIN_P[2])
    ys = ys * z
    ys = _fma32(ys, x, x)
    part_s2 = np.where(use_first, ys, _F32(0))
    part_s1 = np.where(use_first, _F32(0), yc)
    sin_v = part_s1 + part_s2
    cos_v = (yc - part_s1) + (ys - part_s2)
    sin_v = (sin_v.view(np.uint32) ^ sign_sin).view(_F32)
    cos_v = (cos_v.view(np.uint32) ^ sign_cos).view(_F32)
    return sin_v, cos_v


def _box_muller_blocks_f32(u):
    """Transform uniforms shaped (blocks, 16) into standard normals, float32 vector route."""
    u1 = _F32(1) - u[:, :8]
    u2 = u[:, 8:]
    radius = np.sqrt(_F32(-2) * _log_ps(u1))
    sin_t, cos_t = _sincos_ps(_C["two_pi"] * u2)
    return np.concatenate([radius * cos_t, radius * sin_t], axis=1)


def _box_muller_blocks_f64(u):
    """Transform uniforms shaped (blocks, 16) into standard normals, float64 libm route."""
    u1 = (1.0 - u[:, :8]).ravel()
    theta = (2.0 * math.pi) * u[:, 8:].ravel()
    radius = np.sqrt(-2.0 * _libm(math.log, u1))
    cos_t = _libm(math.cos, theta)
    sin_t = _libm(math.sin, theta)
    blocks = u.shape[0]
    return np.concatenate(
        [(radius * cos_t).reshape(blocks, 8), (radius * sin_t).reshape(blocks, 8)], axis=1
    )


# ====================================================================== fill helpers


def _as_dtype(np_dtype):
    return np.dtype(np_dtype)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _check_float(dt, what):
    if dt not in _FLOAT_DTYPES:
        raise TypeError(f"{what}: expected a floating point dtype (float16/32/64), got {dt}")


def _memory_order_view(arr):
    """A view of arr whose C-order walk visits elements in the order PyTorch fills them."""
    if arr.flags.c_contiguous or arr.ndim <= 1:
        return arr
    axes = sorted(range(arr.ndim), key=lambda d: -abs(arr.strides[d]))
    return arr.transpose(axes)


def _store(arr, flat_values):
    view = _memory_order_view(arr)
    view[...] = flat_values.reshape(view.shape)
    return arr


def _uniform_values(gen, n, dt, low, high):
    if dt == np.float64:
        x = gen._uniform53(n)
        lo, hi = _F64(low), _F64(high)
        out = _fma64(x, hi - lo, lo)
    else:
        # float32, and float16 (computed in float32, rounded once at the end)
        x = gen._uniform24(n)
        lo, hi = _F32(low), _F32(high)
        out = _fma32(x, hi - lo, lo).astype(dt, copy=False)
        lo, hi = lo.astype(dt), hi.astype(dt)
    # a value that rounded up onto the excluded upper bound is replaced by the lower bound
    return np.where(out == hi, lo, out).astype(dt, copy=False)


def _scalar_normals(gen, n, mean, std):
    """The one-at-a-time double Box-Muller route with the generator's cached second value."""
    out = np.empty(n, _F64)
    start = 0
    if n and gen._next_double_normal is not None:
        out[0] = gen._next_double_normal
        gen._next_double_normal = None
        start = 1
    remaining = n - start
    if remaining > 0:
        pairs = (remaining + 1) // 2
        u = gen._uniform53(2 * pairs)
        u1, u2 = u[0::2], u[1::2]
        radius = np.sqrt(-2.0 * _libm(math.log1p, -u2))
        theta = (2.0 * math.pi) * u1
        pair_vals = np.empty((pairs, 2), _F64)
        pair_vals[:, 0] = radius * _libm(math.cos, theta)
        pair_vals[:, 1] = radius * _libm(math.sin, theta)
        flat = pair_vals.ravel()
        out[start:] = flat[:remaining]
        if remaining % 2:
            gen._next_double_normal = float(flat[-1])
    return _fma64(out, float(std), float(mean))


def _normal_values(gen, n, dt, mean, std, contiguous):
    if n < 16 or not contiguous:
        vals = _scalar_normals(gen, n, mean, std)
        if dt == np.float16:
            vals = vals.astype(_F32)  # double -> float -> half, as PyTorch converts
        return vals.astype(dt, copy=False)
    full = n // 16
    tail = n % 16
    if dt == np.float64:
        u = gen._uniform53(n)
        out = np.empty(n, _F64)
        out[: full * 16] = _box_muller_blocks_f64(u[: full * 16].reshape(full, 16)).ravel()
        if tail:
            out[n - 16 :] = _box_muller_blocks_f64(gen._uniform53(16).reshape(1, 16)).ravel()
        return _fma64(out, float(std), float(mean))
    if dt == np.float32:
        u = gen._uniform24(n)
        out = np.empty(n, _F32)
        out[: full * 16] = _box_muller_blocks_f32(u[: full * 16].reshape(full, 16)).ravel()
        if tail:
            out[n - 16 :] = _box_muller_blocks_f32(gen._uniform24(16).reshape(1, 16)).ravel()
    else:  # float16: whole blocks only, computed in float32
        blocks = -(-n // 16)
        u = gen._uniform24(blocks * 16).reshape(blocks, 16)
        z = _box_muller_blocks_f32(u).ravel()
        out = z[:n].copy()
        if tail:
            out[n - 16 :] = z[-16:]
    out = _fma32(out, _F32(std), _F32(mean))
    return out.astype(dt, copy=False)


# ====================================================================== public factories


def uniform_(array, a=0.0, b=1.0, generator=None):
    """Fill a float array in place with U[a, b) samples, exactly like `Tensor.uniform_`."""
    dt = array.dtype
    _check_float(dt, "uniform_")
    if not a <= b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}"
        )
    vals = _uniform_values(_gen(generator), array.size, dt, a, b)
    return _store(array, vals)


def normal_(array, mean=0.0, std=1.0, generator=None):
    """Fill a float array in place with N(mean, std**2) samples, exactly like `Tensor.normal_`."""
    dt = array.dtype
    _check_float(dt, "normal_")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    contiguous = bool(array.flags.c_contiguous)
    vals = _normal_values(_gen(generator), array.size, dt, mean, std, contiguous)
    return _store(array, vals)


def rand(shape, np_dtype=np.float32, generator=None):
    """Uniform [0, 1) samples, like `torch.rand(*shape, dtype=...)`."""
    dt = _as_dtype(np_dtype)
    _check_float(dt, "rand")
    out = np.empty(_shape(shape), dt)
    return uniform_(out, 0.0, 1.0, generator)


def randn(shape, np_dtype=np.float32, generator=None):
    """Standard normal samples, like `torch.randn(*shape, dtype=...)`."""
    dt = _as_dtype(np_dtype)
    _check_float(dt, "randn")
    out = np.empty(_shape(shape), dt)
    return normal_(out, 0.0, 1.0, generator)


_INT_NAMES = {
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short int",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long int",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "short unsigned int",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "long unsigned int",
    np.dtype(np.bool_): "bool",
}


_FLOAT_DIGITS = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


def _int_through_float(value, dt):
    """int64 -> floating dtype -> int64, with C's conversions (half goes through float)."""
    arr = np.array([value], np.int64)
    if dt == np.float16:
        arr = arr.astype(_F32)
    with np.errstate(invalid="ignore", over="ignore"):
        return int(arr.astype(dt).astype(np.int64)[0])


def _adjust_float_bounds(low, high, dt):
    """PyTorch nudges bounds that the dtype cannot represent so that [low, high) stays valid."""
    digits = _FLOAT_DIGITS[dt]
    low_plus_1 = _int_through_float(low + 1, dt)
    if low_plus_1 < low:
        low = low_plus_1 + (1 << (abs(low + 1).bit_length() - 1 - digits + 1))
    high_minus_1 = _int_through_float(high - 1, dt)
    if high_minus_1 >= high:
        high = high_minus_1 - (1 << (abs(high - 1).bit_length() - 1 - digits + 1))
    return low, high


def randint(low, high, shape, np_dtype=np.int64, generator=None):
    """Integers uniform on [low, high), like `torch.randint(low, high, shape, dtype=...)`."""
    dt = _as_dtype(np_dtype)
    low, high = int(low), int(high)
    if low < -(1 << 63) or low >= (1 << 63) or high < -(1 << 63) or high >= (1 << 63):
        raise RuntimeError("Overflow when unpacking long")
    if not low < high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    if dt in _FLOAT_DIGITS:
        low, high = _adjust_float_bounds(low, high, dt)
        if not low < high:
            raise RuntimeError(
                f"random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                f"but got from={low} >= to={high}"
            )
        if dt == np.float16:  # the only float dtype whose finite range an int64 can leave
            if not -65504 <= low <= 65504:
                raise RuntimeError("from is out of bounds for c10::Half")
            if not -65504 <= high - 1 <= 65504:
                raise RuntimeError("to - 1 is out of bounds for c10::Half")
    elif dt.kind in "iub":
        lo_lim, hi_lim = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        name = _INT_NAMES.get(dt, str(dt))
        if not lo_lim <= low <= hi_lim:
            raise RuntimeError(f"from is out of bounds for {name}")
        if not lo_lim <= high - 1 <= hi_lim:
            raise RuntimeError(f"to - 1 is out of bounds for {name}")
    else:
        raise TypeError(f"randint: unsupported dtype {dt}")
    span = high - low  # < 2**64
    shape = _shape(shape)
    n = int(np.prod(shape, dtype=np.int64))
    gen = _gen(generator)
    draws = gen._draw64(n) if span >= _WIDE_RANGE else gen._draw32(n)
    with np.errstate(over="ignore"):
        vals = ((draws % _U64(span)) + _U64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
    if dt == np.float16:
        vals = vals.astype(_F32)  # int64 -> float -> half, as PyTorch converts
    return vals.astype(dt).reshape(shape)


def randperm(n, np_dtype=np.int64, generator=None):
    """A random permutation of range(n), like `torch.randperm(n, dtype=...)`."""
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dt = _as_dtype(np_dtype)
    if dt in _FLOAT_DIGITS:
        limit = (1 << _FLOAT_DIGITS[dt]) + 1
        if n > limit:
            kind = {11: "Half", 24: "Float", 53: "Double"}[_FLOAT_DIGITS[dt]]
            raise RuntimeError(f"n cannot be greater than {limit} for {kind} type.")
    elif dt.kind in "iu":
        if n > 0 and n - 1 > np.iinfo(dt).max:
            raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
    else:
        raise RuntimeError(f'"randperm" not implemented for {dt}')
    gen = _gen(generator)
    if n < (0xFFFFFFFF // 20):
        perm = list(range(n))
        if n > 1:
            offsets = (gen._draw32(n - 1) % np.arange(n, 1, -1, dtype=_U64)).tolist()
            for i, off in enumerate(offsets):
                k = i + off
                perm[i], perm[k] = perm[k], perm[i]
        out = np.array(perm, np.int64)
    else:  # inside-out shuffle with 64-bit draws (only reachable for huge n)
        draws = gen._draw64(n)
        out = np.empty(n, np.int64)
        picks = (draws % np.arange(1, n + 1, dtype=_U64)).tolist()
        for i, z in enumerate(picks):
            out[i] = out[z]
            out[z] = i
    if dt == np.float16:
        out = out.astype(_F32)
    return out.astype(dt)
