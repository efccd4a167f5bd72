"""Errors of the compiler: CompileError for the user's program, InternalError for ours.

A CompileError points at the user's code: it names file:line:col, shows the line and puts a
caret under the column, then says what is wrong and what to write instead. Any other
exception escaping from the compiler is a bug of ours: `internal_errors` turns it into an
InternalError that says so.
"""

import contextlib
import linecache


class CompileError(Exception):
    """The function uses something outside the compilable subset (or types that clash)."""

    def __init__(self, message, filename=None, line=None, col=None, source_line=None):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(self._format())

    @classmethod
    def at(cls, loc, message):
        """A CompileError at an IR location ("file:line", maybe after "grad of: "), the caret
        under the start of the statement."""
        where = loc[len("grad of: "):] if loc and loc.startswith("grad of: ") else loc
        filename, _, line = (where or "").rpartition(":")
        if not line.isdigit():
            return cls(message)
        text = linecache.getline(filename, int(line))
        return cls(message, filename, int(line), len(text) - len(text.lstrip()), text or None)

    def _format(self):
        if self.line is None:
            return self.message
        text = f"{self.filename}:{self.line}:{self.col + 1}: {self.message}"
        if self.source_line is not None:
            stripped = self.source_line.rstrip()
            text += f"\n    {stripped}\n    {' ' * self.col}^"
        return text


class ArgumentError(TypeError):
    """The arguments cannot be compiled or differentiated as asked (a TypeError that names the
    parameter): the user's mistake, raised as it is through `internal_errors`."""


class InternalError(RuntimeError):
    """An invariant of adcompile itself failed; `during` says what was being compiled."""

    def __init__(self, message, during=None):
        self.message = message
        self.during = during
        where = f"while {during}: " if during else ""
        super().__init__(f"{where}{message} (this is a bug in adcompile; please report it "
                         f"with the function that triggered it)")


@contextlib.contextmanager
def internal_errors(during):
    """Compiler code runs inside this: an exception that is not the user's (a CompileError)
    becomes an InternalError saying what was being done (`during`: the function and its
    signature), with the original exception chained as its cause."""
    try:
        yield
    except (CompileError, ArgumentError, MemoryError):
        raise
    except InternalError as e:
        if e.during is not None:
            raise
        raise InternalError(e.message, during) from e
    except Exception as e:
        raise InternalError(f"{type(e).__name__}: {e}", during) from e
