"""torch.return_types: the named tuples that ops returning several tensors hand back.

Each is a tuple subclass with named fields, printed as PyTorch prints it
(`torch.return_types.max(\\nvalues=...,\\nindices=...)`); `named(name, fields)` makes one, once
per name, and the `<name>_out` variants are what those ops return when given out=.
"""

import collections
import functools


@functools.cache
def named(name, fields):
    """The named tuple torch.return_types.<name> with `fields` (a tuple of names)."""
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        parts = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{parts})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__})
    cls.__module__ = "torch.return_types"
    return cls


_PAIR = ("values", "indices")
# name -> fields, for the ops we provide
FIELDS = {
    **{name: _PAIR for name in ("max", "min", "sort", "topk", "kthvalue", "median",
                                "nanmedian", "mode", "cummax", "cummin")},
    "aminmax": ("min", "max"),
    "linalg_slogdet": ("sign", "logabsdet"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"),
    "linalg_svd": ("U", "S", "Vh"),
    "linalg_qr": ("Q", "R"),
    "linalg_inv_ex": ("inverse", "info"),
    "linalg_cholesky_ex": ("L", "info"),
    "linalg_solve_ex": ("result", "info"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"),
}
globals().update({name: named(name, fields) for name, fields in FIELDS.items()})
globals().update({f"{name}_out": named(f"{name}_out", fields) for name, fields in FIELDS.items()})
