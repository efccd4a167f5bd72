"""A fingerprint of everything lowering a function reads, for the on-disk IR cache.

Lowering reads the function's source (and where it stands in its file: the IR's locations
name lines), and resolves free names through the function's closure, its module's globals
and the builtins, following attribute chains from them (`np.sin`, `config.SCALE`,
`Limits.MAX`). Functions it finds there are inlined, so their own source and free names count
too, recursively.

The fingerprint walks the same paths in the AST: every free name, and every attribute chain
that starts at one, is resolved as lowering would and the value it reaches is described:
numbers by type and repr, modules by name, functions the compiler knows (math, numpy, the
builtins it lowers) by qualified name, other Python functions by their own fingerprint. Where
a value has no description that is stable across processes (an object of some class, an
array), `fingerprint` returns None and the function is simply not cached at this stage.
"""

import ast
import hashlib
import types

import numpy as np

from adcompile.frontend import calls, resolve
from adcompile.frontend.source import Source

_NUMBERS = (bool, int, float, complex, str, type(None))


class _Unstable(Exception):
    pass


def fingerprint(fn):
    """A hex digest of the source and free-name values `fn`'s lowering reads, or None."""
    parts = []
    try:
        _function(fn, parts, set())
    except Exception:  # _Unstable, unreadable source, an attribute that raises: not cached
        return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _function(fn, parts, seen):
    code = fn.__code__
    parts.append(f"function {fn.__module__}.{fn.__qualname__}")
    if code in seen:  # recursion is a CompileError later; here, describe it once
        return
    seen.add(code)
    source = Source.of(fn)
    parts += [source.filename, str(source.first_line), source.text]
    namespace = resolve.Namespace(fn)
    local = set(code.co_varnames) | set(code.co_cellvars)
    for chain in _free_chains(source.tree, local):
        value = namespace.lookup(chain[0], resolve.MISSING)
        parts.append(chain[0])
        _describe(value, parts, seen)
        for attr in chain[1:]:  # lowering reads the attribute of whatever the chain reached
            value = getattr(value, attr, resolve.MISSING)
            parts.append("." + attr)
            _describe(value, parts, seen)


def _free_chains(tree, local):
    """(name, attr, attr, ...) for every free name read in `tree`, with the attribute chain
    that follows it where there is one."""
    chains = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attrs = []
            base = node
            while isinstance(base, ast.Attribute):
                attrs.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id not in local:
                chains.add((base.id, *reversed(attrs)))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and \
                node.id not in local:
            chains.add((node.id,))
    return sorted(chains)


def _describe(value, parts, seen):
    if value is resolve.MISSING:
        parts.append("missing")
    elif isinstance(value, _NUMBERS) or isinstance(value, np.generic):
        parts.append(f"{type(value).__qualname__} {value!r}")
    elif isinstance(value, tuple):
        parts.append("tuple")
        for item in value:
            _describe(item, parts, seen)
    elif isinstance(value, types.ModuleType):
        parts.append(f"module {value.__name__}")
    elif _known(value):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        parts.append(f"known {getattr(value, '__module__', None)}.{name}")
    elif isinstance(getattr(value, "__wrapped__", None), types.FunctionType):
        _function(value.__wrapped__, parts, seen)  # a compiled function: its Python function
    elif isinstance(value, types.FunctionType):
        _function(value, parts, seen)
    else:
        raise _Unstable(value)


def _known(value):
    """Functions and types the compiler lowers itself (never inlines)."""
    if isinstance(value, (type, np.ufunc, types.BuiltinFunctionType)):
        return True
    try:
        return value in calls.KNOWN
    except TypeError:  # unhashable
        return False

