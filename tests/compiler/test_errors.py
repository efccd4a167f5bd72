"""Bad input gets a clear, located error: CompileError with file:line:col, the line and a
caret for programs outside the subset; TypeError naming the parameter for arguments that
cannot be compiled."""

import inspect

import numpy as np
import pytest

from adcompile import CompileError, adcompile
from tests.compiler import bad_programs as bad

V = np.arange(4.0)

# function, arguments, a phrase the message must contain, the text under the caret
CASES = [
    (bad.uses_class, (1.0,), "class definition", "class A"),
    (bad.uses_lambda, (1.0,), "lambda", "lambda v"),
    (bad.uses_nested_function, (1.0,), "nested function", "def inner"),
    (bad.uses_list_comprehension, (3,), "list comprehension", "[v for"),
    (bad.uses_generator, (1,), "yield", "yield x"),
    (bad.uses_try, (1.0,), "try/except", "try:"),
    (bad.uses_with, (1.0,), "with block", "with open"),
    (bad.uses_global_statement, (1.0,), "global", "global GLOBAL_LIST"),
    (bad.uses_varargs, (1.0,), "*args", "xs"),
    (bad.uses_kwargs, (), "**kwargs", "kw"),
    (bad.uses_default, (1.0,), "defaults", "2"),
    (bad.uses_list_literal, (1.0,), "a list", "[x, x]"),
    (bad.uses_dict, (1.0,), "a dict", "{"),
    (bad.uses_fstring, (1.0,), "f-string", 'f"'),
    (bad.uses_unknown_name, (1.0,), "'undefined_name' is not defined", "undefined_name"),
    (bad.uses_global_list, (1.0,), "the global 'GLOBAL_LIST' is a list", "GLOBAL_LIST"),
    (bad.uses_string_call, (1.0,), "strings are not supported", '"abc"'),
    (bad.uses_print, (1.0,), "calling print() is not supported", "print"),
    (bad.recursive, (3,), "recursion", "recursive(n - 1)"),
    (bad.mismatched_types, (1.0,), "'y' is a f64[:] on one path and a float", "if x > 0"),
    (bad.returns_or_falls, (1.0,), "reach its end without one", "def returns_or_falls"),
    (bad.maybe_undefined, (1.0,), "'y' is not assigned on every path", "y"),
    (bad.slices, (V,), "slice bounds must be integers", "1.5"),
    (bad.float_index, (V,), "indices must be integers", "1.5"),
    (bad.too_many_indices, (V,), "too many indices", "x[0, 1]"),
    (bad.bad_range, (2.5,), "range() needs integers", "x"),
    (bad.uses_raise, (1.0,), "raise", "raise"),
    (bad.uses_walrus, (1.0,), ":=", "y := x"),
    (bad.uses_del, (1.0,), "del", "del y"),
    (bad.uses_import, (1.0,), "import", "import os"),
    (bad.uses_starred, ((1.0, 2.0),), "*-unpacking", "*b"),
    (bad.uses_bitwise, (3,), "& needs booleans or integers", "x & 1.5"),
    (bad.iterates_over_scalar, (1.0,), "for loops run over range", "x"),
    (bad.array_plus_array, (V,), "@ needs an array", "x @ 2.0"),
    (bad.unsupported_math, (3,), "calling factorial() is not supported", "math.factorial"),
    (bad.store_to_scalar, (1.0,), "an index assignment needs an array", "x[0] = 1.0"),
    (bad.loop_type_clash, (3,), "'v' starts the loop as a float", "for i in range(n)"),
    (bad.subtracts_numpy_bools, (V > 1,), "numpy booleans cannot be subtracted",
     "mask[0] - mask[1]"),
]


@pytest.mark.parametrize("fn,args,phrase,under_caret", CASES,
                         ids=[c[0].__name__ for c in CASES])
def test_located_compile_error(fn, args, phrase, under_caret):
    with pytest.raises(CompileError) as info:
        adcompile(fn)(*args)
    err = info.value
    text = str(err)
    assert phrase in text
    source_file = inspect.getsourcefile(bad)
    assert err.filename == source_file and err.line is not None
    assert text.startswith(f"{source_file}:{err.line}:{err.col + 1}: ")
    line, caret = text.splitlines()[1:3]
    assert line.strip() == err.source_line.strip()
    assert caret.index("^") == line.index(line.strip()) + (err.col - _indent(err.source_line))
    assert err.source_line[err.col:].startswith(under_caret)


def _indent(line):
    return len(line) - len(line.lstrip())


def test_enough_bad_programs():
    assert len(CASES) >= 25


@pytest.mark.parametrize("value,what", [([1.0, 2.0], "list"), ({"a": 1}, "dict"),
                                        ("text", "str"), (object(), "object"),
                                        (np.array(["a"]), "ndarray of dtype <U1"),
                                        (np.zeros(2, dtype=complex), "complex128"),
                                        (np.zeros(2, dtype=object), "object")])
def test_uncompilable_argument_is_a_type_error_naming_the_parameter(value, what):
    def f(x, weights):
        return x

    with pytest.raises(TypeError, match=r"parameter 'weights' got a .*" + what.split()[-1]):
        adcompile(f)(1.0, value)


def test_wrong_argument_count():
    def f(x):
        return x

    with pytest.raises(TypeError, match="takes 1 arguments but 2 were given"):
        adcompile(f)(1.0, 2.0)


def test_runtime_index_error_and_assert():
    with pytest.raises(IndexError):
        adcompile(bad.store_to_scalar)(np.zeros(0))
    from tests.compiler.corpus import assert_positive

    with pytest.raises(AssertionError, match="x must be positive"):
        adcompile(assert_positive)(-1.0)


def test_new_dtype_is_a_new_signature():
    from tests.compiler.corpus import array_sum

    f = adcompile(array_sum)
    assert f(np.ones(3)) == 3.0
    assert f(np.ones(3, dtype=np.float32)) == 3.0
    assert f(np.ones((2,)).astype(np.int64)) == 2.0
    assert len(f._cache) == 3
