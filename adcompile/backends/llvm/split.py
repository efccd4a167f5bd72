"""A module's LLVM IR text cut into parts that LLVM optimises and code-generates at once.

LLVM takes most of a cold compile (a GradBench gradient: 1.5-2 CPU-s of LLVM against 0.3 s
of Python), and it works on one function at a time, so its work divides: each part is a
module of its own, parsed into its own LLVMContext and compiled by its own thread (jit.py),
and the parts' object files are linked into one JIT library.

The cut keeps what optimisation sees together. A function that one other function calls,
and nothing else names, stays with its caller unless it is noinline (LLVM inlines such a
function into its only caller whatever its size), so each part holds whole call trees
(`adc.op.*` are noinline: each is a tree of its own; a parallel piece, whose address goes to
the pool and which is therefore never inlined, is one too).
The trees are dealt to the parts largest first, each to the lightest part, by lines of IR.
In a part:
- its functions keep their text; one that another part calls or takes the address of
  becomes external (`define internal` loses `internal`) under a name of its own, `<name>.x`
  in every part (an internal helper may share its name with a symbol the JIT links in: the
  runtime's `adc.rt.buffer` when a module defines its own), and the other part declares it;
- an internal global variable (a tape's size hint) is defined in the part of its first
  user, external when another part uses it, and declared there;
- private constants (error texts), declarations of outside symbols, metadata, the triple
  and the data layout are copied into every part (what a part does not use, LLVM drops).

Text we do not recognise (another linkage, a global whose initialiser names a function)
is left whole: `parts` then returns the text alone.
"""

import re

import llvmlite.ir as ir

_DEFINE = re.compile(r'^define (internal )?([^\n@]*)@"([^"]+)"\(([^\n]*)\)([^\n]*)\n\{$',
                     re.M)
_ANY_DEFINE = re.compile(r"^define ", re.M)
_LINKAGES = frozenset(["private", "external", "linkonce", "linkonce_odr", "weak", "weak_odr",
                       "common", "appending", "extern_weak", "available_externally"])
_REF = re.compile(r'@"([^"]+)"')
_CALL = re.compile(r'\bcall [^@\n]*@"([^"]+)"\(')
_GLOBAL = re.compile(r'^@"([^"]+)" = (internal |private )?(.*)$')
_VARIABLE = re.compile(r'^(?:unnamed_addr )?global ')
_LABEL = re.compile(r'label %(?:"([^"]*)"|([-\w.$]+))')
ENTRY, KERNEL = "adc.entry.", "adc.fn."  # native.entry_symbol, native.kernel_symbol
ONCE_LINES = 1500  # less code that runs once per call is compiled with the rest (see tiers)
_NOT_WORK = ("adc.rt.", "adc.tape_", "adc.take_large")  # memory and tape helpers


class _Function:
    __slots__ = ("name", "internal", "head", "params", "attrs", "text", "refs", "calls")

    def __init__(self, match, text):
        self.internal = bool(match.group(1))
        self.head, self.name, self.params, self.attrs = match.group(2, 3, 4, 5)
        self.text = text
        self.refs = set(_REF.findall(text)) - {self.name}
        self.calls = set(_CALL.findall(text)) - {self.name}

    def declaration(self):
        return f'declare {self.head}@"{self.name}"({self.params})\n'


def parts(text, count):
    """`text` cut into at most `count` module texts (fewer when there is too little to
    share); [text] when it cannot be cut."""
    if count < 2:
        return [text]
    found = _functions(text)
    if found is None:
        return [text]
    functions, rest = found
    globals_ = _globals(rest, functions)
    if globals_ is None:
        return [text]
    by_name = {f.name: f for f in functions}
    home = _deal(functions, by_name, count)
    used = len(set(home.values()))
    if used < 2:
        return [text]
    return _cut(functions, rest, globals_, by_name, home, used)


def _cut(functions, rest, globals_, by_name, home, used):
    """The module texts of parts 0 .. used - 1, each function in part home[name]."""
    exported = {name for f in functions for name in f.refs
                if name in by_name and home[name] != home[f.name]}
    users = {}
    for f in functions:
        for name in f.refs:
            if name in globals_:
                users.setdefault(name, []).append(home[f.name])
    renamed = {f'@"{f.name}"': f'@"{f.name}.x"' for f in functions
               if f.internal and f.name in exported}
    out = []
    for part in range(used):
        pieces = [_rest_for(rest, part, globals_, users)]
        named = set().union(*(f.refs for f in functions if home[f.name] == part))
        for f in functions:
            if home[f.name] == part:
                pieces.append(f.text.replace("define internal ", "define ", 1)
                              if f.name in exported and f.internal else f.text)
            elif f.name in named:
                pieces.append(f.declaration())
        out.append(renaming(renamed, "".join(pieces)))
    return out


def tiers(text):
    """(the rest, the code that runs once per call) of a module: the entry point with the
    kernel and the helpers only they call, when every innermost loop of the kernel calls an
    outlined op or a parallel piece (array code: its own instructions run a few times per
    call, the work is in the functions it calls). jit.py compiles that code with a quick
    pipeline (jit.ONCE_LEVEL), in a tenth of the time O3 takes, and the variant compiles it
    again with O3 after some calls (native.Variant.tier_up). (text, None) when the kernel
    has loops of its own (hot_loops), there is too little of it (ONCE_LINES) or the module
    cannot be cut; (None, text) when all of it runs once per call."""
    found = _functions(text)
    if found is None:
        return text, None
    functions, rest = found
    globals_ = _globals(rest, functions)
    if globals_ is None:
        return text, None
    entries = [f for f in functions if f.name.startswith(ENTRY)]
    kernels = [f for f in functions if f.name.startswith(KERNEL)]
    if len(entries) != 1 or len(kernels) != 1 or hot_loops(kernels[0].text):
        return text, None
    by_name = {f.name: f for f in functions}
    root = _roots(functions, by_name)
    once = {f.name for f in functions if root(f.name) == root(entries[0].name)}
    once |= _cold_callees(functions, by_name, once, root)
    if kernels[0].name not in once or \
            sum(by_name[name].text.count("\n") for name in once) < ONCE_LINES:
        return text, None
    if len(once) == len(functions):  # (the ops with loops went to stream.py's batches)
        return None, text
    home = {f.name: int(f.name in once) for f in functions}
    rest_text, once_text = _cut(functions, rest, globals_, by_name, home, 2)
    return rest_text, once_text


def _cold_callees(functions, by_name, once, root):
    """The call trees (_roots) that only the code in `once` calls, directly, and whose loops
    all call work (hot_loops): outlined ops that hand their loops to the pool, which
    stream.py keeps out of its batches for this. They run once per call of theirs, too."""
    referrers, trees = {}, {}
    for f in functions:
        for name in f.refs:
            referrers.setdefault(name, set()).add(f.name)
        trees.setdefault(root(f.name), []).append(f.name)
    hot = {}  # (each tree's loops are read once, however many rounds)
    inside, changed = set(once), True
    while changed:
        changed = False
        for name, tree in trees.items():
            users = referrers.get(name, set())
            if name in inside or not users or not users <= inside or \
                    any(name not in by_name[user].calls for user in users):
                continue
            if name not in hot:
                hot[name] = any(hot_loops(by_name[member].text) for member in tree)
            if not hot[name]:
                inside.update(tree)
                changed = True
    return inside - once


def kernel_loops(text):
    """Whether a module text defines the kernel (native.kernel_symbol) with loops of its own
    that call no outlined work (hot_loops): the user's scalar loops, as in a program of
    loops over array elements (GradBench det, ba, lstm's loops)."""
    at = text.find(f'@"{KERNEL}')
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        if text.startswith("define ", start):
            return hot_loops(text[start:text.index("\n}\n", start) + 3])
        at = text.find(f'@"{KERNEL}', at + 1)
    return False


def hot_loops(text):
    """Whether a function's text has an innermost loop that calls no outlined work (no
    `adc.op.*`, no parallel piece, no BLAS product...): scalar loops, which the full
    pipeline must compile."""
    blocks, order = {}, []
    label = "entry"
    for line in text.splitlines()[2:]:
        if line.endswith(":") and not line.startswith(" "):
            label = line[:-1]
            label = label[1:-1] if label.startswith('"') else label
            continue
        if label not in blocks:
            blocks[label] = ([], [])
            order.append(label)
        successors, calls = blocks[label]
        if line.lstrip().startswith(("br ", "switch ")):
            successors.extend(quoted or plain for quoted, plain in _LABEL.findall(line))
        calls.extend(_CALL.findall(line))
    return _hot(blocks, order)


def hot_loops_in(fn):
    """hot_loops of an llvmlite function (its blocks and calls, no text printed)."""
    blocks, order = {}, []
    for block in fn.blocks:
        calls = [ins.callee.name for ins in block.instructions
                 if isinstance(ins, ir.CallInstr) and isinstance(ins.callee, ir.Function)]
        term = block.terminator
        successors = [] if term is None else [o for o in term.operands
                                              if isinstance(o, ir.Block)]
        if isinstance(term, ir.SwitchInstr):
            successors += [term.default] + [target for _, target in term.cases]
        blocks[block] = (successors, calls)
        order.append(block)
    return _hot(blocks, order)


def _hot(blocks, order):
    """Whether the control-flow graph {block: (successors, names called)} (entry first in
    `order`) has an innermost natural loop that calls no outlined work."""
    if not order:
        return False
    # back edges by a depth-first walk; each one's natural loop
    loops, state, stack = [], {order[0]: 1}, [(order[0], iter(blocks[order[0]][0]))]
    while stack:
        block, successors = stack[-1]
        for target in successors:
            if target not in blocks:
                continue
            if state.get(target) == 1:
                loops.append((target, block))
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(blocks[target][0])))
                break
        else:
            state[block] = 2
            stack.pop()
    predecessors = {}
    for name, (successors, _) in blocks.items():
        for target in successors:
            predecessors.setdefault(target, set()).add(name)
    bodies = []
    for header, latch in loops:
        body, todo = {header, latch}, [latch] if latch != header else []
        while todo:
            for p in predecessors.get(todo.pop(), ()):
                if p not in body:
                    body.add(p)
                    todo.append(p)
        bodies.append((header, body))
    headers = {h for h, _ in bodies}
    for header, body in bodies:
        if body & headers - {header}:
            continue  # not innermost
        if not any(is_work(name) for block in body for name in blocks[block][1]):
            return True
    return False


def is_work(name):
    """Whether a call to `name` is outlined work (not a helper of memory or tapes, not the
    C library, libm or an intrinsic)."""
    return (name.startswith("adc.") and not name.startswith(_NOT_WORK)) or \
        name == "adc_parallel_for"


def declaration(text):
    """`declare` for the text of a function definition."""
    return _Function(_DEFINE.match(text), text).declaration()


def prune(text):
    """`text` without the internal functions that nothing outside them reaches (a helper
    only the ops shipped in batches used, stream.py); unchanged when it cannot be read."""
    found = _functions(text)
    if found is None:
        return text
    functions, rest = found
    by_name = {f.name: f for f in functions}
    named = set(_REF.findall(rest))  # a global's initialiser may name a function
    todo = [f for f in functions if not f.internal or f.name in named]
    reached = {f.name for f in todo}
    while todo:
        for name in todo.pop().refs:
            if name in by_name and name not in reached:
                reached.add(name)
                todo.append(by_name[name])
    if len(reached) == len(functions):
        return text
    pieces, at = [], 0
    for f in functions:
        if f.name not in reached:
            start = text.index(f.text, at)
            pieces.append(text[at:start])
            at = start + len(f.text)
    pieces.append(text[at:])
    return "".join(pieces)


def renaming(renamed, text):
    """`text` with each name of `renamed` ('@"name"' -> '@"new"') replaced."""
    if not renamed:
        return text
    pattern = re.compile("|".join(re.escape(name) for name in renamed))
    return pattern.sub(lambda m: renamed[m.group(0)], text)


def _functions(text):
    """([_Function], the text without them), or None if a definition is not one we know."""
    functions, spans = [], []
    for m in _DEFINE.finditer(text):
        end = text.index("\n}\n", m.start()) + 3
        functions.append(_Function(m, text[m.start():end]))
        spans.append((m.start(), end))
    if len(functions) != len(_ANY_DEFINE.findall(text)) or \
            any(f.head.split(" ", 1)[0] in _LINKAGES for f in functions):
        return None  # another linkage or form: leave the module whole
    pieces, at = [], 0
    for start, end in spans:
        pieces.append(text[at:start])
        at = end
    pieces.append(text[at:])
    return functions, "".join(pieces)


def _globals(rest, functions):
    """{name: type} of the internal global variables (internal constants are copied like
    private ones), or None when a global's initialiser names a function or an internal
    variable (it would tie parts together)."""
    found, named = {}, set()
    for line in rest.splitlines():
        m = _GLOBAL.match(line)
        if not m:
            continue
        named.update(_REF.findall(m.group(3)))
        variable = _VARIABLE.match(m.group(3))
        if m.group(2) == "internal " and variable:
            found[m.group(1)] = _leading_type(m.group(3)[variable.end():])
    if named & ({f.name for f in functions} | set(found)):
        return None
    return found


def _leading_type(text):
    """The type at the start of `text`: `i64`, `ptr`, `[4 x i64]`, `{i64, ptr}`..."""
    depth = 0
    for i, c in enumerate(text):
        if c in "[{<":
            depth += 1
        elif c in "]}>":
            depth -= 1
        elif c == " " and depth == 0:
            return text[:i]
    return text


def _roots(functions, by_name):
    """name -> the root of its call tree: a function that one other function calls, and
    nothing else names, belongs to its caller's tree unless it is noinline (LLVM inlines
    it into that caller)."""
    referrers, callers = {}, {}
    for f in functions:
        for name in f.refs:
            if name in by_name:
                referrers.setdefault(name, set()).add(f.name)
        for name in f.calls:
            if name in by_name:
                callers.setdefault(name, set()).add(f.name)
    root = {f.name: f.name for f in functions}

    def find(name):
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for f in functions:
        # only a direct call can be inlined: a piece whose address goes to the pool cannot
        only = referrers.get(f.name, set())
        if f.internal and len(only) == 1 and only == callers.get(f.name) and \
                "noinline" not in f.attrs:
            root[find(f.name)] = find(next(iter(only)))
    return find


def _deal(functions, by_name, count):
    """Function name -> part: call trees kept whole, dealt largest first to the lightest."""
    find = _roots(functions, by_name)
    trees = {}
    for f in functions:
        trees.setdefault(find(f.name), []).append(f)
    load = [0] * count
    home = {}
    for tree in sorted(trees.values(), key=lambda t: (-_lines(t), t[0].name)):
        part = load.index(min(load))
        load[part] += _lines(tree)
        for f in tree:
            home[f.name] = part
    # parts numbered by first use, so that a module too small to share lands in part 0
    order = {}
    for f in functions:
        order.setdefault(home[f.name], len(order))
    return {name: order[part] for name, part in home.items()}


def _lines(tree):
    return sum(f.text.count("\n") for f in tree)


def _rest_for(rest, part, globals_, users):
    """The module text outside functions, as part `part` needs it."""
    lines = []
    for line in rest.splitlines(keepends=True):
        m = _GLOBAL.match(line) if line.startswith("@") else None
        if m and m.group(1) in globals_:
            name = m.group(1)
            parts_using = users.get(name, [0])
            if part == parts_using[0]:
                if len(set(parts_using)) > 1:
                    line = line.replace(" = internal ", " = ", 1)
            elif part in parts_using:
                line = f'@"{name}" = external global {globals_[name]}\n'
            else:
                continue
        lines.append(line)
    if lines and not lines[-1].endswith("\n"):  # a text may end without one
        lines[-1] += "\n"
    return "".join(lines)
