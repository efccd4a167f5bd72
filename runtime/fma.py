"""float32 fused multiply-add on numpy arrays: a * b + c rounded once, as the FMA instructions
PyTorch's vector kernels use (lerp, addcmul, add with alpha, SLEEF's functions) compute it.

numpy has no fma. The product of two float32s is exact in float64 (24 + 24 bits), so one
float64 addition leaves a single rounding before the final one to float32; the two roundings
disagree only where the float64 sum landed exactly halfway between two float32s, and there
the sum is moved off the tie towards the exact value (its error, from Knuth's two-sum).
"""

import numpy as np

F32 = np.float32


def fma(a, b, c):
    """a * b + c rounded once to float32."""
    product = np.multiply(a, b, dtype=np.float64)  # exact: 24 + 24 bits
    total = np.add(product, c, dtype=np.float64)
    # the float64 sum was rounded too; that second rounding only matters where it landed
    # exactly halfway between two float32s (a false tie), rare enough to repair case by case
    ties = total.view(np.int64) & 0x1FFFFFFF == 0x10000000
    if ties.any():
        total = np.where(ties, _round_to_odd(product, c, total), total)
    return total.astype(F32)


def _round_to_odd(product, c, total):
    """total moved off its false tie towards the exact sum (Knuth's two-sum gives the error)."""
    back = total - product
    error = (product - (total - back)) + (c - back)
    return np.where(error != 0, np.nextafter(total, np.copysign(np.inf, error)), total)
