"""Tensor repr, character for character as PyTorch 2.13 prints it, from a numpy array.

Every element of a tensor shares one format, chosen from its non-zero finite magnitudes:
integer mode (`1.`), fixed point (`1.2500`) or scientific (`1.2500e-05`), right-aligned to a
common width. 1-D rows wrap at the line width under their first element, deeper dimensions
nest with one more space of indent per bracket, and tensors above the threshold are
summarised with `...`. Caller-chosen suffixes (`dtype=`, `grad_fn=`, `requires_grad=`) follow
the data, each moving to a line of its own when it would push the last line past the width.
Values are formatted from their exact double value, as PyTorch formats `.tolist()` elements.
Print options mirror `torch.set_printoptions` / `torch.get_printoptions`.
"""

import contextlib
import math

import numpy as np

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


class _Options:
    """The process-wide print options (one instance, `_OPTS`)."""

    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        for key, value in _PROFILES["default"].items():
            setattr(self, key, value)
        self.sci_mode = None


_OPTS = _Options()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Like `torch.set_printoptions`: a profile first, then explicit options over it.

    As in PyTorch, `sci_mode` is always set (left out, it returns to automatic).
    """
    if profile is not None:
        for key, value in _PROFILES[profile].items():
            setattr(_OPTS, key, value)
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}
    for key, value in given.items():
        if value is not None:
            setattr(_OPTS, key, value)
    _OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current options, as keyword arguments `set_printoptions` accepts."""
    return {key: getattr(_OPTS, key) for key in _Options.__slots__}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options (same keywords as `set_printoptions`)."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


# -- the shared element format ---------------------------------------------------------------

class _ElementFormat:
    """How every element of one tensor is written, and the width they are padded to."""

    __slots__ = ("floating", "int_mode", "sci_mode", "width", "precision")

    def __init__(self, sample):
        self.floating = sample.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        self.precision = _OPTS.precision
        if not self.floating:
            self.width = _integer_width(sample)
            return
        flat = sample.reshape(-1)
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            return  # only zeros and non-finite values: integer mode, width 1
        # abs and ceil are exact in every float dtype, so doubles decide the same way
        shown = shown.astype(np.float64)
        magnitude = np.abs(shown)
        smallest, largest = float(magnitude.min()), float(magnitude.max())
        self.int_mode = bool((shown == np.ceil(shown)).all())
        self.sci_mode = _OPTS.sci_mode
        if self.sci_mode is None:
            self.sci_mode = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        self.width = max(self._measure(v) for v in shown.tolist())

    def _measure(self, value):
        if self.sci_mode:
            return len(f"{value:.{self.precision}e}")
        if self.int_mode:
            return len(f"{value:.0f}") + 1
        return len(f"{value:.{self.precision}f}")

    def __call__(self, value):
        """One element (a Python scalar from `.tolist()`), right-aligned to the width."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{self.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" if math.isinf(value) or math.isnan(value) else f"{value:.0f}."
        else:
            text = f"{value:.{self.precision}f}"
        return text.rjust(self.width)


class _ComplexFormat:
    """Complex elements: the real parts share one format and the imaginary parts another
    (each chosen as for a real tensor), written `re+imj` / `re-imj`."""

    __slots__ = ("real", "imag", "width")

    def __init__(self, sample):
        self.real = _ElementFormat(np.ascontiguousarray(sample.real))
        self.imag = _ElementFormat(np.ascontiguousarray(sample.imag))
        self.width = self.real.width + self.imag.width + 1  # and the j

    def __call__(self, value):
        imag = (self.imag(value.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.real(value.real) + sign + imag


def _element_format(sample):
    return _ComplexFormat(sample) if sample.dtype.kind == "c" else _ElementFormat(sample)


def _integer_width(sample):
    """Widest `str()` of an integer or bool element (1 when there are none)."""
    if sample.size == 0:
        return 1
    if sample.dtype.kind == "b":
        return 4 if sample.all() else 5
    return max(len(str(sample.min())), len(str(sample.max())))


# -- laying the elements out -----------------------------------------------------------------

def _edges(values, edge):
    """The elements a summarised tensor shows, gathered for choosing the shared format."""
    if values.ndim == 0:
        return values
    count = values.shape[0]
    if values.ndim == 1:
        # `values[-0:]` is the whole row, so edgeitems=0 keeps every element, as in PyTorch
        return np.concatenate((values[:edge], values[-edge:])) if count > 2 * edge else values
    if edge == 0:
        return values[:0]
    rows = range(count) if count <= 2 * edge else [*range(edge), *range(count - edge, count)]
    return np.stack([_edges(values[i], edge) for i in rows])


def _row(values, indent, summarize, fmt):
    """A 1-D row, wrapped so each line fits the line width after `indent` columns."""
    edge = _OPTS.edgeitems
    if summarize and not edge:
        items = ["..."]
    elif summarize and values.shape[0] > 2 * edge:
        items = [*map(fmt, values[:edge].tolist()), " ...", *map(fmt, values[-edge:].tolist())]
    else:
        items = list(map(fmt, values.tolist()))
    per_line = max(1, math.floor((_OPTS.linewidth - indent) / (fmt.width + 2)))
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _block(values, indent, summarize, fmt):
    """The bracketed text of `values`, whose opening bracket sits at column `indent`."""
    if values.ndim == 0:
        return fmt(values.item())
    if values.ndim == 1:
        return _row(values, indent, summarize, fmt)
    count, edge = values.shape[0], _OPTS.edgeitems
    if summarize and count > 2 * edge:
        head = [_block(values[i], indent + 1, summarize, fmt) for i in range(edge)]
        tail = [_block(values[i], indent + 1, summarize, fmt) for i in range(count - edge, count)]
        parts = head + ["..."] + tail
    else:
        parts = [_block(values[i], indent + 1, summarize, fmt) for i in range(count)]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _body(array, indent):
    """The data part of the repr of a non-empty array."""
    summarize = array.size > _OPTS.threshold
    fmt = _element_format(_edges(array, _OPTS.edgeitems) if summarize else array)
    return _block(array, indent, summarize, fmt)


def _append_suffixes(text, suffixes, indent):
    """`text` + `, suffix`... + `)`, a suffix that would overflow going on its own line."""
    out = [text]
    # PyTorch's measure: 2 more than the true width when the text has a single line
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    out.append(")")
    return "".join(out)


# -- entry point -----------------------------------------------------------------------------

def format_tensor(array, suffixes, prefix="tensor("):
    """The whole repr of a tensor holding `array`: `tensor([...], suffix, ...)`.

    `suffixes` are pre-formatted strings (e.g. `dtype=torch.float64`, `grad_fn=<AddBackward0>`);
    a `size=(...)` suffix goes before them where PyTorch shows one (zero-size tensors other
    than 1-D, and every tensor while edgeitems is 0).
    """
    array = np.asarray(array)
    indent = len(prefix)
    if array.size == 0:
        body, show_size = "[]", array.ndim != 1
    else:
        body, show_size = _body(array, indent), not _OPTS.edgeitems
    if show_size:
        suffixes = [f"size={tuple(array.shape)}", *suffixes]
    return _append_suffixes(prefix + body, suffixes, indent)
