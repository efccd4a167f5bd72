"""The Python backend (see emit.py)."""

from adcompile.backends.python.emit import emit_source, load  # noqa: F401
