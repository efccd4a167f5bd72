"""Syntax check: refuse everything outside the compilable subset before any IR is built.

Each refused construct gets a located CompileError that says what to write instead. Type
errors (mixing types that do not unify, unknown names...) are found later, while lowering.
"""

import ast

_ADVICE = {
    ast.ClassDef: "define classes outside the compiled function",
    ast.Lambda: "define a named function at module level and call it",
    ast.FunctionDef: "define helper functions at module level; they are compiled when called",
    ast.AsyncFunctionDef: "compiled functions cannot be async",
    ast.GeneratorExp: "write an explicit for loop",
    ast.ListComp: "write an explicit for loop that fills an array (np.empty + x[i] = ...)",
    ast.SetComp: "sets are not supported; use an array",
    ast.DictComp: "dicts are not supported; use arrays",
    ast.Yield: "generators are not supported; fill and return an array instead",
    ast.YieldFrom: "generators are not supported; fill and return an array instead",
    ast.Await: "compiled functions cannot be async",
    ast.Try: "exceptions cannot be caught inside compiled code; check values with if instead",
    ast.With: "with blocks are not supported; move them outside the compiled function",
    ast.AsyncWith: "with blocks are not supported",
    ast.AsyncFor: "async for is not supported",
    ast.Global: "compiled functions cannot assign globals; return the value instead",
    ast.Nonlocal: "compiled functions cannot assign enclosing variables; return the value",
    ast.Delete: "del is not supported; just stop using the variable",
    ast.Import: "import modules at module level, outside the compiled function",
    ast.ImportFrom: "import modules at module level, outside the compiled function",
    ast.Raise: "raise is not supported yet; use assert with a message",
    ast.List: "lists are only supported as arguments (np.array([a, b]), np.stack([x, y])); "
              "use a tuple or a numpy array",
    ast.Dict: "dicts are not supported; use arrays or separate variables",
    ast.Set: "sets are not supported",
    ast.JoinedStr: "strings are not supported in compiled code",
    ast.Starred: "star-unpacking is not supported; unpack elements one by one",
    ast.NamedExpr: "the walrus operator is not supported; assign on its own line",
    ast.Match: "match statements are not supported; use if/elif",
}


def check_function(source):
    """Raise a located CompileError for the first construct outside the subset."""
    fn = source.tree
    if not isinstance(fn, ast.FunctionDef):
        raise source.error(fn, "only plain functions (def) can be compiled")
    _check_arguments(source, fn.args)
    arguments = _list_arguments(fn)
    for node in ast.walk(fn):
        if node is fn or node in arguments:
            continue
        advice = _ADVICE.get(type(node))
        if advice is not None:
            what = type(node).__name__
            raise source.error(node, f"{_describe(what)} is not supported in compiled code: "
                                     f"{advice}")
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if not _is_docstring_or_message(fn, node) and node not in arguments:
                raise source.error(node, "strings are not supported in compiled code (only "
                                         "as a docstring or an assert message)")


def _list_arguments(fn):
    """List displays written as call arguments (and lists nested in them), and strings
    passed directly (dtype="float64"; the call itself decides whether it takes them)."""
    found = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            stack = list(node.args) + [k.value for k in node.keywords]
            while stack:
                arg = stack.pop()
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg)
                if isinstance(arg, (ast.List, ast.Tuple)):
                    if isinstance(arg, ast.List):
                        found.add(arg)
                    stack.extend(arg.elts)
    return found


def _check_arguments(source, args):
    if args.vararg or args.kwarg:
        node = args.vararg or args.kwarg
        raise source.error(node, "*args and **kwargs are not supported: list the parameters "
                                 "explicitly")
    if args.kwonlyargs or args.posonlyargs:
        node = (args.kwonlyargs or args.posonlyargs)[0]
        raise source.error(node, "keyword-only and positional-only parameters are not "
                                 "supported: use plain parameters")
    if args.defaults:
        raise source.error(args.defaults[0], "parameter defaults are not supported yet: pass "
                                             "every argument explicitly")


def _is_docstring_or_message(fn, node):
    first = fn.body[0]
    if isinstance(first, ast.Expr) and first.value is node:
        return True
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assert) and stmt.msg is node:
            return True
    return False


def _describe(name):
    names = {"ListComp": "a list comprehension", "GeneratorExp": "a generator expression",
             "FunctionDef": "a nested function", "Try": "try/except", "With": "a with block",
             "Global": "global", "Nonlocal": "nonlocal", "Lambda": "lambda",
             "ClassDef": "a class definition", "Yield": "yield", "Delete": "del",
             "Import": "import", "ImportFrom": "import", "Raise": "raise", "List": "a list",
             "Dict": "a dict", "Set": "a set", "Starred": "*-unpacking",
             "NamedExpr": ":=", "Slice": "slicing", "JoinedStr": "an f-string",
             "Match": "match", "SetComp": "a set comprehension",
             "DictComp": "a dict comprehension"}
    return names.get(name, name)
