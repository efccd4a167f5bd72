"""The fuzzer's worker processes, so that a crash of either library ends a process, not the run.

PyTorch 2.13 itself dies (SIGSEGV) on some programs (seed 4234724539747: reading `.grad`
after a backward through a `create_graph=True` gradient). A long run therefore generates and
checks its programs in a child process (`work`), which sends one message per program to the
parent (`runner`). When the child dies, the parent replays the program being checked in two
fresh children, one per library (`replay`): a program that kills the process under PyTorch
alone is an oracle crash, not our failure; one that kills it under adcompile alone is ours.
"""

import faulthandler
import multiprocessing
import time

CONTEXT = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked torch threads


def work(conn, first, stop, deadline):
    """Check seeds first, first + 1, ... (before `stop`, until `deadline`, a time.time()),
    sending (seed, None) or (seed, (program, finding)) for each, then None."""
    from tests.eager_fuzz import check, gen

    faulthandler.enable()  # a crash names the statement being run in the worker's stderr
    seed = first
    while (stop is None or seed < stop) and (deadline is None or time.time() < deadline):
        program = gen.generate(seed)
        finding = check.check(program)
        conn.send((seed, None if finding is None else (program, finding)))
        seed += 1
    conn.send(None)
    conn.close()


def replay(seed, lib):
    """Generate `seed`'s program and run it on one library (a process's exit code tells)."""
    from tests.eager_fuzz import check, gen

    program = gen.generate(seed)
    check.run(program, check.LIBS[lib])


def crashes(seed, lib):
    """Whether running `seed`'s program on `lib` alone kills a fresh process."""
    p = CONTEXT.Process(target=replay, args=(seed, lib))
    p.start()
    p.join()
    return p.exitcode != 0


def crash_kind(seed):
    """'oracle' (PyTorch alone crashes), 'ours' (adcompile alone does) or 'unreproduced'."""
    if crashes(seed, "torch"):
        return "oracle"
    if crashes(seed, "adcompile"):
        return "ours"
    return "unreproduced"


def runner(first, stop=None, deadline=None):
    """Yield (seed, result) for seeds from `first`, restarting the worker after a crash;
    result is None (same), (program, finding), or ('crash', kind) for a crashed seed."""
    seed = first
    while (stop is None or seed < stop) and (deadline is None or time.time() < deadline):
        parent, child = CONTEXT.Pipe(duplex=False)
        proc = CONTEXT.Process(target=work, args=(child, seed, stop, deadline), daemon=True)
        proc.start()
        child.close()
        finished = False
        while True:
            try:
                msg = parent.recv()
            except EOFError:  # the worker died while checking `seed`
                break
            if msg is None:
                finished = True
                break
            yield msg
            seed = msg[0] + 1
        proc.join()
        parent.close()
        if finished:
            return
        yield seed, ("crash", crash_kind(seed))
        seed += 1
