"""torch.equal: whole-tensor equality, a Python bool (no graph, no broadcasting)."""

import numpy as np

from runtime.ops._core import is_tensor, result_dtype


def equal(a, b):
    """True when both tensors have one shape and equal elements (after type promotion)."""
    for name, t in (("input", a), ("other", b)):
        if not is_tensor(t):
            raise TypeError(f"equal(): {name} must be a Tensor, not {type(t).__name__}")
    if a._data.shape != b._data.shape:
        return False
    common = result_dtype(a, b).np
    return bool(np.array_equal(a._data.astype(common, copy=False),
                               b._data.astype(common, copy=False)))
