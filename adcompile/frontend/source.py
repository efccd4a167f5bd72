"""Source capture: a function's AST plus the map from AST positions to the user's file.

The source is dedented before parsing, so columns are shifted back by the indentation that
was removed, and line numbers by the function's first line in its file.
"""

import ast
import inspect
import linecache
import textwrap
import weakref

from adcompile.errors import CompileError


class Source:
    """The parsed function and where it lives (`Source.of(fn)` reuses the parse for the same
    code object: the check at decoration, the lowering and every inlined call share it)."""

    _memo = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, fn):
        code = getattr(fn, "__code__", None)
        if code is None:
            return cls(fn)
        source = cls._memo.get(code)
        if source is None or source.fn is not fn:
            source = cls._memo[code] = cls(fn)
        return source

    def __init__(self, fn):
        self.fn = fn
        try:
            lines, first_line = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise CompileError(f"cannot read the source of {getattr(fn, '__name__', fn)!r}: "
                               f"adcompile compiles functions defined in files (not in an "
                               f"interactive prompt, exec() or a C extension)") from e
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.filename = inspect.getsourcefile(fn) or "<unknown>"
        self.first_line = first_line
        module = ast.parse(dedented)
        self.tree = module.body[0]

    def position(self, node):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent
        return line, col

    def error(self, node, message):
        line, col = self.position(node)
        text = linecache.getline(self.filename, line) or None
        return CompileError(message, self.filename, line, col, text)

    def location(self, node):
        line, _ = self.position(node)
        return f"{self.filename}:{line}"
