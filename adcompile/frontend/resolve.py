"""Name resolution for compiled functions: globals, closure cells and builtins."""

import builtins

MISSING = object()


class Namespace:
    """What a free name in the function refers to at compile time."""

    def __init__(self, fn):
        self.globals = fn.__globals__
        self.cells = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.cells[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup(self, name, default=None):
        if name in self.cells:
            return self.cells[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, default)
