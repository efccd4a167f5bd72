"""A compiled function may be called anything Python allows, and so may its parameters and
locals: the libm functions and LLVM intrinsics the LLVM backend declares, the C and CPython
symbols it links against, the names the backends generate themselves, every Python builtin,
words other languages reserve, and non-ASCII identifiers.

Each function is generated as source in a real file (the compiler reads the source), then run
and differentiated on every backend: results equal plain Python's (same type; the float32
libm calls may differ from numpy's in the last bit) and gradients equal central differences.

The symbol lists are derived from the LLVM backend's source and the front end's tables, so a
newly declared symbol is covered without editing this file; literal lists are a floor."""

import ast
import builtins
import importlib.util
import inspect
import itertools
import os
import unicodedata

import numpy as np
import pytest

import adcompile as ac
from adcompile.backends.llvm import arrays, capi, entry, linalg, lower, memory, native, values
from adcompile.frontend import calls
from adcompile.ir import prims
from tests.slices import sliced

BACKENDS = ("interp", "python", "llvm")
A, H = 0.375, np.float32(0.625)  # every libm function is defined at both
X = np.array([0.5, -0.25, 1.5, 0.75])

# -- the names ---------------------------------------------------------------------------------

# calls that declare an external function, object or intrinsic; their name is a string
_DECLARING = {"libc", "declare", "symbol", "external", "call_symbol", "intrinsic",
              "declare_intrinsic", "append_basic_block"}


def _callee(func):
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _strings(node):
    return {leaf.value for leaf in ast.walk(node)
            if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str)}


def strings_naming_symbols(module):
    """The string constants in `module`'s source that name symbols, values or blocks: the name
    arguments of the declaring calls (f-string fragments included) and every `name=`."""
    found = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Call):
            if _callee(node.func) in _DECLARING:
                for arg in node.args[:2]:
                    found |= _strings(arg)
            for kw in node.keywords:
                if kw.arg == "name":
                    found |= _strings(kw.value)
    return found


def math_primitives():
    """The primitives the LLVM backend lowers to a libm call or a math intrinsic."""
    return {name for name, rule in lower.RULES.items()
            if getattr(rule, "__name__", "") == "math"}


def _definable(name):
    """A name `def name(...)` accepts (not a keyword, not __debug__)."""
    try:
        compile(f"def {name}(a): pass", "<name>", "exec")
    except SyntaxError:
        return False
    return name.isidentifier()


_RAW = set().union(*(strings_naming_symbols(m) for m in (lower, entry, native, arrays,
                                                           linalg, memory, values)))
INTRINSICS = {s[len("llvm."):] for s in _RAW if s.startswith("llvm.")}
LIBM = math_primitives() | INTRINSICS
DERIVED = (LIBM | {n + "f" for n in LIBM} | {s.removeprefix("llvm.") for s in _RAW}
           | set(capi.symbols()))
FLOOR = set("""
    sin cos tan exp log log1p expm1 sqrt tanh sinh cosh asin acos atan atan2 hypot fmod copysign
    erf erfc log2 log10 floor ceil trunc round roundeven fabs pow sinf tanhf expf powf fabsf
    malloc free realloc calloc memcpy memset memmove main abort exit printf puts
    Py_IncRef Py_DecRef PyErr_Format PyErr_Occurred PyErr_NoMemory PyFloat_FromDouble
    PyLong_FromLongLong PyLong_AsLongLong PyTuple_New PyTuple_SetItem PyObject_CallFunction
    PyEval_SaveThread PyEval_RestoreThread PyArray_Empty PyArray_Zeros PyArray_Scalar
    PyExc_IndexError PyExc_ValueError PyExc_ZeroDivisionError PyExc_OverflowError
    adc_own adc_miss adc_none adc_true adc_descr_f64 adc_PyArray_Empty adc_make_view
    adc_lapack_dgetrf adc_lapack_dgetrs adc_lapack_sgetrf adc_lapack_sgetrs
    entry kernel tanh_entry main_entry status ctx out cleanup body np math _erf _Tape
""".split())
NON_ASCII = ["größe", "δx", "λ", "変数", "µ", "ﬁt"]  # µ and ﬁ are NFKC-normalised by Python
BUILTINS = {n for n in dir(builtins) if _definable(n)}
FUNCTION_NAMES = sorted(n for n in DERIVED | FLOOR | BUILTINS if _definable(n)) + NON_ASCII


def test_the_derived_lists_are_complete():
    """The derivation finds what the backend is known to declare (if the source moves, the
    derivation must follow, or new symbols would silently go untested)."""
    assert {"free", "realloc", "Py_IncRef", "Py_DecRef", "PyErr_Format", "PyFloat_FromDouble",
            "PyTuple_New", "PyEval_SaveThread", "fabs", "memset", "pow", "roundeven"} <= DERIVED
    assert {"tanh", "tanhf", "sin", "sinf", "atan2", "erfc", "adc_float_type"} <= DERIVED
    assert "print" in BUILTINS and "__import__" in BUILTINS and "__debug__" not in BUILTINS
    assert len(FUNCTION_NAMES) > 250


# -- the functions -----------------------------------------------------------------------------

def _arity(prim):
    return 2 if prim in prims.BINARY_MATH or prim == "pow" else 1


def family_expressions():
    """prim -> expressions that call it: math.f(a) (float), np.f(b) (float64) and np.f(h)
    (float32: libm's f + 'f'), for every math and numpy function the front end lowers."""
    family = {}
    for table, module, operands in ((calls.MATH, "{m}", ("a",)),
                                    (calls.NUMPY, "{n}", ("b", "h"))):
        for fn, (prim, _) in table.items():
            for x in operands:
                args = ", ".join([x, "0.75"][:_arity(prim)])
                family.setdefault(prim, []).append(f"{module}.{fn.__name__}({args})")
    return family


FAMILY = family_expressions()
# a symbol -> the primitive whose lowering calls it
SYMBOL_PRIM = {**{p: p for p in FAMILY}, **{p + "f": p for p in FAMILY},
               "fabs": "abs", "fabsf": "abs", "powf": "pow"}


def test_every_math_primitive_is_reached_by_an_expression():
    assert math_primitives() - set(FAMILY) <= {"round"}  # no Python call lowers to round


# statements of every function: (builtins they call by name, the statement); a function named
# after one of those builtins leaves the statement out (in Python it would call itself)
GENERIC = [
    ((), "b = {n}.float64(a)"),
    ((), "s = {m}.sin(a) * {m}.exp(a) + {n}.tanh(b) + a ** 1.5"),
    ((), "t = {n}.sin(h) + {n}.exp(h) * {n}.tanh(h) + h ** 2"),
    ((), "z = {n}.zeros(3)"),
    ((), "z[1] = a"),
    (("range", "min", "max"), "for k in range(3):\n    s = s + min(a, 1) * k + max(z[1], 0.5)"),
    (("len",), "s = s + len(z) * a"),
    ((), "if s:\n    s = s * 0.5"),
    (("float",), "s = s + float(t)"),
]
LOCALS = {"a", "h", "b", "s", "t", "z", "k"}


def function_source(name):
    """`def name(a, h)`: generic code, plus calls of the math function `name` names, if any."""
    m, n = ("math_" if name == "math" else "math"), ("np_" if name == "np" else "np")
    lines = [line for uses, line in GENERIC if name not in uses]
    for expr in FAMILY.get(SYMBOL_PRIM.get(name), []):
        target = "t" if expr.endswith("(h)") or "(h, " in expr else "s"
        lines.insert(3, f"{target} = {target} + {expr}")
    body = "\n".join(lines + ["return s"]).format(m=m, n=n)
    header = ("import math" + " as math_" * (m != "math") + "\n"
              + "import numpy as " + n + "\n\n\n")
    return header + f"def {name}(a, h):\n" + "".join(f"    {line}\n" for line in body.splitlines())


_counter = itertools.count()
_loaded = {}


def load(source, name, directory):
    """The function `name` defined by `source`, written to a file in `directory`."""
    key = (source, name)
    if key not in _loaded:
        path = directory / f"symbol_names_{next(_counter)}.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[key] = getattr(module, unicodedata.normalize("NFKC", name))
    return _loaded[key]


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("symbol_names")


# -- checks ------------------------------------------------------------------------------------

def same_value(got, expected, rtol=1e-6):
    assert type(got) is type(expected), (got, expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0)


def central_difference(fn, args, argnum, eps=1e-6):
    def at(delta):
        moved = list(args)
        moved[argnum] = moved[argnum] + delta
        return float(fn(*moved))

    return (at(eps) - at(-eps)) / (2 * eps)


_references = {}


def _reference_gradient(name, fn):
    if name not in _references:
        _references[name] = ac.grad(ac.adcompile(fn, backend="interp"))(A, H)
    return _references[name]


# the LLVM backend declares the DERIVED and FLOOR symbols: those names are where a native
# collision can happen, and are tried on every backend (CI: the FLOOR and non-ASCII names and
# every other derived one natively; --full all of them); the other Python builtins (a clash
# is a Python-level one) go to LLVM too only with ADCOMPILE_SYMBOL_NAMES_FULL=1 (0.2 s each)
FULL = bool(os.environ.get("ADCOMPILE_SYMBOL_NAMES_FULL"))
NAMED = [(name, backend) for name in FUNCTION_NAMES for backend in BACKENDS
         if backend != "llvm" or FULL or name in DERIVED | FLOOR or name in NON_ASCII]
_SLICED = [c for c in NAMED if c[1] == "llvm" and c[0] not in FLOOR and c[0] not in NON_ASCII]
NAMED = [c for c in NAMED if c not in _SLICED] + sliced(_SLICED, every=2)


@pytest.mark.parametrize("name,backend", NAMED)
def test_function_named(name, backend, directory):
    assert name not in LOCALS
    fn = load(function_source(name), name, directory)
    expected = fn(A, H)
    compiled = ac.adcompile(fn, backend=backend)
    same_value(compiled(A, H), expected)
    gradient = ac.grad(compiled)(A, H)
    assert type(gradient) is type(_reference_gradient(name, fn))
    np.testing.assert_allclose(gradient, central_difference(fn, (A, H), 0), rtol=1e-6)


# -- parameters and locals ---------------------------------------------------------------------

# each name is, in turn, the float parameter, the array parameter and a local of one function
ROLE_NAMES = [
    "main", "free", "malloc", "status", "ctx", "out", "entry", "int32", "double", "void",
    "define", "declare", "label", "ptr", "i64", "float", "global", "größe", "δx", "λ", "変数",
    "np", "math", "_erf", "_Tape", "kernel", "cleanup", "self", "args", "nargs", "tape",
    "out_bar", "x", "x_bar", "x_dim0", "t", "t_1", "int", "bool", "abs", "min", "max",
    "adc_true", "Py_DecRef", "tanh", "sin",
]
ROLE_NAMES = [n for n in ROLE_NAMES if _definable(n)]  # "global" is a Python keyword

ROLES_BODY = """\
def roles({p}, {arr}):
    {loc} = {p} * 2.0 + {m}.sin({p})
    step_ = 0
    while step_ < {arr}.shape[0]:
        {loc} = {loc} + {arr}[step_] * {m}.tanh({loc})
        if {loc}:
            {loc} = {loc} * 0.5
        step_ += 1
    if {p} < {m}.inf:
        {loc} = {loc} + 1.0
    return {loc}
"""


def roles_source(p, arr, loc):
    m = "math_" if "math" in (p, arr, loc) else "math"
    header = "import math" + " as math_" * (m != "math") + "\n\n\n"
    return header + ROLES_BODY.format(p=p, arr=arr, loc=loc, m=m)


ROLES = [tuple(ROLE_NAMES[(k + j) % len(ROLE_NAMES)] for j in range(3))
         for k in range(len(ROLE_NAMES))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("p,arr,loc", ROLES, ids=["-".join(r) for r in ROLES])
def test_parameters_and_locals_named(p, arr, loc, backend, directory):
    fn = load(roles_source(p, arr, loc), "roles", directory)
    expected = fn(A, X)
    compiled = ac.adcompile(fn, backend=backend)
    same_value(compiled(A, X), expected, rtol=1e-13)
    g_p, g_arr = ac.grad(compiled, argnums=(0, 1))(A, X)
    np.testing.assert_allclose(g_p, central_difference(fn, (A, X), 0), rtol=1e-6)
    for k in range(len(X)):
        e = np.zeros_like(X)
        e[k] = 1e-6
        fd = (fn(A, X + e) - fn(A, X - e)) / 2e-6
        np.testing.assert_allclose(g_arr[k], fd, rtol=1e-6, atol=1e-9)
