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


def _quick_source(fn):
    """(lines, first line, file, parsed module) from the code object's line table, without
    inspect's tokenizer (a few ms per function); None when that is not enough to be sure."""
    code = getattr(fn, "__code__", None)
    filename = getattr(code, "co_filename", None)
    if code is None or not filename or filename.startswith("<"):
        return None
    all_lines = linecache.getlines(filename, fn.__globals__)
    if not all_lines:
        return None
    first = code.co_firstlineno
    last = max(_last_line(code), first)
    # code CPython dropped as unreachable (`return b` after `if -7: return a`) has no
    # position: the function goes on while lines are blank or indented past its `def`
    indent = len(all_lines[first - 1]) - len(all_lines[first - 1].lstrip())
    while last < len(all_lines):
        line = all_lines[last]
        if line.strip() and not line.lstrip().startswith("#") and \
                len(line) - len(line.lstrip()) <= indent:
            break
        last += 1
    while last > first and not all_lines[last - 1].strip():
        last -= 1
    lines = all_lines[first - 1:last]
    try:
        module = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], (ast.FunctionDef,
                                                                ast.AsyncFunctionDef)) or \
            module.body[0].name != fn.__name__:
        return None
    return lines, first, filename, module


def _last_line(code):
    last = code.co_firstlineno
    for position in code.co_positions():
        if position[1] is not None:
            last = max(last, position[1])
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_line(const))
    return last


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

    @classmethod
    def parsed(cls, tree, filename, text):
        """The Source of a function found by parsing its whole file (`adcompile check`):
        `tree`'s positions are already the file's."""
        source = cls.__new__(cls)
        source.fn, source.tree, source.filename, source.text = None, tree, filename, text
        source.first_line, source.indent = 1, 0
        return source

    def __init__(self, fn):
        self.fn = fn
        found = _quick_source(fn)
        if found is None:
            try:
                lines, first_line = inspect.getsourcelines(fn)
                filename = inspect.getsourcefile(fn) or "<unknown>"
            except (OSError, TypeError) as e:
                raise CompileError(f"cannot read the source of "
                                   f"{getattr(fn, '__name__', fn)!r}: adcompile compiles "
                                   f"functions defined in files (not in an interactive prompt, "
                                   f"exec() or a C extension)") from e
            module = ast.parse(textwrap.dedent("".join(lines)))
        else:
            lines, first_line, filename, module = found
        self.text = "".join(lines)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.filename = filename
        self.first_line = first_line
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
