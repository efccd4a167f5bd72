"""Pickling compiled functions by reference, so pools and clusters can carry them.

No machine code travels. A CompiledFunction pickles as the address of its Python function
(module and qualified name) and its options; a transform (`grad`, `value_and_grad`, and
transforms of transforms) as the object it transforms and its `argnums`. Unpickling imports
the module and looks the function up there: in the pickling process that gives back the very
object, with everything it has compiled; in another process a CompiledFunction whose first call
finds its IR and object code in the on-disk cache when the cache directory is shared (same
source, same options, same machine), so nothing is compiled again. Objects rebuilt in one
process are kept (weakly), so a worker unpickling the same function for every task reuses
one object and its compiled code.

A function that cannot be found again by name gets a `FunctionNotFound` (a
`pickle.PicklingError`, and an `UnpicklingError` when it is only found missing on the receiving
side) that names it and says what to do: lambdas, functions defined inside other functions,
names rebound since, and functions of a `__main__` module the receiving process does not share.
"""

import importlib
import pickle
import sys
import weakref

_ADVICE = ("compiled functions are pickled by reference: define the function with `def` at "
           "the top level of a module that the receiving process can import (for a Dask "
           "cluster, ship that module to the workers, e.g. with client.upload_file)")

# what this process rebuilt, by what it was rebuilt from
_LIVE = weakref.WeakValueDictionary()


class FunctionNotFound(pickle.PicklingError, pickle.UnpicklingError):
    """A compiled function's Python function cannot be found by its module and name."""


def reduce_compiled(cf):
    """CompiledFunction.__reduce__: the function's address and the options. The object is
    remembered, so unpickling in this process gives it back."""
    address = _address(cf.fn)
    settings = (cf.backend, cf.verify, _flags(cf.options))
    _LIVE.setdefault((cf.fn, *settings), cf)
    return _compiled, (address, *settings)


def reduce_transformed(transform):
    """grad / value_and_grad objects: what they transform, argnums and whether with value."""
    args = (transform.cf, transform.argnums, transform.with_value)
    try:
        _LIVE.setdefault(("transform", *args), transform)
    except TypeError:  # argnums that cannot be hashed
        pass
    return _transformed, args


def _flags(options):
    return None if options is None else (options.fastmath, options.boundscheck,
                                         options.parallel)


def _address(fn):
    """(module, qualname) under which `fn` can be imported; FunctionNotFound otherwise."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or repr(fn)
    problem = _unlocatable(qualname)
    if problem is None and module is not None:
        try:
            found = _find(module, qualname)
        except (ImportError, AttributeError):
            problem = f"it is not found as {module}.{qualname}"
        else:
            if not _wraps(found, fn):
                problem = f"{module}.{qualname} is now another object (the name was rebound)"
    elif problem is None:
        problem = "it has no module"
    if problem is not None:
        raise FunctionNotFound(f"cannot pickle compiled function {qualname!r} "
                               f"({_where(fn)}): {problem}; {_ADVICE}")
    return module, qualname


def _unlocatable(qualname):
    if "<lambda>" in qualname:
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside another function (a closure)"
    return None


def _where(fn):
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "no source"


def _find(module, qualname):
    obj = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _wraps(found, fn):
    """Whether `found` is `fn`, or a compiled function, transform or decorator wrapping it."""
    for _ in range(16):
        if found is fn:
            return True
        found = getattr(found, "fn", None) or getattr(found, "__wrapped__", None)
        if found is None:
            return False
    return False


def _python_function(found):
    while not hasattr(found, "__code__"):
        found = getattr(found, "fn", None) or found.__wrapped__
    return found


def _compiled(address, backend, verify, flags):
    """Unpickle a CompiledFunction: the object found at `address` when its options are the
    same, else one made here (once per process)."""
    from adcompile.api import CompiledFunction

    module, qualname = address
    try:
        found = _find(module, qualname)
    except (ImportError, AttributeError) as e:
        raise FunctionNotFound(_missing(module, qualname, e)) from None
    if isinstance(found, CompiledFunction) and \
            (found.backend, found.verify, _flags(found.options)) == (backend, verify, flags):
        return found
    fn = _python_function(found)
    key = (fn, backend, verify, flags)
    cf = _LIVE.get(key)
    if cf is None:
        fastmath, boundscheck, parallel = flags or (False, True, True)
        cf = _LIVE[key] = CompiledFunction(fn, backend, verify, fastmath, boundscheck,
                                           parallel)
    return cf


def _missing(module, qualname, error):
    if module == "__main__":
        main = getattr(sys.modules.get("__main__"), "__file__", "an interactive session")
        reason = (f"it was defined in the __main__ module of the process that pickled it, and "
                  f"this process's __main__ ({main}) has no {qualname!r}")
    else:
        reason = f"{module}.{qualname} cannot be imported here ({error})"
    return f"cannot unpickle compiled function {qualname!r}: {reason}; {_ADVICE}"


def _transformed(inner, argnums, with_value):
    """Unpickle grad / value_and_grad of `inner` (once per process and inner object)."""
    from adcompile.api import _Transformed

    key = ("transform", inner, argnums, with_value)
    try:
        transform = _LIVE.get(key)
    except TypeError:  # argnums that cannot be hashed: no reuse
        return _Transformed(inner, argnums, with_value)
    if transform is None:
        transform = _LIVE[key] = _Transformed(inner, argnums, with_value)
    return transform
