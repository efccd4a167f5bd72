"""merge.identical (LLVM backend): internal functions of the same text are folded into one
before LLVM optimises the module; functions that differ, if only in what a metadata node says,
are kept. Every compiled module goes through it, so the corpus tests check its effect on
results; these check the folding itself on small modules."""

import llvmlite.binding as llvm
import pytest

from adcompile.backends.llvm import merge

PIECE = '''define internal i32 @"{name}"(ptr %".1", i64 %".2")
{{
entry:
  %"{local}" = getelementptr double, ptr %".1", i64 %".2"
  %".4" = load double, ptr %"{local}", !alias.scope !{scope}
  store double %".4", ptr %".1", !alias.scope !{scope}
  br label %"exit", !llvm.loop !{loop}
exit:
  ret i32 0
}}
'''

CALLER = '''define internal i32 @"{name}"(ptr %".1")
{{
entry:
  %".2" = call i32 @"{callee}"(ptr %".1", i64 1)
  ret i32 %".2"
}}
'''

ENTRY = '''define i32 @"entry"(ptr %".1")
{
entry:
  %".2" = call i32 @"a"(ptr %".1")
  %".3" = call i32 @"b"(ptr %".1")
  %".4" = add i32 %".2", %".3"
  ret i32 %".4"
}
'''

METADATA = '''!0 = !{ !"domain" }
!1 = !{ !"allocated", !0 }
!2 = !{ !"arguments", !0 }
!3 = !{ !1 }
!4 = !{ !2 }
!5 = !{ !"llvm.loop.unroll.runtime.disable" }
!6 = distinct !{ !6, !5 }
!7 = distinct !{ !7, !5 }
'''


def module(pieces):
    """Pieces p (scope, loop, local name) of callers a and b, and the entry calling both."""
    text = "".join(PIECE.format(name=name, local=local, scope=scope, loop=loop)
                   for name, (scope, loop, local) in pieces.items())
    text += CALLER.format(name="a", callee="p") + CALLER.format(name="b", callee="q")
    return text + ENTRY + METADATA


def defined(text):
    return sorted(f.name for f in llvm.parse_assembly(text).functions if not f.is_declaration)


@pytest.mark.parametrize("q, folded", [
    ((3, 6, ".3"), True),  # the same code
    ((3, 7, ".9"), True),  # another loop node of the same content, another local name
    ((4, 6, ".3"), False),  # another alias scope: not the same function
])
def test_identical_functions_fold_into_one(q, folded):
    text = module({"p": (3, 6, ".3"), "q": q})
    merged = merge.identical(text)
    llvm.parse_assembly(merged).verify()
    if folded:  # q went, then b (now calling p like a) went too
        assert defined(merged) == ["a", "entry", "p"]
        assert merged.count('call i32 @"a"') == 2
    else:
        assert merged == text
        assert defined(merged) == ["a", "b", "entry", "p", "q"]
