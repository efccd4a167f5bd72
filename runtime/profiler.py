"""torch.autograd.profiler: time the eager ops and backward nodes run inside a `with` block.

While a `profile` is active, a Python profile hook (sys.setprofile) watches calls into the
forward kernels (`runtime/ops`, reported as `aten::<name>` like PyTorch's operators) and the
backward engine's node runs (reported under the node's name, `MulBackward0`,
`torch::autograd::AccumulateGrad`). Time spent in a nested recorded call counts towards the
outer call's total but not its self time. Outside the block nothing is hooked and nothing costs.
"""

import collections
import os
import sys
import time

from runtime import engine, function

_OPS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops") + os.sep
_NODE_RUNS = {engine._run_rule.__code__: "node", function.Node._apply.__code__: "self",
              function.AccumulateGrad._apply.__code__: "self",
              engine._accumulate_leaf.__code__: "node"}


def _event_name(frame):
    code = frame.f_code
    role = _NODE_RUNS.get(code)
    if role is not None:
        node = frame.f_locals.get(role)
        return node.name() if node is not None else None
    if (code.co_filename.startswith(_OPS_DIR) and not code.co_name.startswith("_")
            and not code.co_filename.endswith("_core.py")):
        return "aten::" + code.co_name
    return None


class FunctionEventAvg:
    """The calls of one name added up (PyTorch's key_averages() rows); times in µs."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us count={self.count}>")


class EventList(list):
    """Rows of averaged events with PyTorch's `table()` printout."""

    def table(self, sort_by=None, row_limit=100, **kwargs):
        rows = list(self)
        if sort_by:
            key = sort_by if hasattr(FunctionEventAvg("").__class__, sort_by) or \
                sort_by in ("count", "cpu_time_total", "self_cpu_time_total") else "cpu_time_total"
            rows.sort(key=lambda e: getattr(e, key), reverse=True)
        return _format_table(rows[:row_limit] if row_limit and row_limit > 0 else rows, self)

    def __str__(self):
        return self.table()


def _us(value):
    return f"{value / 1000:.3f}ms" if value >= 1000 else f"{value:.3f}us"


def _format_table(rows, everything):
    total_self = sum(e.self_cpu_time_total for e in everything) or 1.0
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    cells = [[e.key, f"{100 * e.self_cpu_time_total / total_self:.2f}%",
              _us(e.self_cpu_time_total), f"{100 * e.cpu_time_total / total_self:.2f}%",
              _us(e.cpu_time_total), _us(e.cpu_time), str(e.count)] for e in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) + 2 for i, h in enumerate(headers)]
    rule = "  ".join("-" * w for w in widths)

    def line(values):
        first = values[0].ljust(widths[0])
        return "  ".join([first] + [v.rjust(w) for v, w in zip(values[1:], widths[1:])])

    body = [rule, line(headers), rule] + [line(c) for c in cells] + [rule]
    return "\n".join(body) + f"\nSelf CPU time total: {_us(total_self)}\n"


class profile:
    """Context manager recording op and node timings: `with profile() as prof: ...`, then
    `print(prof.key_averages().table(sort_by="self_cpu_time_total"))`."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False):
        self.enabled = enabled
        self._totals = collections.OrderedDict()
        self._stack = []
        self._previous = None

    def __enter__(self):
        if self.enabled:
            self._previous = sys.getprofile()
            sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            sys.setprofile(self._previous)
        return False

    def _hook(self, frame, event, arg):
        if event == "call":
            name = _event_name(frame)
            if name is not None:
                self._stack.append([frame, name, time.perf_counter(), 0.0])
        elif event == "return" and self._stack and self._stack[-1][0] is frame:
            _, name, start, children = self._stack.pop()
            elapsed = (time.perf_counter() - start) * 1e6
            row = self._totals.get(name)
            if row is None:
                row = self._totals[name] = FunctionEventAvg(name)
            row.count += 1
            row.cpu_time_total += elapsed
            row.self_cpu_time_total += elapsed - children
            if self._stack:
                self._stack[-1][3] += elapsed

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return EventList(self._totals.values())

    def table(self, *args, **kwargs):
        return self.key_averages().table(*args, **kwargs)

    def __str__(self):
        return self.table()
