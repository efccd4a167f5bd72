"""The front end: Python source -> checked AST -> typed IR (see lower.py)."""

from adcompile.frontend.lower import lower_function  # noqa: F401
