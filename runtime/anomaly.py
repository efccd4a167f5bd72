"""Anomaly detection: torch.autograd.detect_anomaly / set_detect_anomaly.

While the mode is on,
- every new graph node remembers the stack of the forward call that created it (the user's
  frames, runtime-internal ones left out); `node.metadata["traceback_"]` shows it;
- every node run by backward is checked: an exception raised by its derivative first warns
  "Error detected in <node>" with that forward traceback, then propagates; with check_nan, a
  nan in any gradient it returns is such an error (RuntimeError naming the node and output).

Nothing of this costs anything while the mode is off: switching it on swaps the node sequence
counter (taken once per node creation) for one that also records the stack, and the engine's
rule runner for a checking one; switching it off puts the originals back.
"""

import os
import traceback
import warnings

import numpy as np

from runtime import autograd_meta, engine, function

_state = {"enabled": False, "check_nan": True}
_TRACEBACKS = {}  # node sequence number -> formatted forward stack
_MAX_TRACEBACKS = 200_000
_ORIGINAL = {"run_rule": engine._run_rule, "sequence": function._sequence}
_APPLY = {}  # node class -> its own _apply, while anomaly mode replaces it
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


class _RecordingCounter:
    """The node sequence counter, also recording the forward stack of each new node."""

    def __init__(self, counter):
        self.counter = counter

    def __iter__(self):
        return self

    def __next__(self):
        seq = next(self.counter)
        if len(_TRACEBACKS) >= _MAX_TRACEBACKS:
            _TRACEBACKS.pop(next(iter(_TRACEBACKS)))
        _TRACEBACKS[seq] = _user_stack()
        return seq


def _user_stack():
    frames = [f for f in traceback.extract_stack()[:-2]
              if not os.path.abspath(f.filename).startswith(_RUNTIME_DIR)]
    return traceback.format_list(frames)


def forward_traceback(node):
    return _TRACEBACKS.get(getattr(node, "_seq", None))


def _metadata(node):
    tb = forward_traceback(node)
    return {} if tb is None else {"traceback_": tb}


function.Node.metadata = property(_metadata)


def _warn_forward_trace(node):
    tb = forward_traceback(node)
    where = "".join(tb) if tb else ("(no forward traceback: the node was created while anomaly "
                                    "detection was off)\n")
    warnings.warn(f"Error detected in {type(node).__name__}. Traceback of the forward call "
                  f"that created it:\n{where}", UserWarning, stacklevel=4)


def _check(node, outs):
    if not _state["check_nan"]:
        return
    for i, g in enumerate(outs):
        if g is not None and np.isnan(np.asarray(getattr(g, "_data", g))).any():
            _warn_forward_trace(node)
            raise RuntimeError(f"Function '{type(node).__name__}' returned nan values in its "
                               f"{i}th output (anomaly detection)")


def _guarded(run, node, g, ops):
    """Run a node's derivative; on an error, or a nan when checked, show its forward stack."""
    try:
        outs = run(node, g, ops)
    except Exception:
        _warn_forward_trace(node)
        raise
    _check(node, outs)
    return outs


def _checked_run_rule(node, g, ops):
    return _guarded(_ORIGINAL["run_rule"], node, g, ops)


def _checked(apply):
    def checked_apply(self, g, ops):
        return _guarded(apply, self, g, ops)

    return checked_apply


def _node_classes_with_apply():
    """Node classes that define their own _apply (the base, CopySlices, custom Functions'
    nodes ...): every way the engine runs a node's derivative. AccumulateGrad only adds."""
    found, stack = [], [function.Node]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "_apply" in cls.__dict__ and cls is not function.AccumulateGrad:
            found.append(cls)
    return found


def _install(on):
    if on and not _APPLY:
        for cls in _node_classes_with_apply():
            _APPLY[cls] = cls.__dict__["_apply"]
            cls._apply = _checked(_APPLY[cls])
    elif not on:
        for cls, apply in _APPLY.items():
            cls._apply = apply
        _APPLY.clear()
    engine._run_rule = _checked_run_rule if on else _ORIGINAL["run_rule"]
    counter = _RecordingCounter(_ORIGINAL["sequence"]) if on else _ORIGINAL["sequence"]
    function._sequence = autograd_meta._sequence = counter


def _set(enabled, check_nan):
    _state["enabled"] = bool(enabled)
    _state["check_nan"] = bool(check_nan)
    _install(_state["enabled"])


def is_anomaly_enabled():
    return _state["enabled"]


def is_anomaly_check_nan_enabled():
    return _state["check_nan"]


class detect_anomaly:
    """Context manager (and decorator) turning anomaly detection on for its block."""

    def __init__(self, check_nan=True):
        self.prev = (_state["enabled"], _state["check_nan"])
        self.check_nan = check_nan
        warnings.warn("anomaly detection is on: backward checks every node and forward "
                      "records stacks, which slows both down; use it for debugging only",
                      UserWarning, stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off at once; used as a context manager, restores the
    previous setting on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_state["enabled"], _state["check_nan"])
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

