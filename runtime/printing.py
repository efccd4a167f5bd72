"""PyTorch-exact tensor printing.

One shared element format per tensor: integer mode (`1.`), fixed (`1.2500`) or scientific
(`1.2500e-05`), chosen from the non-zero finite magnitudes; right-aligned to a common width;
rows wrapped at the line width; big tensors summarised with `...`; suffixes (`dtype=`,
`grad_fn=`, `requires_grad=`) appended, each moving to its own line when it would overflow.
Values are formatted from their double value, as PyTorch formats `.tolist()` elements.
"""

import math

import numpy as np


class _Options:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


OPTIONS = _Options()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    if profile is not None:
        for key, value in _PROFILES[profile].items():
            setattr(OPTIONS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, key, value)
    OPTIONS.sci_mode = sci_mode


def get_printoptions():
    return {k: getattr(OPTIONS, k) for k in
            ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Format:
    """The element format shared by every value of one tensor."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max((len(str(v)) for v in values.ravel().tolist()), default=1)
            return
        flat = values.ravel()
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite).astype(np.float64)
        lo, hi = magnitudes.min(), magnitudes.max()
        doubles = finite.astype(np.float64).tolist()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            texts = [self._sci(v) for v in doubles] if self.sci_mode else \
                [f"{v:.0f}." for v in doubles]
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            texts = [self._sci(v) if self.sci_mode else self._fixed(v) for v in doubles]
        self.width = max(len(t) for t in texts)
        if OPTIONS.sci_mode is not None:
            self.sci_mode = OPTIONS.sci_mode

    @staticmethod
    def _sci(v):
        return f"{v:.{OPTIONS.precision}e}"

    @staticmethod
    def _fixed(v):
        return f"{v:.{OPTIONS.precision}f}"

    def __call__(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci_mode:
            text = self._sci(v)
        elif self.int_mode:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = self._fixed(v)
        return " " * (self.width - len(text)) + text


def _summary(values):
    """The elements a summarised tensor shows (its edges along every axis)."""
    e = OPTIONS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim == 1:
        return np.concatenate([values[:e], values[-e:]]) if values.shape[0] > 2 * e else values
    rows = range(values.shape[0])
    if values.shape[0] > 2 * e:
        rows = list(range(e)) + list(range(values.shape[0] - e, values.shape[0]))
    return np.stack([_summary(values[i]) for i in rows])


def _vector(values, indent, summarize, fmt):
    per_line = max(1, int(math.floor((OPTIONS.linewidth - indent) / (fmt.width + 2))))
    e = OPTIONS.edgeitems
    if summarize and values.shape[0] > 2 * e:
        items = [fmt(v) for v in values[:e].tolist()] + [" ..."] + \
            [fmt(v) for v in values[-e:].tolist()]
    else:
        items = [fmt(v) for v in values.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values, indent, summarize, fmt):
    if values.ndim == 0:
        return fmt(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    e = OPTIONS.edgeitems
    n = values.shape[0]
    if summarize and n > 2 * e:
        parts = [_nested(values[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] + \
            [_nested(values[i], indent + 1, summarize, fmt) for i in range(n - e, n)]
    else:
        parts = [_nested(values[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_body(values, indent):
    """The bracketed values part of a repr, for a non-empty array."""
    if values.dtype == np.float16:
        values = values.astype(np.float32)
    summarize = values.size > OPTIONS.threshold
    fmt = _Format(_summary(values) if summarize else values)
    return _nested(values, indent, summarize, fmt)


def _with_suffixes(text, suffixes, indent):
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(array, dtype, default_dtype, grad_fn_name=None, requires_grad=False,
                  prefix="tensor("):
    """The whole repr: `tensor([...], dtype=..., grad_fn=<...>)` as PyTorch prints it."""
    indent = len(prefix)
    suffixes = []
    if array.size == 0:
        if array.ndim != 1:
            suffixes.append(f"size={tuple(array.shape)}")
        if dtype is not default_dtype:
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if dtype is not default_dtype and dtype.name not in ("int64", "bool"):
            suffixes.append(f"dtype={dtype!r}")
        body = tensor_body(array, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
