"""Functions outside the compilable subset: each must give a located CompileError."""

import math

import numpy as np

GLOBAL_LIST = [1, 2, 3]


def uses_class(x):
    class A:
        pass
    return x


def uses_lambda(x):
    f = lambda v: v + 1  # noqa: E731
    return f(x)


def uses_nested_function(x):
    def inner(v):
        return v
    return inner(x)


def uses_list_comprehension(x):
    return sum([v for v in range(x)])


def uses_generator(x):
    yield x


def uses_try(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return 0.0


def uses_with(x):
    with open("f") as fh:
        return fh


def uses_global_statement(x):
    global GLOBAL_LIST
    return x


def uses_varargs(*xs):
    return xs


def uses_kwargs(**kw):
    return kw


def uses_default(x, y=2):
    return x + y


def uses_list_literal(x):
    return [x, x]


def uses_dict(x):
    return {"a": x}


def uses_fstring(x):
    return f"{x}"


def uses_unknown_name(x):
    return x + undefined_name  # noqa: F821


def uses_global_list(x):
    return GLOBAL_LIST[0] + x


def uses_string_call(x):
    return len("abc") + x


def uses_print(x):
    print(x)
    return x


def recursive(n):
    if n <= 1:
        return 1
    return n * recursive(n - 1)


def mismatched_types(x):
    if x > 0:
        y = np.zeros(3)
    else:
        y = 1.0
    return y


def returns_or_falls(x):
    if x > 0:
        return 1.0


def maybe_undefined(x):
    if x > 0:
        y = 1.0
    return y


def slices(x):
    return x[1.5:3]


def float_index(x):
    return x[1.5]


def too_many_indices(x):
    return x[0, 1]


def bad_range(x):
    s = 0
    for i in range(x):
        s += i
    return s


def uses_raise(x):
    raise ValueError(x)


def uses_walrus(x):
    if (y := x) > 0:
        return y
    return 0


def uses_del(x):
    y = x
    del y
    return x


def uses_import(x):
    import os
    return x


def uses_starred(x):
    a, *b = x
    return a


def uses_bitwise(x):
    return x & 1.5


def iterates_over_scalar(x):
    s = 0.0
    for v in x:
        s += v
    return s


def array_plus_array(x):
    return x @ 2.0


def unsupported_math(x):
    return math.factorial(x)


def store_to_scalar(x):
    x[0] = 1.0
    return x


def loop_type_clash(n):
    v = 0.0
    for i in range(n):
        v = np.zeros(2)
    return v


def subtracts_numpy_bools(mask):
    return mask[0] - mask[1]
