"""float32 exp, sigmoid and tanh as oneDNN's JIT element-wise code computes them inside
PyTorch's CPU LSTM (oneDNN 3.12, the `ref` RNN with its AVX-512 post-GEMM kernels), so an
LSTM layer agrees with PyTorch's to the bit.

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
The constants are oneDNN's tables, as float32 bit patterns.
"""

import numpy as np

from runtime.fma import fma

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
_TANH_BY_INTERVAL = np.ascontiguousarray(_TANH_TABLE[::-1].T)  # (interval, degree 6 .. 0)


def exp(x):
    """oneDNN's exp of a float32 array."""
    flush = x < _LN_MIN
    x = np.clip(x, _LN_MIN, _LN_MAX)
    n = np.floor(x * _LOG2E + F32(0.5))
    r = fma(-n, _LN2, x)
    scale = ((n.astype(np.int32) + 126) << 23).view(F32)  # 2 ** (n - 1)
    scale[flush] = 0
    p = np.full_like(r, _EXP_POLY[0])
    for c in _EXP_POLY[1:]:
        p = fma(p, r, c)
    p = fma(p, r, F32(1))
    return p * scale * F32(2)


def sigmoid(x):
    """oneDNN's logistic function of a float32 array."""
    e = exp(-np.abs(x))
    y = e / (e + F32(1))
    positive = ~np.signbit(x)
    y[positive] = F32(1) - y[positive]
    return y


def tanh(x):
    """oneDNN's tanh of a float32 array."""
    s = np.abs(x)
    bits = s.view(np.int32)
    start = bits & _TANH_MASK
    interval = ((bits - _TANH_BIAS) & _TANH_MASK).view(np.uint32) >> 22
    coefficients = _TANH_BY_INTERVAL[interval & 31]
    r = s - start.view(F32)
    p = coefficients[..., 0]
    for degree in range(1, 7):
        p = fma(p, r, coefficients[..., degree])
    p[~(s < _TANH_SATURATED)] = 1  # a nan gives 1 too, as oneDNN blends
    small = s < _TANH_LINEAR
    p[small] = s[small]
    return np.copysign(p, x)
