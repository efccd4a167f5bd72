"""Stable text form of the IR (used by `f.ir()`, ADCOMPILE_PRINT_AFTER and golden tests).

Values print as %name (from the user's variable) or %N, numbered in definition order, so the
text depends only on the program, not on object ids.
"""


class _Names:
    def __init__(self):
        self.names = {}
        self.used = set()
        self.counter = 0
        self.suffix = {}  # base name -> the k of its last `base.k` (used only grows)

    def define(self, value):
        base = value.name
        if base:
            name, k = base, self.suffix.get(base, 1)
            if name in self.used:
                name = f"{base}.{k}"
                while name in self.used:
                    k += 1
                    name = f"{base}.{k}"
                self.suffix[base] = k
        else:
            while str(self.counter) in self.used:
                self.counter += 1
            name = str(self.counter)
        self.used.add(name)
        self.names[value] = "%" + name
        return self.names[value]

    def __getitem__(self, value):
        return self.names.get(value, f"%?{value.id}")


def print_function(fn):
    names = _Names()
    params = ", ".join(f"{names.define(p)}: {p.type}" for p in fn.params)
    lines = [f"func {fn.name}({params}) -> {fn.result_type} {{"]
    _block(fn.body, names, lines, 1)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _block(block, names, lines, depth):
    pad = "  " * depth
    for op in block.ops:
        lines.append(pad + _op_line(op, names))
        for region in op.regions:
            params = ", ".join(f"{names.define(p)}: {p.type}" for p in region.params)
            lines.append(f"{pad}  ^({params}):")
            _block(region, names, lines, depth + 2)
        if op.regions:
            lines.append(pad + "}")


def _op_line(op, names):
    operands = ", ".join(names[v] for v in op.operands)
    attrs = _attrs(op)
    text = f"{op.prim}"
    if operands:
        text += " " + operands
    if op.prim == "const":
        text += " " + attrs
    elif attrs:
        text += " {" + attrs + "}"
    if op.results:
        results = ", ".join(names.define(r) for r in op.results)
        types = ", ".join(str(r.type) for r in op.results)
        text = f"{results} = {text} : {types}"
    if op.regions:
        text += " {"
    return text


_HIDDEN = {"type", "result_types", "loc", "names", "item_type"}


def _attrs(op):
    parts = []
    for key in sorted(op.attrs):
        if key in _HIDDEN or (op.prim == "const" and key == "value"):
            continue
        parts.append(f"{key}={op.attrs[key]!r}" if not isinstance(op.attrs[key], str)
                     else f"{key}={op.attrs[key]}")
    if op.prim == "const":
        value = op.attrs["value"]
        # (an int of more than 4300 digits has no decimal repr: Python refuses to make one)
        big = type(value) is int and value.bit_length() > 1000
        parts.insert(0, hex(value) if big else repr(value))
    return ", ".join(parts)
