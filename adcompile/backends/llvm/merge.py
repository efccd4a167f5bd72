"""Identical internal functions of a module folded into one, on the LLVM IR text, before LLVM
optimises it.

Lowering shares an outlined array op between every op with the same key, but two keys can
still lower to the same code (a sum_to at two places whose operands differ only in a way the
code does not see; a parallel piece of the same fused body in two ops; numpy's iteration
helpers for two kinds of operand that read them alike): each copy costs LLVM's optimisation
and code generation again (a vectorised loop is several milliseconds). Two internal
functions are the same when their text is, up to their own names, the names of their local
values (numbered per function) and the numbers of metadata nodes of the same content (each
loop has a node of its own). The later one is deleted and every reference to it (calls,
pieces handed to the thread pool) names the first; folding callees can make their callers
identical in turn, so it repeats until nothing changes. LLVM's own MergeFunctions pass is
not in the O3 pipeline, and it would run after the copies were optimised once each.
"""

import re

_DEFINE = re.compile(r'^define internal [^\n]*?@"([^"]+)"\(', re.M)
_LOCAL = re.compile(r'%"[^"]*"|%[-\w.$]+')
_META_DEF = re.compile(r"^!(\d+) = (.*)$", re.M)
_META_REF = re.compile(r"!(\d+)\b")


def identical(text):
    """`text` with each internal function that repeats an earlier one removed and the
    references to it renamed."""
    content = None
    while True:
        functions = _functions(text)
        sizes = {}
        for name, start, end in functions:  # only functions of as many lines can be the same
            sizes.setdefault(text.count("\n", start, end), []).append(name)
        alike = {name for names in sizes.values() if len(names) > 1 for name in names}
        seen, renamed = {}, {}
        for name, start, end in functions:
            if name not in alike:
                continue
            content = content or _metadata_contents(text)
            key = _normal(text[start:end], name, content)
            if key in seen:
                renamed[name] = seen[key]
            else:
                seen[key] = name
        if not renamed:
            return text
        text = _fold(text, functions, renamed)


def _functions(text):
    """(name, start, end) of every internal function definition, in order."""
    found = []
    for m in _DEFINE.finditer(text):
        end = text.index("\n}\n", m.start()) + 3
        found.append((m.group(1), m.start(), end))
    return found


def _normal(body, name, content):
    """The function's text with its own name, its local names and its metadata numbers
    replaced by what they stand for."""
    body = body.replace(f'@"{name}"', "@SELF", 1)
    locals_ = {}
    body = _LOCAL.sub(lambda m: locals_.setdefault(m.group(0), f"%{len(locals_)}"), body)
    return _META_REF.sub(lambda m: content.get(m.group(1), m.group(0)), body)


def _fold(text, functions, renamed):
    pieces, at = [], 0
    for name, start, end in functions:
        if name in renamed:
            pieces.append(text[at:start])
            at = end
    pieces.append(text[at:])
    text = "".join(pieces)
    pattern = re.compile("|".join(re.escape(f'@"{name}"') for name in renamed))
    return pattern.sub(lambda m: f'@"{renamed[m.group(0)[2:-1]]}"', text)


def _metadata_contents(text):
    """Metadata number -> its content with the nodes it refers to spelled out (a node
    referring to itself, a loop's identity, says SELF)."""
    defs = {m.group(1): m.group(2) for m in _META_DEF.finditer(text)}
    done = {}

    def spell(n, busy=()):
        if n in done:
            return done[n]
        if n in busy or n not in defs:
            return "SELF" if n in busy else f"!{n}"
        value = _META_REF.sub(lambda m: spell(m.group(1), busy + (n,)), defs[n])
        done[n] = value
        return value

    for n in defs:
        spell(n)
    return {n: "!{" + v + "}" for n, v in done.items()}
