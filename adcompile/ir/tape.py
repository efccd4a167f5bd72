"""The run-time tape used by reverse-mode programs on the interpreter and the Python backend:
a typed, growable numpy buffer (amortised doubling), so N pushed scalars cost O(N) machine
words and no Python object per element is kept (object values, such as array views, use an
object buffer)."""

import numpy as np

_DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}


class Tape:
    __slots__ = ("buffer", "top", "convert")

    def __init__(self, item_dtype, capacity=16):
        self.buffer = np.empty(capacity, _DTYPES.get(item_dtype, object))
        self.top = 0
        self.convert = None

    def reserve(self, start, stop, step):
        """Room for one push per iteration of range(start, stop, step), allocated once."""
        needed = self.top + len(range(start, stop, step))
        if needed > len(self.buffer):
            grown = np.empty(needed, self.buffer.dtype)
            grown[: self.top] = self.buffer[: self.top]
            self.buffer = grown

    def push(self, value):
        if self.top == len(self.buffer):
            grown = np.empty(2 * len(self.buffer), self.buffer.dtype)
            grown[: self.top] = self.buffer
            self.buffer = grown
        self.buffer[self.top] = value
        self.top += 1

    def pop(self):
        self.top -= 1
        return self.buffer[self.top]
