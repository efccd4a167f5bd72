"""IR functions to bytes and back, for the on-disk IR cache (adcompile/cache.py).

The encoding is flat: every value is numbered where it is defined (function and block
parameters, op results, in program order) and operands refer to those numbers, so encoding
and decoding recurse only as deep as regions nest, never along chains of uses. Decoding makes
fresh Values (new ids), so a decoded function can live beside any other IR in the process.

Attributes are plain data (numbers, strings, types, tuples); a function whose attributes
hold IR values cannot be encoded, and `encode` returns None for it.
"""

import pickle

from adcompile.ir.nodes import Block, Function, Op, Value

_FORMAT = 1


class _Unencodable(Exception):
    pass


def encode(fn):
    """Bytes for `fn`, or None when it cannot be encoded."""
    numbers = {}
    try:
        params = [_define(numbers, p) for p in fn.params]
        body = _encode_block(fn.body, numbers)
    except _Unencodable:
        return None
    record = (_FORMAT, fn.name, fn.filename, fn.first_line, params, body)
    return pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data):
    """The Function that `encode` turned into `data`."""
    fmt, name, filename, first_line, params, body = pickle.loads(data)
    if fmt != _FORMAT:
        raise ValueError(f"IR encoding {fmt} is not {_FORMAT}")
    values = []
    fn_params = [_value(values, t, n) for t, n in params]
    return Function(name, fn_params, _decode_block(body, values), filename, first_line)


def _define(numbers, value):
    numbers[value] = len(numbers)
    return (value.type, value.name)


def _use(numbers, value):
    number = numbers.get(value)
    if number is None:  # not defined before its use in program order
        raise _Unencodable(value)
    return number


def _encode_block(block, numbers):
    params = [_define(numbers, p) for p in block.params]
    ops = []
    for op in block.ops:
        if _holds_values(op.attrs):
            raise _Unencodable(op)
        operands = [_use(numbers, v) for v in op.operands]
        regions = [_encode_block(r, numbers) for r in op.regions]
        results = [_define(numbers, r) for r in op.results]
        ops.append((op.prim, operands, results, op.attrs, regions, op.loc))
    return params, ops


def _holds_values(data):
    if isinstance(data, Value):
        return True
    if isinstance(data, dict):
        return any(_holds_values(v) for v in data.values())
    if isinstance(data, (list, tuple)):
        return any(_holds_values(v) for v in data)
    return False


def _value(values, type, name, owner=None):
    value = Value(type, name, owner)
    values.append(value)
    return value


def _decode_block(encoded, values):
    params, ops = encoded
    block = Block([_value(values, t, n) for t, n in params])
    for prim, operands, results, attrs, regions, loc in ops:
        op = Op.__new__(Op)
        op.prim = prim
        op.operands = [values[k] for k in operands]
        op.attrs = attrs
        op.regions = [_decode_block(r, values) for r in regions]
        op.loc = loc
        op.results = [_value(values, t, n, op) for t, n in results]
        block.ops.append(op)
    return block
