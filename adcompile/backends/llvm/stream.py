"""Outlined array ops handed to LLVM while the kernel is still being lowered.

A cold compile was two phases one after the other: our lowering and printing (Python, one
thread, 0.3-0.45 s for a GradBench gradient) and then LLVM on all cores (jit.compile_objects).
An outlined op (lower.py, `adc.op.*`) is finished when its rule returns, and only the kernel
calls it, so it can be compiled at once: `Batches` collects finished ops and, once they add
up to BATCH_LINES instructions, prints them as a module of their own and hands that text to
the compile's job queue (jit.Jobs), whose threads optimise and code-generate it while the
lowering goes on. The kernel's module then declares them.

A batch module holds:
- its ops, external (the kernel's part calls them by name; op names cannot clash with the
  runtime's symbols, and each compiled module links into a JIT library of its own);
- everything they use, copied: the functions they call or whose address they pass (parallel
  pieces, pairwise sums, helpers), internal, and each batch and the kernel's module that
  uses a helper compiles its own copy (they are small: what the kernel's module no longer
  uses is pruned, split.prune); the declarations, constants and outside objects they name;
  the module's metadata so far (alias scopes, loop hints).
An op that names an internal global variable (none do today: tapes stay in the kernel) or
a function still being written is not shipped; it stays in the kernel's module, as do the
ops of a last batch too small to be worth a job.
"""

import os
import re

import llvmlite.ir as ir

from adcompile.backends.llvm import merge

# instructions a batch gathers (ADCOMPILE_LLVM_BATCH): a job's fixed cost (a context, parsing
# the declarations and the metadata again) is a few milliseconds; its LLVM time about 0.1 ms
# an instruction
BATCH_LINES = int(os.environ.get("ADCOMPILE_LLVM_BATCH", "1500"))
_REF = re.compile(r'@"([^"]+)"')


class Batches:
    """Finished outlined ops of `module`, shipped to `submit(text, lines)` in batches."""

    def __init__(self, module, submit):
        self.module = module
        self.submit = submit
        self.pending = []
        self.size = 0
        self.shipped = 0

    def finished(self, fn, made):
        """Op function `fn` is complete; `made`: the functions created while lowering it."""
        self.pending.append(fn)
        self.size += sum(_instructions(f) for f in (fn, *made) if isinstance(f, ir.Function))
        if self.size >= BATCH_LINES:
            self.flush()

    def flush(self):
        roots, self.pending, self.size = self.pending, [], 0
        text = batch_text(self.module, roots)
        if text is None:
            return
        self.submit(text, text.count("\n"))
        self.shipped += len(roots)
        for fn in roots:  # the kernel's module now only declares it
            fn.blocks = []
            fn.linkage = ""


def batch_text(module, roots):
    """The module text of `roots` (external) and what they use, or None when one of them
    cannot leave the kernel's module."""
    names = {fn.name for fn in roots}
    functions, outside = {}, {}
    todo = list(reversed(roots))
    while todo:
        fn = todo.pop()
        if fn.name in functions:
            continue
        if any(not block.is_terminated for block in fn.blocks):
            return None  # still being written (a helper of the kernel's own code)
        text = str(fn)
        if fn.name in names:
            text = text.replace("define internal ", "define ", 1)
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
    lines += module._get_metadata_lines()
    return merge.identical("\n".join(lines) + "\n")


def _instructions(fn):
    return sum(len(block.instructions) for block in fn.blocks)
