"""Outlined array ops handed to LLVM while the kernel is still being lowered.

A cold compile was two phases one after the other: our lowering and printing (Python, one
thread, 0.3-0.45 s for a GradBench gradient) and then LLVM on all cores (jit.compile_objects).
An outlined op (lower.py, `adc.op.*`) is finished when its rule returns, and only the kernel
calls it, so it can be compiled at once: `Batches` collects finished ops and, once they add
up to BATCH_LINES instructions, prints them as a module of their own and hands that text to
the compile's job queue (jit.Jobs), whose threads optimise and code-generate it while the
lowering goes on. The kernel's module then declares them. An op whose loops all call work
(it hands its loop to the pool, as most of a gradient's additions do) is not shipped: it
stays with the kernel, in the code that runs once per call (split.tiers), and only the
functions made with it (its pieces) go.

A batch module holds:
- its ops, external (the kernel's part calls them by name; op names cannot clash with the
  runtime's symbols, and each compiled module links into a JIT library of its own);
- the functions they call or whose address they pass (parallel pieces, pairwise sums,
  helpers): a small one that LLVM may inline is copied in, internal (each text that uses it
  compiles its own copy); a noinline or larger one (SHARED_INSTRUCTIONS) is defined in the
  first batch that uses it, external under `<name>.x` (an internal helper may be named like
  a symbol the JIT links in: split.py), and declared by every later text, the kernel's
  module included (what that module no longer uses is pruned, split.prune);
- the declarations, constants and outside objects they name; the module's metadata so far
  (alias scopes, loop hints).
An op that names an internal global variable (none do today: tapes stay in the kernel) or
a function still being written is not shipped; it stays in the kernel's module, as do the
ops of a last batch too small to be worth a job.
"""

import os
import re

import llvmlite.ir as ir

from adcompile.backends.llvm import merge, split

# instructions a batch gathers (ADCOMPILE_LLVM_BATCH): a job's fixed cost (a context, parsing
# the declarations and the metadata again) is a few milliseconds; its LLVM time about 0.1 ms
# an instruction
BATCH_LINES = int(os.environ.get("ADCOMPILE_LLVM_BATCH", "1500"))
SHARED_INSTRUCTIONS = 60  # a helper this large is compiled once for the whole module
_REF = re.compile(r'@"([^"]+)"')


class Batches:
    """Finished outlined ops of `module`, shipped to `submit(text, lines)` in batches."""

    def __init__(self, module, submit):
        self.module = module
        self.submit = submit
        self.pending = []
        self.size = 0
        self.shipped = 0
        self.exported = {}  # shared helper defined in a batch -> its declaration
        self.renamed = {}  # '@"helper"' -> '@"helper.x"', in every text

    def finished(self, fn, made):
        """Op function `fn` is complete; `made`: the functions created while lowering it. An
        op whose loops all call work (parallel pieces, sums...: split.hot_loops_in) stays in
        the kernel's module, with the code that runs once per call (split.tiers: compiled
        quickly, O3 at the tier-up); the functions made with it are shipped."""
        if split.hot_loops_in(fn):
            self.pending.append(fn)
            shipped = (fn, *made)
        else:
            shipped = [f for f in made if isinstance(f, ir.Function) and f.blocks and
                       f is not fn and split.is_work(f.name)]
            self.pending.extend(shipped)
        self.size += sum(_instructions(f) for f in shipped if isinstance(f, ir.Function))
        if self.size >= BATCH_LINES:
            self.flush()

    def flush(self):
        roots, self.pending, self.size = self.pending, [], 0
        made = batch_text(self.module, roots, self.exported)
        if made is None:
            return
        text, exported = made
        self.renamed.update((f'@"{name}"', f'@"{name}.x"') for name in exported)
        text = split.renaming(self.renamed, text)
        self.submit(text, text.count("\n"))
        self.shipped += len(roots)
        self.exported.update(exported)
        for name in [fn.name for fn in roots] + list(exported):
            fn = self.module.globals[name]  # the kernel's module now only declares it
            empty_body(fn)
            fn.linkage = ""

    def rest(self, text):
        """The kernel's module text as the batches left it: their helpers renamed, what
        only their ops used dropped."""
        return split.prune(split.renaming(self.renamed, text)) if self.shipped else text


def empty_body(fn):
    """Drop llvmlite function `fn`'s body, which is then a declaration. Its blocks and
    instructions form reference cycles (an instruction and its block, a loop's phi and the
    values it merges), so that only the cyclic collector would free them: opened here, they
    go by reference counting once nothing else holds them (see native.release)."""
    for block in fn.blocks:
        for instruction in block.instructions:
            if isinstance(instruction, ir.PhiInstr):
                instruction.incomings = []
        block.instructions = []
        block.terminator = None
    fn.blocks = []


def batch_text(module, roots, exported=None):
    """(the module text of `roots` and what they use, {shared helper it defines:
    declaration}), or None when one of them cannot leave the kernel's module. The roots
    are external; a shared helper (`_shared`: noinline or large) is defined here, external,
    once for the whole module, and declared by the texts that come after (`exported`, those
    already defined); any other function they call or hand to the pool is copied in,
    internal."""
    exported = exported or {}
    names = {fn.name for fn in roots}
    functions, outside, defined = {}, {}, {}
    todo = list(reversed(roots))
    while todo:
        fn = todo.pop()
        if fn.name in functions or fn.name in outside:
            continue
        if fn.name in exported:
            outside[fn.name] = exported[fn.name]
            continue
        if any(not block.is_terminated for block in fn.blocks):
            return None  # still being written (a helper of the kernel's own code)
        text = str(fn)
        if fn.name in names or _shared(fn):
            text = text.replace("define internal ", "define ", 1)
            if fn.name not in names:
                defined[fn.name] = split.declaration(text)
        functions[fn.name] = text
        for name in _REF.findall(text):
            value = module.globals.get(name)
            if value is None or name in functions or name in outside:
                continue
            if isinstance(value, ir.Function):
                if value.blocks:
                    todo.append(value)
                else:
                    outside[name] = str(value)
            elif value.linkage == "internal" and not value.global_constant:
                return None  # a variable the kernel's module shares
            else:
                outside[name] = str(value)
    lines = ['; ModuleID = "%s.part"' % module.name,
             'target triple = "%s"' % module.triple,
             'target datalayout = "%s"' % module.data_layout, ""]
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    lines += outside.values()
    lines += functions.values()
    lines += module._get_metadata_lines()  # all of them so far: LLVM drops what no one uses
    return merge.identical("\n".join(lines) + "\n"), defined


def _shared(fn):
    """Whether a helper is defined once, external, rather than copied into each text that
    uses it: LLVM does not inline it (noinline), or it is too large to be inlined where
    several functions call it (a pairwise sum, the pieces of a parallel one: called once a
    row or a sum, never an element)."""
    return "noinline" in fn.attributes or _instructions(fn) >= SHARED_INSTRUCTIONS



def _instructions(fn):
    return sum(len(block.instructions) for block in fn.blocks)
