"""Run a fuzz program on PyTorch and on adcompile, compare what each statement shows, name
the first difference's class, and shrink failing programs.

What a statement shows (`observe`): for a tensor its dtype, shape, values, requires_grad,
is_leaf, whether it is contiguous and its strides, its grad_fn's class and the classes along next_functions
(two levels, with output numbers); for a tuple or list each element; for a statement that
raises, the exception's class. Float values are compared with a tolerance (float32 and
float64 ones of their own); nan equals nan, and the sign of zero is not compared.

A difference's class is `<template tag>: <what differs>` (`unary.exp: values`,
`inplace.add_: raises RuntimeError vs none`); programs are counted per class of their first
difference, since later ones usually follow from it.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import torch

import adcompile
from tests.eager_fuzz.gen import PRELUDE, Program

LIBS = {"torch": torch, "adcompile": adcompile}
# float64 values often hold float32 results (x.double()), whose last bits may differ (fused
# multiply-adds in PyTorch's kernels), hence the float64 tolerance
# memory layout is compared for the results the issue pins down (views, joins, indexing,
# products, where, scans); elementwise and creation layouts follow PyTorch's TensorIterator,
# which the fuzzer does not hold numpy to
LAYOUT_TAGS = ("view.", "join.", "index.", "matmul.", "where.where", "scan.", "split.")
# and the strides of TensorIterator's results (elementwise ops and casts), which numpy's own
# choice of layout used to miss (a view's size-1 dimensions, a number as an operand)
STRIDE_TAGS = ("unary.", "binary.", "ternary.", "compare.", "clamp.", "where.", "cast.")
TOLERANCE = {"torch.float32": (2e-4, 1e-5), "torch.float64": (2e-6, 1e-9)}


@dataclass
class Finding:
    index: int
    tag: str
    kind: str
    theirs: object
    ours: object

    def signature(self):
        return f"{self.tag}: {self.kind}"

    def headline(self):
        return f"statement {self.index} ({self.signature()})"


# statements whose result jumps where an operand crosses a step (a remainder, a floored
# quotient, a comparison): an operand one float32 ulp apart (a softmax or an exp from
# PyTorch's vector kernels, within the tolerance) can move the result by up to the divisor,
# by a large quotient times an ulp of the divisor elsewhere, or flip a comparison near a tie;
# such a difference is allowed when PyTorch, given our operands, computes our result
# (`_amplified`)
STEP_TAGS = ("binary.%", "binary.//", "binary.remainder", "binary.fmod", "compare.")


def run(program, lib, stop=None):
    """The observation of each statement of `program` run with `torch` bound to `lib`
    (with `stop`, of the statements before it, and the namespace they leave)."""
    ns = {"torch": lib}
    exec(PRELUDE, ns)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for stmt in program.stmts[:stop]:
            try:
                exec(stmt.source, ns)
            except Exception as e:  # noqa: BLE001 - the class is what is compared
                seen.append(("raise", type(e).__name__))
                continue
            try:
                seen.append(observe(ns.get(stmt.target), lib, stmt.mode))
            except Exception as e:  # noqa: BLE001 - observing crashed: a finding too
                seen.append(("observe-crash", type(e).__name__))
    return seen if stop is None else (seen, ns)


def observe(v, lib, mode="full"):
    if isinstance(v, lib.Tensor):
        return _tensor(v, mode)
    if isinstance(v, (tuple, list)):
        return ("seq", [observe(x, lib, mode) for x in v])
    if v is None or isinstance(v, (bool, int, float, str)):
        return ("py", v)
    if isinstance(v, lib.Size):
        return ("py", tuple(v))
    return ("other", type(v).__name__)


def _tensor(t, mode):
    d = t.detach()
    values = np.array(d.tolist(), dtype=object if d.dtype in (torch.bool,) else None)
    out = {"dtype": str(t.dtype), "shape": tuple(t.shape), "values": values,
           "requires_grad": t.requires_grad, "is_leaf": t.is_leaf}
    if mode == "full":
        out["contiguous"] = t.is_contiguous()
        out["strides"] = t.stride()
        out["grad_fn"] = _node_name(t.grad_fn)
        out["graph"] = _graph(t.grad_fn)
    return ("T", out)


def _node_name(node):
    return None if node is None else type(node).__name__


def _graph(node, depth=2):
    if node is None or depth == 0:
        return None
    return [(_node_name(n), nr, _graph(n, depth - 1)) for n, nr in node.next_functions]


# -- comparing ----------------------------------------------------------------------------------

def compare(program, theirs, ours):
    """The first Finding, or None when both libraries showed the same."""
    for i, (stmt, a, b) in enumerate(zip(program.stmts, theirs, ours)):
        kind = _difference(a, b, stmt.tag)
        if kind is not None:
            return Finding(i, stmt.tag, kind, a, b)
    return None


def _difference(a, b, tag):
    if a[0] == "observe-crash":  # PyTorch cannot show it (an efficient zero tensor's .grad)
        return None
    if a[0] == "raise" or b[0] == "raise":
        if a == b:
            return None
        what = lambda o: o[1] if o[0] == "raise" else "none"  # noqa: E731
        return f"raises {what(a)} vs {what(b)}"
    if a[0] != b[0]:
        return f"{a[0]} vs {b[0]}"
    if a[0] == "seq":
        if len(a[1]) != len(b[1]):
            return "length"
        for x, y in zip(a[1], b[1]):
            kind = _difference(x, y, tag)
            if kind is not None:
                return kind
        return None
    if a[0] == "T":
        return _tensor_difference(a[1], b[1], tag)
    if a[0] == "py" and isinstance(a[1], float) and isinstance(b[1], float):
        return None if _close(np.array(a[1]), np.array(b[1]), "torch.float64") else "value"
    return None if a == b else "value"


def _tensor_difference(a, b, tag):
    for key in ("dtype", "shape"):
        if a[key] != b[key]:
            return key
    if not _close(a["values"], b["values"], a["dtype"]):
        return "values"
    for key in ("requires_grad", "is_leaf", "grad_fn", "graph"):
        if a.get(key) != b.get(key):
            return key
    if tag.startswith(LAYOUT_TAGS) and a.get("contiguous") != b.get("contiguous"):
        return "contiguous"
    if tag.startswith(STRIDE_TAGS) and a.get("strides") != b.get("strides") \
            and a["values"].size:  # (an empty tensor's: tests/test_empty_strides.py)
        return "strides"
    return None


def _close(x, y, dtype):
    if x.shape != y.shape:
        return False
    if dtype not in TOLERANCE:
        return bool(np.array_equal(x, y))
    rtol, atol = TOLERANCE[dtype]
    return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))


def check(program):
    theirs = run(program, torch)
    ours = run(program, adcompile)
    finding = compare(program, theirs, ours)
    if finding is not None and _amplified(program, finding):
        return None
    return finding


def _amplified(program, finding):
    """Whether a difference in the values of a STEP_TAGS statement comes from its operands:
    PyTorch, run on our operands (as leaf tensors of the same dtypes), gives our values."""
    stmt = program.stmts[finding.index]
    if not stmt.tag.startswith(STEP_TAGS) or finding.kind != "values":
        return False
    _, ns = run(program, adcompile, stop=finding.index)
    mine = dict(ns)
    exec(stmt.source, mine)
    theirs = {k: _to_torch(v) for k, v in ns.items()}
    theirs["torch"] = torch
    try:
        exec(stmt.source, theirs)
    except Exception:  # noqa: BLE001 - then the difference is real
        return False
    a, b = observe(theirs[stmt.target], torch, "values"), observe(mine[stmt.target], adcompile,
                                                                    "values")
    return a[0] == b[0] == "T" and _tensor_difference(a[1], b[1], "") is None


def _to_torch(v):
    if not isinstance(v, adcompile.Tensor):
        return v
    return torch.from_numpy(np.array(v.detach().numpy())).requires_grad_(v.requires_grad)


# -- shrinking ----------------------------------------------------------------------------------

def shrink(program, finding, tries=60):
    """Drop statements one at a time while the program still fails in the same class."""
    stmts = list(program.stmts)
    sig = finding.signature()
    i = len(stmts) - 1
    while i >= 0 and tries > 0:
        trial = Program(program.seed, stmts[:i] + stmts[i + 1:])
        tries -= 1
        try:
            f = check(trial)
        except Exception:  # noqa: BLE001
            f = None
        if f is not None and f.signature() == sig:
            stmts = trial.stmts
        i -= 1
    return Program(program.seed, stmts)


def describe(program, finding, small=None):
    small = small or program
    return (f"seed {program.seed}: {finding.headline()}\n"
            f"  torch:     {_short(finding.theirs)}\n  adcompile: {_short(finding.ours)}\n"
            f"  program:\n" + "\n".join("    " + line for line in small.render().splitlines()))


def _short(o):
    text = repr(o)
    return text if len(text) < 400 else text[:400] + "..."
