"""The pass pipeline: a visible list of named passes.

ADCOMPILE_PRINT_AFTER=lower,fold,... prints the IR after the named stages to stderr;
`run(fn, verify=True)` runs the verifier after every pass (the tests do).
"""

import os
import sys

from adcompile.ir.printer import print_function
from adcompile.ir.verifier import verify as verify_ir
from adcompile.passes.accumulate import accumulate_in_registers
from adcompile.passes.adjacent_additions import adjacent_additions
from adcompile.passes.cse import common_subexpressions
from adcompile.passes.dce import dead_code
from adcompile.passes.first_store import first_store
from adcompile.passes.gather_additions import gather_additions
from adcompile.passes.simplify import constant_fold
from adcompile.passes.split_tuples import split_tuples

PIPELINE = [
    ("split_tuples", split_tuples),
    ("accumulate", accumulate_in_registers),
    ("first_store", first_store),
    ("gather", gather_additions),
    ("fold", constant_fold),
    ("cse", common_subexpressions),
    ("adjacent", adjacent_additions),
    ("dce", dead_code),
]


def _print_after():
    names = os.environ.get("ADCOMPILE_PRINT_AFTER", "")
    return {n.strip() for n in names.split(",") if n.strip()}


def run(fn, verify=False):
    wanted = _print_after()
    _maybe_print("lower", fn, wanted)
    if verify:
        verify_ir(fn)
    for name, transform in PIPELINE:
        fn = transform(fn)
        if verify:
            verify_ir(fn)
        _maybe_print(name, fn, wanted)
    return fn


def _maybe_print(name, fn, wanted):
    if name in wanted or "all" in wanted:
        print(f"// IR after {name}\n{print_function(fn)}", file=sys.stderr)
