"""The command line: `python -m adcompile` (or the `adcompile` script).

    adcompile show FILE.py:FUNC --args 'np.ones(3), 2.0' [--stage ir|python|grad|jvp|llvm|asm]
    adcompile check FILE.py [FILE.py ...]
    adcompile cache info|clear

`show` imports FILE.py as a module (code under `if __name__ == "__main__":` does not run),
evaluates --args with the module's globals plus np/numpy/math, and prints one stage of FUNC
compiled for those arguments' signature. FUNC may be an @adcompile function, a plain function
(compiled with the default options) or a transform such as `value_and_grad(f)` (its derivative
program is what ir/python/llvm/asm show). `grad` and `jvp` differentiate with respect to every
float argument unless --argnums says otherwise (jvp with tangents of ones).

`check` never runs the file: it parses it, finds every function decorated with @adcompile
(however it is spelled: `adcompile`, `ac.adcompile`, an alias from `from adcompile import
adcompile as jit`, with or without options) and runs the check done at decoration, printing
each refusal with its location. The exit status is 1 when any function is refused.

`cache info` prints where the on-disk cache is and what it holds; `cache clear` empties it.
Errors of the user's program (CompileError, a bad --args) exit with status 1 and a message,
not a traceback.
"""

import argparse
import ast
import importlib
import importlib.util
import math
import os
import sys

import numpy as np

from adcompile import api, cache
from adcompile.errors import CompileError
from adcompile.frontend import check as subset
from adcompile.frontend.source import Source


class UsageError(Exception):
    """A mistake on the command line: printed without a traceback, exit status 1."""


# -- show ------------------------------------------------------------------------------------

def _differentiated(args, argnums):
    if argnums is not None:
        return tuple(int(i) for i in argnums.split(",") if i.strip())
    nums = tuple(i for i, a in enumerate(args) if api._differentiable_value(a))
    if not nums:
        raise UsageError("no float argument to differentiate: pass float scalars or arrays, "
                         "or name them with --argnums")
    return nums


def _jvp_source(f, args, argnums):
    nums = _differentiated(args, argnums)
    tangents = tuple(np.ones_like(a) if i in nums else None for i, a in enumerate(args))
    return api.jvp_source(f, args, tangents)


STAGES = {
    "ir": lambda f, args, argnums: f.ir(*args),
    "python": lambda f, args, argnums: f.source(*args),
    "grad": lambda f, args, argnums: api.grad(f, _differentiated(args, argnums)).source(*args),
    "jvp": _jvp_source,
    "llvm": lambda f, args, argnums: f.llvm_ir(*args),
    "asm": lambda f, args, argnums: f.asm(*args),
}


def load_file(path):
    """Import FILE.py as a module named after it, unless that name is taken (its folder goes
    first on sys.path, so its own imports work); a dotted module name is imported as it is."""
    if not path.endswith(".py"):
        return importlib.import_module(path)
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    path = os.path.abspath(path)
    name = os.path.splitext(os.path.basename(path))[0]
    loaded = sys.modules.get(name)
    if loaded is not None:
        if _same_file(getattr(loaded, "__file__", None), path):
            return loaded  # imported already (a second copy would have other function objects)
        name = f"adcompile_show_{name}"  # a file named like a module in use must not hide it
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so that its functions pickle and its imports find it
    spec.loader.exec_module(module)
    return module


def _same_file(a, b):
    try:
        return a is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _target(text):
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"expected FILE.py:FUNCTION, not {text!r}")
    module = load_file(path)
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{path} has no {name!r}")
        obj = getattr(obj, part)
    if isinstance(obj, (api.CompiledFunction, api._Transformed)):
        return module, obj
    if callable(obj) and hasattr(obj, "__code__"):
        return module, api.adcompile(obj)
    raise UsageError(f"{name} is a {type(obj).__name__}, not a function")


def _arguments(text, module):
    namespace = {"np": np, "numpy": np, "math": math}
    namespace.update(vars(module))
    try:
        value = eval(f"({text},)", namespace)  # the user's own expression, as python -c runs it
    except Exception as e:
        raise UsageError(f"cannot evaluate --args {text!r}: {type(e).__name__}: {e}") from None
    return tuple(value)


def show(options):
    module, f = _target(options.target)
    args = _arguments(options.args, module)
    print(STAGES[options.stage](f, args, options.argnums), end="")
    return 0


# -- check -----------------------------------------------------------------------------------

def _decorator_names(tree):
    """Names under which this module can refer to the decorator adcompile.adcompile."""
    names = {"adcompile"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "adcompile":
            names.update(a.asname or a.name for a in node.names if a.name == "adcompile")
    return names


def _is_adcompile(decorator, names):
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Name):
        return decorator.id in names
    return isinstance(decorator, ast.Attribute) and decorator.attr == "adcompile"


def compiled_functions(path):
    """(FunctionDef, Source) of every function decorated with @adcompile in the file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text, path)
    names = _decorator_names(tree)
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                any(_is_adcompile(d, names) for d in node.decorator_list):
            text = "".join(lines[node.lineno - 1:node.end_lineno])
            yield node, Source.parsed(node, path, text)


def check(options):
    found = refused = 0
    for path in options.files:
        if not os.path.isfile(path):
            raise UsageError(f"no such file: {path}")
        for node, source in compiled_functions(path):
            found += 1
            where = f"{path}:{node.lineno}: {node.name}"
            try:
                subset.check_function(source)
            except CompileError as e:
                refused += 1
                print(f"{where}: refused\n{e}\n")
            else:
                print(f"{where}: ok")
    what = "compiled function" if found == 1 else "compiled functions"
    print(f"{found} {what} checked, {refused} refused")
    return 1 if refused else 0


# -- cache -----------------------------------------------------------------------------------

def _megabytes(n):
    return f"{n / 1e6:.1f} MB"


def cache_command(options):
    directory = cache.cache_dir()
    if directory is None:
        print("the compile cache is off (ADCOMPILE_CACHE_DIR=off)")
        return 0
    if options.action == "clear":
        count, size = cache.clear()
        print(f"removed {count} entries ({_megabytes(size)}) from {directory}")
        return 0
    counts = cache.summary()
    print(f"directory: {directory}")
    for suffix, label in (("o", "object code"), ("ir", "IR"), ("so", "BLAS copy")):
        count, size = counts.get(suffix, (0, 0))
        if count or suffix != "so":
            print(f"{label + ':':13} {count} entries, {_megabytes(size)}")
    return 0


# -- the parser ------------------------------------------------------------------------------

def parser():
    p = argparse.ArgumentParser(prog="adcompile", description="Look at, check and manage "
                                "adcompile's compiled functions.")
    commands = p.add_subparsers(dest="command", required=True)
    s = commands.add_parser("show", help="print one stage of a function compiled for a "
                            "signature")
    s.add_argument("target", metavar="FILE.py:FUNC")
    s.add_argument("--args", required=True, help="Python expression of the arguments, e.g. "
                   "'np.ones(3), 2.0' (np, numpy, math and the file's globals are defined)")
    s.add_argument("--stage", choices=sorted(STAGES), default="ir")
    s.add_argument("--argnums", help="for grad/jvp: comma-separated argument indices "
                   "(default: every float argument)")
    s.set_defaults(run=show)
    c = commands.add_parser("check", help="report every @adcompile function that would be "
                            "refused (exit status 1 if any)")
    c.add_argument("files", nargs="+", metavar="FILE.py")
    c.set_defaults(run=check)
    k = commands.add_parser("cache", help="the on-disk compile cache")
    k.add_argument("action", choices=("info", "clear"))
    k.set_defaults(run=cache_command)
    return p


def main(argv=None):
    options = parser().parse_args(argv)
    try:
        return options.run(options)
    except (UsageError, CompileError, TypeError, ValueError) as e:  # the user's, not ours
        print(f"adcompile: error: {e}", file=sys.stderr)
        return 1
