"""float32 exp, sigmoid and tanh as oneDNN's JIT element-wise code computes them inside
PyTorch's CPU LSTM (oneDNN 3.12, the `ref` RNN with its AVX-512 post-GEMM kernels), so an
LSTM layer agrees with PyTorch's to the bit; and GELU (the erf form) and its derivative, which
PyTorch hands to oneDNN's element-wise primitive for contiguous float32 input.

PyTorch 2.13 runs a float32 `nn.LSTM` on CPU through oneDNN, whose post-GEMM kernel applies
the gates' activations with its own polynomial approximations, not SLEEF's or the C
library's (measured: 12,288 values over [-20, 20] and near 0, all bits equal through a
one-unit LSTM whose cell state reads out one gate):
- exp(x): n = floor(x log2(e) + 1/2), r = x - n ln 2 (one fused multiply-add), a degree-5
  polynomial in r by fused multiply-adds, times 2**(n - 1), times 2; arguments clamped to
  [ln FLT_MIN, ln FLT_MAX] and results below ln FLT_MIN flushed to zero.
- sigmoid(x): e = exp(-|x|), y = e / (e + 1), and 1 - y where x has no sign bit.
- tanh(x): |x| cut into 32 intervals by its exponent and first mantissa bit; on each a
  degree-6 polynomial in |x| minus the interval's start, by fused multiply-adds; x itself
  below 4.2e-4, 1 from 9.01 on; the sign put back.
- gelu(x) (erf form): erf(x / sqrt 2) as a degree-5 polynomial in |x| by fused multiply-adds,
  its coefficients picked by |x|'s exponent and first two mantissa bits (24 intervals; 1 past
  5.54), the sign put back; then (erf + 1) x / 2, rounded at each step.
- gelu's derivative: Abramowitz and Stegun's erf (t = 1 / (p |r| + 1), a degree-4 polynomial
  in t, erf = 1 - poly t exp(-r^2)) at r = x / sqrt 2, plus r exp(-r^2) / sqrt(pi); the
  gradient is g times that.
The constants are oneDNN's tables, as float32 bit patterns.
"""

import numpy as np

from runtime.fma import fma, horner

F32 = np.float32


def _floats(words):
    return np.array([int(w, 16) for w in words.split()], np.uint32).view(F32)


_EXP_POLY = _floats("3c07cfce 3d2b9d0d 3e2aad40 3efffee3 3f7ffffb")  # degree 5 down to 1
_LOG2E, _LN_MAX, _LN_MIN, _LN2 = _floats("3fb8aa3b 42b17218 c2aeac50 3f317218")
_TANH_LINEAR, _TANH_SATURATED = _floats("39ddb3d7 41102cb3")
_TANH_BIAS, _TANH_MASK = 0x39800000, np.int32(-0x400000)  # interval index: bits 22 up
# rows: coefficients of degree 0 to 6; columns: the 32 intervals
_TANH_TABLE = _floats("""
00000000 39bfffff 39ffffff 3a3ffffe 3a7ffffb 3abffff7 3affffeb 3b3fffdc 3b7fffab 3bbfff70
3bfffeab 3c3ffdc0 3c7ffaab 3cbff701 3cffeaad 3d3fdc08 3d7faacd 3dbf7081 3dfeacc9 3e3dc7fd
3e7acbf5 3eb77a9f 3eec9a9f 3f22991f 3f42f7d6 3f67b7cc 3f76ca83 3f7ebbe9 3f7fd40c 3f7fff32
3f7ffffc 3f800000
3f800000 3f800018 3f7fffe8 3f7fffda 3f7fffdc 3f7fffdc 3f7fffac 3f7fff70 3f7ffeec 3f7ffdc0
3f7ffbed 3f7ff704 3f7feff5 3f7fdbca 3f7fbfff 3f7f7041 3f7f009b 3f7dc36c 3f7c0aa8 3f7734b8
3f70a4de 3f5f1fd8 3f495493 3f18b9ec 3ed706cb 3e390b06 3d90b11f 3c21a053 3aaf7fdb 37ccc1a3
355c6733 00000000
00000000 be4e0ff1 3d25b1b1 3d6b6dab 3c9fb1d5 babff06f 3c07b3f6 bb3fc1bc 3a9f5921 bbbf06f2
bbb0f402 bc47db9e bc73d5e7 bca25bda bcfca780 bd40e07c bd7dab03 bdbe4a0f bdfb14a5 be36cc8d
be6bd102 be9fe7c5 beba0f10 bec206a8 bea3c388 be277d62 bd8b7960 bc209f49 baad44ca b7c6eeac
b663aa41 00000000
00000000 45b3ae96 c414eb20 c450e02e c3152b4e bead2f56 c2162e02 beb4bd5a c11a59a4 bed2f507
c020d32c 3dd0f506 bf2a75e2 bff950e3 bed47334 be809b8c beb64532 be961a5b be9b63ac bea0d4b2
be828a77 be378612 bdc20908 3d2d3957 3dd46e89 3db3f629 3d2c5e7b 3bd20403 3a59dfae 3770af45
372cc014 00000000
00000000 cc981a1b 4a7edd3d 4ab1007c 48fedd9c 41a557b5 477ee32a 422557f5 45ff3ce4 42a55641
446e0867 c33dc19a 42915214 43af4fad 4110fe88 c1099b75 3fc8a8dc bfbeaef5 be365aad 3f4d9652
3ddfa08f 3e34e9b8 3e2d07a6 3dc63567 3cdaeb78 bcd17537 bc92829c bb43ab99 b9b471dd b6baad5a
b78bafc7 00000000
00000000 52f688d5 d0505c72 d08f98e3 ce505cc9 c7162b8a cc5061d6 c7162bdf ca50b37f c7162a3a
c8422086 471a714e c5ece1f1 c70e3d90 c3eba94a 43e0c424 c21f4552 42217cc8 405e7dc4 c10dd401
3e96b602 bd1a6d2f bd393883 bd674682 bd310016 b961e269 3ba32495 3a7680d5 38b3173c 35a9deea
375c3f2a 00000000
00000000 d8995ed1 558285ea 55b2cd69 53028625 4bc9991f 5082898a 4b4999b3 4e02c07c 4ac99764
4b72c822 ca40c0e1 489413e4 49b12224 46134c4e c60c2d57 43c83910 c3c872d1 c186bc9e 42325bc3
bf2ffa4a 3d9a203c bc545a43 bae08fee 3c80225d 3b1fd1df ba36b9d1 b91de544 b71f100f b408e2ed
b685fec8 00000000""").reshape(7, 32)
_TANH_BY_DEGREE = _TANH_TABLE[::-1].astype(np.float64)  # degree 6 .. 0, exact in float64


_EXP_CHAIN = [np.float64(c) for c in (*_EXP_POLY, 1)]
# exp's chain padded to tanh's length by a leading 0 (fma(0, r, c5) is c5 exactly)
_EXP_BY_DEGREE = np.array([0.0, *_EXP_CHAIN])
_LN2_64 = np.float64(_LN2)
_EXPONENT_FROM_N = F32(2**23 + 126)  # n + this: the low bits of its pattern are n + 126
# below this |x|, exp(-|x|)'s p 2 ** (n - 1) is a normal number, so p 2 ** n is the same
_NORMAL_EXP = F32(80)


def exp(x):
    """oneDNN's exp of a float32 array."""
    z = np.minimum(np.maximum(x, _LN_MIN), _LN_MAX)
    r, n = _exp_reduce(z)
    return _exp_finish(horner(_EXP_CHAIN, r), n, x < _LN_MIN)


def _exp_reduce(z, out=None):
    """(r, n) for z in [ln FLT_MIN, ln FLT_MAX]: n = floor(z log2 e + 1/2), r = z - n ln 2 as
    one fused multiply-add (the difference is exact in float64: |n| <= 128 and z lies within
    ln 2 of n ln 2, so rounding it once is the fma)."""
    n = np.floor(z * _LOG2E + F32(0.5))
    if out is None:
        out = np.empty_like(z)
    np.subtract(z, np.multiply(n, _LN2_64), out=out, casting="same_kind")
    return out, n


def _exp_finish(p, n, flush):
    """p 2 ** (n - 1) 2, and 0 where `flush` (None: nowhere)."""
    scale = ((n + _EXPONENT_FROM_N).view(np.int32) << 23).view(F32)  # 2 ** (n - 1)
    if flush is not None:
        scale[flush] = 0
    p *= scale
    p *= F32(2)
    return p


def sigmoid(x):
    """oneDNN's logistic function of a float32 array."""
    z = np.negative(np.abs(x))
    flush = z < _LN_MIN
    r, n = _exp_reduce(np.maximum(z, _LN_MIN, out=z))
    return _sigmoid_finish(_exp_finish(horner(_EXP_CHAIN, r), n, flush), x)


def _sigmoid_finish(e, x):
    """e = exp(-|x|) -> e / (e + 1), or 1 minus that where x has no sign bit."""
    y = e / (e + F32(1))
    return np.where(np.signbit(x), y, F32(1) - y)


def tanh(x):
    """oneDNN's tanh of a float32 array."""
    coefficients = np.empty((7,) + x.shape)
    s, r = _tanh_reduce(x, coefficients)
    return _tanh_finish(horner(list(coefficients), r), s, x)


def _tanh_reduce(x, coefficients, out=None):
    """(|x|, |x| minus its interval's start), the interval's coefficients put in
    `coefficients` (7, *x.shape), degree 6 first."""
    s = np.abs(x)
    bits = s.view(np.int32)
    # the index's low 5 bits, as oneDNN's vpermt2ps reads them ("wrap": modulo 32)
    np.take(_TANH_BY_DEGREE, (bits - _TANH_BIAS) >> 22, axis=1, out=coefficients,
            mode="wrap")
    return s, np.subtract(s, (bits & _TANH_MASK).view(F32), out=out)


def _tanh_finish(p, s, x):
    p = np.where(s < _TANH_SATURATED, p, F32(1))  # a nan gives 1 too, as oneDNN blends
    if np.fmin.reduce(s, axis=None) < _TANH_LINEAR:  # fmin: a nan does not hide the rest
        small = s < _TANH_LINEAR
        p[small] = s[small]
    return np.copysign(p, x, out=p)


class Tanh:
    """tanh of arrays of one shape, with the coefficient buffer kept between calls."""

    def __init__(self, shape):
        self.coefficients = np.empty((7,) + tuple(shape))
        self.chain = list(self.coefficients)

    def __call__(self, x):
        s, r = _tanh_reduce(x, self.coefficients)
        return _tanh_finish(horner(self.chain, r), s, x)


class LstmGates:
    """The activations of an LSTM step, pre (4H, B) with the gates in the order (input,
    forget, output, cell): sigmoid of the first 3H rows, tanh of the last H, as oneDNN's
    post-GEMM kernel computes them. Both polynomials run as one chain of fused multiply-adds
    over the whole step (exp's coefficients fixed, tanh's gathered per element)."""

    def __init__(self, hidden, batch):
        self.split = 3 * hidden
        self.coefficients = np.empty((7, 4 * hidden, batch))
        self.coefficients[:, :self.split] = _EXP_BY_DEGREE[:, None, None]
        self.chain = list(self.coefficients)
        self.reduced = np.empty((4 * hidden, batch), F32)

    def __call__(self, pre, out):
        split, r = self.split, self.reduced
        sig, cell = pre[:split], pre[split:]
        a = np.abs(sig)
        if np.fmax.reduce(a, axis=None) <= _NORMAL_EXP:
            n = np.floor(a * -_LOG2E + F32(0.5))  # as for z = -a: negation is exact
            np.subtract(np.multiply(n, -_LN2_64), a, out=r[:split], casting="same_kind")
            scale = ((n + _EXPONENT_FROM_N + 1).view(np.int32) << 23).view(F32)  # 2 ** n
        else:
            z = np.negative(a)
            flush = z < _LN_MIN
            _, n = _exp_reduce(np.maximum(z, _LN_MIN, out=z), out=r[:split])
        s, _ = _tanh_reduce(cell, self.coefficients[:, split:], out=r[split:])
        p = horner(self.chain, r)
        if np.fmax.reduce(a, axis=None) <= _NORMAL_EXP:
            e = p[:split]
            e *= scale  # exact, as oneDNN's p 2 ** (n - 1) then 2: no result below normal
        else:
            e = _exp_finish(p[:split], n, flush)
        out[:split] = _sigmoid_finish(e, sig)
        out[split:] = _tanh_finish(p[split:], s, cell)


# gelu's erf: rows the coefficients of degree 0 to 5, columns the intervals (padded to 32)
_GELU_TABLE = np.concatenate([_floats("""
a6f2cb94 32827792 3381cc0c 34523d4a 351ac44d 35f36d88 36ee8229 37b8a3bb 3867a213 3940033b
3a2a5a1d 3ae35863 3b7828f2 3c08b14b 3c515ed3 bb503236 bd8d8e5e be8abcd9 bf0c19a2 beccb328
3e176ced 3f470d99 3f7abb28 3f800000 00000000
3f4c422a 3f4c421f 3f4c4207 3f4c41cb 3f4c413b 3f4c3fad 3f4c3a2f 3f4c2d40 3f4c146a 3f4bc341
3f4ad08c 3f48f8cf 3f45fac7 3f404e07 3f3b980f 3f48dff3 3f78b21b 3fbb0704 40019c32 3fe536d6
3f81331e 3e6c8684 3c98f936 00000000 3f800000
b62173f4 3735e4cf 37f2ff89 388c23be 3917535c 39ab2ab0 3a60fadb 3af9b960 3b6e5491 3c0a4ec5
3ca5aa8c 3d2138d9 3d8737d4 3ddfb660 3e0f27ab 3d94004b be0efdeb bf1d96c3 bf89db58 bf6d9897
bef69fb8 bdc4f8a8 bbde6422 00000000 00000000
be081a19 be084570 be08639b be089837 be08f409 be09ab95 be0b66d0 be0e400a be124df8 be1bde02
be2f19c9 be4931bf be685fbc be89c95f be96cbca be8044aa be0550f2 3dcfd6a1 3e94c826 3e79345f
3decec91 3ca46568 3aa1e00a 00000000 00000000
ba3d61db 39f097a3 3a5845dc 3ab1fa35 3b0cefb8 3b653ab6 3bcae527 3c221712 3c6c5840 3cc0a703
3d1dcc19 3d63656d 3d955907 3dbf9910 3dd53f69 3db7dcef 3d639ebe ba6ede48 bd22be69 bd041cf1
bc64f5ab bb097a32 b8ebf380 00000000 00000000
3cb7d80c 3c9b6050 3c978d11 3c92e850 3c8d058b 3c848454 3c6cd623 3c4c824b 3c2a7935 3be0b390
3b0651ac bb232f53 bbd42fa0 bc2c5366 bc492c9e bc2a7aa6 bbd55d04 ba823a76 3b102aa8 3ae25a7e
3a31f792 38b84375 3689bb5a 00000000 00000000""").reshape(6, 25), np.zeros((6, 7), F32)], 1)
_GELU_BY_DEGREE = _GELU_TABLE[::-1].astype(np.float64)
_GELU_INDEX_BIAS = np.int32(-0x3DE00001)  # oneDNN's 0xc21fffff, added to |x|'s bits
_GELU_RIGHT = _floats("40b15cee")[0]  # past this |x|, erf is 1
# Abramowitz and Stegun's erf: p, 1 / sqrt 2, 1 / sqrt(pi) (oneDNN's rounding), the
# polynomial's coefficients of degree 5 down to 1
_AS_P, _SQRT_HALF, _INV_SQRT_PI = _floats("3ea7ba05 3f3504f3 3f106eba")
_AS_POLY = [np.float64(c) for c in _floats("3f87dc22 bfba00e3 3fb5f0e3 be91a98e 3e827906")]


def gelu_applies(x):
    """Whether PyTorch runs gelu (erf form) of x through oneDNN, as reproduced here."""
    return x.dtype == F32 and x.flags.c_contiguous and x.size > 1


def gelu(x):
    """oneDNN's gelu (erf form) of a float32 array: compiled (runtime/simd_compiled.py) where
    llvmlite is at hand and x is C-ordered, else on numpy."""
    from runtime import simd_compiled

    out = simd_compiled.dnnl_gelu(x)
    return out if out is not None else numpy_gelu(x)


def numpy_gelu(x):
    """`gelu` on numpy: the reference."""
    s = np.abs(x)
    index = np.clip((s.view(np.int32) + _GELU_INDEX_BIAS) >> 21, 1, 24)
    index[s > _GELU_RIGHT] = 23
    erf = horner(list(np.take(_GELU_BY_DEGREE, index, axis=1)), s)
    np.negative(erf, out=erf, where=np.signbit(x))
    erf += F32(1)
    with np.errstate(over="ignore"):  # (erf + 1) x past 1.7e38 is inf, as in oneDNN
        erf *= x
    erf *= F32(0.5)
    return erf


def gelu_slope(x):
    """oneDNN's derivative of gelu (erf form) at a float32 array: compiled where llvmlite is at
    hand and x is C-ordered (it keeps a nan's sign, as oneDNN; numpy's route loses it), else
    on numpy."""
    from runtime import simd_compiled

    out = simd_compiled.dnnl_gelu(x, slope=True)
    return out if out is not None else numpy_gelu_slope(x)


def numpy_gelu_slope(x):
    """`gelu_slope` on numpy: the reference."""
    with np.errstate(over="ignore"):  # r * r past 1.8e19 is inf, as in oneDNN
        return _gelu_slope(x * _SQRT_HALF)


def _gelu_slope(r):
    q = exp(-(r * r))
    t = r * _INV_SQRT_PI
    t *= q
    w = F32(1) / fma(_AS_P, np.abs(r), F32(1))
    erf = fma(np.negative(q) * w, horner(_AS_POLY, w), F32(1))
    np.negative(erf, out=erf, where=np.signbit(r))
    t += F32(0.5)
    return fma(erf, F32(0.5), t)
