"""Errors of the compiler: CompileError for the user's program, InternalError for ours.

A CompileError points at the user's code: it names file:line:col, shows the line and puts a
caret under the column, then says what is wrong and what to write instead.
"""


class CompileError(Exception):
    """The function uses something outside the compilable subset (or types that clash)."""

    def __init__(self, message, filename=None, line=None, col=None, source_line=None):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        super().__init__(self._format())

    def _format(self):
        if self.line is None:
            return self.message
        text = f"{self.filename}:{self.line}:{self.col + 1}: {self.message}"
        if self.source_line is not None:
            stripped = self.source_line.rstrip()
            text += f"\n    {stripped}\n    {' ' * self.col}^"
        return text


class InternalError(RuntimeError):
    """An invariant of adcompile itself failed."""

    def __init__(self, message):
        super().__init__(f"{message} (this is a bug in adcompile; please report it with the "
                         f"function that triggered it)")
