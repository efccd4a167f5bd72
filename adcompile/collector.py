"""Python's cyclic garbage collector paused while adcompile compiles.

A compile makes hundreds of thousands of Python objects (the IR, llvmlite's values, the
printed text), which set off collections; in a process that holds many objects, as one that
imported PyTorch and JAX does (0.3 million), each full collection walks them all. gmm's
gradient (GradBench) compiled in 0.88-1.15 s in such a process with the collector running,
0.75-0.78 s without it. The collector is off from the first compile that starts until the
last one running ends, and back on then if it was on before (the user's gc.disable() is
kept). The tier-up (native.Variant.tier_up), which runs beside the user's code, leaves it
alone. Garbage the compile left in cycles is collected later, as usual.
"""

import contextlib
import gc
import threading

_LOCK = threading.Lock()
_state = {"compiles": 0, "was_on": False}


@contextlib.contextmanager
def paused():
    with _LOCK:
        if _state["compiles"] == 0:
            _state["was_on"] = gc.isenabled()
            gc.disable()
        _state["compiles"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _state["compiles"] -= 1
            if _state["compiles"] == 0 and _state["was_on"]:
                gc.enable()
