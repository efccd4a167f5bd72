"""Bad array programs get the error a user can act on (issue 11).

- Mistakes visible at compile time are a CompileError at the user's file and line (the line
  of the offending expression, found from its text in tests/compiler/array_bad_programs.py),
  whose message has a few key words: the function it refuses, the nearest supported spelling,
  'axis'. They are checked on the default backend only: the front end and AD refuse them
  before any backend runs.
- Mistakes that depend on the arguments raise what numpy raises (ValueError, IndexError,
  LinAlgError) on every backend; native code names the user's file:line in the message, as it
  does for an out-of-range index in scalar code.

Cases that do not behave yet are listed in NOT_YET ("name" or "name/backend") and xfail
strictly. ADCOMPILE_IGNORE_NOT_YET=1 runs them all, to recompute the list.
"""

import inspect
import os

import numpy as np
import pytest

import adcompile as ac
from adcompile import CompileError
from tests.compiler import array_bad_programs as bad

SOURCE_FILE = inspect.getsourcefile(bad)
BACKENDS = ("interp", "python", "llvm")
V3 = np.arange(3.0)
M22 = np.array([[1.0, 2.0], [3.0, 4.0]])
M23 = np.arange(6.0).reshape(2, 3) * 0.25
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])

NOT_YET = set()

# function, arguments, "call" or "grad", key words (a tuple: any one of them), the offending
# text (its line is where the error must point)
COMPILE_ERRORS = [
    (bad.static_broadcast, (1.0,), "call", ["broadcast"], "a + b"),
    (bad.static_matmul, (1.0,), "call", [("@", "matmul")], "@"),
    (bad.static_dot, (1.0,), "call", [("dot", "3 and 4", "(3,) and (4,)")], "np.dot(u, v)"),
    (bad.static_concatenate, (1.0,), "call", ["concatenate"], "np.concatenate"),
    (bad.static_stack, (1.0,), "call", ["stack"], "np.stack"),
    (bad.static_reshape, (1.0,), "call", ["reshape", "6"], "reshape(4, 2)"),
    (bad.static_where, (1.0,), "call", [("broadcast", "where")], "np.where"),
    (bad.static_slice_store, (1.0,), "call", [("broadcast", "shape")], "a[1:] = "),
    (bad.static_solve, (1.0,), "call", ["solve"], "np.linalg.solve"),
    (bad.sum_axis_out_of_range, (V3,), "call", ["axis 2"], "np.sum(x, axis=2)"),
    (bad.mean_axis_tuple_out_of_range, (M22,), "call", ["axis"], "X.mean"),
    (bad.argmax_negative_axis_out_of_range, (M22,), "call", ["axis"], "np.argmax"),
    (bad.too_many_indices_2d, (M22,), "call", ["too many indices"], "X[0, 1, 2]"),
    (bad.transpose_wrong_axes, (np.zeros((2, 3, 4)),), "call", ["axes"], "np.transpose"),
    (bad.reshape_two_unknowns, (np.zeros(4),), "call", [("-1", "unknown")], "x.reshape"),
    (bad.uses_fft, (V3,), "call", ["fft"], "np.fft.fft"),
    (bad.uses_einsum, (V3,), "call", ["einsum"], "np.einsum"),
    (bad.uses_unique, (V3,), "call", ["unique"], "np.unique"),
    (bad.uses_sort, (V3,), "call", ["sort"], "np.sort"),
    (bad.uses_nansum, (V3,), "call", ["nansum", "np.sum"], "np.nansum"),
    (bad.uses_pinv, (M22,), "call", ["pinv", "np.linalg.inv"], "np.linalg.pinv"),
    (bad.uses_vstack, (V3,), "call", ["vstack", "np.stack"], "np.vstack"),
    (bad.uses_eigh, (M22,), "call", ["eigh"], "np.linalg.eigh"),
    (bad.uses_cumsum, (V3,), "call", ["cumsum"], "np.cumsum"),
    (bad.zero_tail_in_place, (V3,), "grad", ["'x'", "differentiated"], "x[1:] = 0.0"),
    (bad.write_through_view, (V3,), "grad", ["'x'", "differentiated"], "v[0] = -1.0"),
    (bad.scale_in_place, (V3,), "grad", ["'x'", "differentiated"], "x *= 2.0"),
    (bad.shift_rows_in_place, (M22,), "grad", ["'X'", "differentiated"], "X[i] += 1.0"),
    # "refused": valid numpy whose gradient reverse mode refuses (rather than get it wrong)
    (bad.reshape_read_after_write, (V3, M23), "refused", ["reshape", "after the write"],
     "np.sum(b * b)"),
    (bad.reshape_read_in_loop, (V3, M23), "refused", ["reshape", "after the write"],
     "np.sum(b * b)"),
    (bad.write_through_reshape, (V3, M23), "refused", ["through a reshape"],
     "b[0:3] = "),
]

# function, arguments, the exception numpy raises, the offending text
RUNTIME_ERRORS = [
    (bad.add_vectors, (V3, np.arange(4.0)), ValueError, "x + y"),
    (bad.add_vectors, (np.zeros((2, 3)), np.zeros((3, 2))), ValueError, "x + y"),
    (bad.matvec, (M22, V3), ValueError, "A @ x"),
    (bad.row_of, (M22, 5), IndexError, "A[i, :]"),
    (bad.row_of, (M22, -3), IndexError, "A[i, :]"),
    (bad.gather, (V3, np.array([0, 7])), IndexError, "x[idx]"),
    (bad.invert, (SINGULAR,), np.linalg.LinAlgError, "np.linalg.inv"),
    (bad.solve_system, (SINGULAR, np.ones(2)), np.linalg.LinAlgError, "np.linalg.solve"),
    (bad.solve_system, (M22, V3), ValueError, "np.linalg.solve"),
    (bad.determinant, (np.zeros((2, 3)),), np.linalg.LinAlgError, "np.linalg.det"),
    (bad.reshape_rows, (np.arange(6.0),), ValueError, "x.reshape"),
    (bad.stack_rows, (np.zeros((2, 3)), np.zeros((2, 4))), ValueError, "np.concatenate"),
    (bad.shifted_copy, (V3, 5), ValueError, "y[1:] = x"),
    (bad.masked_total, (V3, np.array([True, False])), IndexError, "x[mask]"),
    (bad.largest, (np.zeros(0),), ValueError, "np.max(x)"),
]


def _line_of(fn, text):
    """The line number in SOURCE_FILE of the one line of `fn` that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, f"{fn.__name__}: {text!r} is on {len(hits)} lines"
    return hits[0]


def _marks(key):
    if os.environ.get("ADCOMPILE_IGNORE_NOT_YET"):
        return ()
    name = key.split("/")[0]
    if name in NOT_YET or key in NOT_YET:
        return pytest.mark.xfail(strict=True, reason="issue 11: not implemented yet")
    return ()


def _compile_params():
    return [pytest.param(*case, marks=_marks(case[0].__name__), id=case[0].__name__)
            for case in COMPILE_ERRORS]


def _runtime_ids():
    seen = {}
    ids = []
    for fn, *_ in RUNTIME_ERRORS:
        seen[fn.__name__] = seen.get(fn.__name__, -1) + 1
        ids.append(f"{fn.__name__}-{seen[fn.__name__]}")
    return ids


def _runtime_params():
    return [pytest.param(*case, backend, marks=_marks(f"{name}/{backend}"),
                         id=f"{name}-{backend}")
            for case, name in zip(RUNTIME_ERRORS, _runtime_ids()) for backend in BACKENDS]


def test_enough_bad_array_programs():
    assert len(COMPILE_ERRORS) + len(RUNTIME_ERRORS) >= 22
    listed = {c[0] for c in COMPILE_ERRORS} | {c[0] for c in RUNTIME_ERRORS}
    defined = {f for _, f in inspect.getmembers(bad, inspect.isfunction)}
    assert listed == defined, f"not in a table: {sorted(f.__name__ for f in defined - listed)}"
    known = {c[0].__name__ for c in COMPILE_ERRORS} | set(_runtime_ids())
    for entry in NOT_YET:
        name, *backend = entry.split("/")
        assert name in known and set(backend) <= set(BACKENDS), f"NOT_YET: {entry!r}"


@pytest.mark.parametrize("fn,args,how,words,text", COMPILE_ERRORS,
                         ids=[c[0].__name__ for c in COMPILE_ERRORS])
def test_table_describes_real_mistakes(fn, args, how, words, text):
    """The table says what it means: a shape or axis mistake is one numpy raises on; a use of
    an unsupported function is valid numpy; a write into a differentiated argument writes."""
    if how == "grad":
        x = np.array(args[0], dtype=float)
        before = x.copy()
        fn(x)
        assert not np.array_equal(x, before)
    elif fn.__name__.startswith("uses_") or how == "refused":
        fn(*args)
    else:
        with pytest.raises((ValueError, IndexError, np.exceptions.AxisError)):
            fn(*args)


@pytest.mark.parametrize("fn,args,how,words,text", _compile_params())
def test_located_compile_error(fn, args, how, words, text):
    compiled = ac.adcompile(fn)
    with pytest.raises(CompileError) as info:
        if how in ("grad", "refused"):
            ac.grad(compiled)(*(np.array(a, dtype=float) for a in args))
        else:
            compiled(*args)
    err = info.value
    message = str(err)
    line = _line_of(fn, text)
    assert err.filename == SOURCE_FILE, f"{fn.__name__}: the error points at {err.filename}, " \
                                        f"not at the user's file: {message}"
    assert err.line == line, f"{fn.__name__}: the error points at line {err.line}, the " \
                             f"mistake is on line {line}: {message}"
    assert message.startswith(f"{SOURCE_FILE}:{line}:{err.col + 1}: ")
    for word in words:
        options = word if isinstance(word, tuple) else (word,)
        assert any(o in err.message for o in options), \
            f"{fn.__name__}: the message does not say {' or '.join(options)!r}: {message}"


@pytest.mark.parametrize("fn,args,error,text,backend", _runtime_params())
def test_runtime_error_is_numpys(fn, args, error, text, backend):
    with pytest.raises(Exception) as numpy_info:
        fn(*args)
    assert isinstance(numpy_info.value, error), f"the table is wrong: numpy raises " \
                                                f"{type(numpy_info.value).__name__}"
    compiled = ac.adcompile(fn, backend=backend)
    with pytest.raises(error) as info:
        compiled(*args)
    assert not isinstance(info.value, CompileError), \
        f"{fn.__name__} on {backend}: refused at compile time, but the mistake depends on " \
        f"the arguments: {info.value}"
    assert isinstance(info.value, type(numpy_info.value)), \
        f"{fn.__name__} on {backend}: {type(info.value).__name__}, numpy raises " \
        f"{type(numpy_info.value).__name__}"
    if backend == "llvm":
        where = f"{os.path.basename(SOURCE_FILE)}:{_line_of(fn, text)}"
        assert where in str(info.value), \
            f"{fn.__name__}: the message does not name the user's line {where}: {info.value}"
