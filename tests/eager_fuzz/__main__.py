"""`python -m tests.eager_fuzz --time SECONDS` (fresh seeds) or `--seeds A B` (a range), or
`--seed N` (replay one program, printed with its first difference, shrunk)."""

import argparse
import collections
import faulthandler
import os
import sys
import time

from tests.eager_fuzz import check, gen, worker


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.eager_fuzz")
    p.add_argument("--time", type=float, help="fuzz fresh seeds for this many seconds")
    p.add_argument("--seeds", type=int, nargs=2, metavar=("FIRST", "STOP"))
    p.add_argument("--seed", type=int, help="replay one seed")
    p.add_argument("--examples", type=int, default=1, help="shrunk programs shown per class")
    args = p.parse_args(argv)
    faulthandler.enable()  # a crash replaying one seed names the statement being run
    if args.seed is not None:
        program = gen.generate(args.seed)
        finding = check.check(program)
        print(program.render())
        if finding is not None:
            print(check.describe(program, finding, check.shrink(program, finding)))
        return 0 if finding is None else 1
    if args.seeds:
        first, stop = args.seeds
    else:
        first, stop = int.from_bytes(os.urandom(4), "little") * 1000, None
    tried, failed, crashed = fuzz(first, stop, args.time, progress=True)
    report(tried, failed, args.examples, crashed=crashed)
    return 1 if failed or "ours" in crashed.values() else 0


def fuzz(first, stop=None, seconds=None, progress=False):
    """(programs tried, [(program, finding)], {seed: crash kind}) for seeds first, first + 1,
    ... until `stop` or `seconds` run out. Programs run in a worker process
    (`worker.runner`): a crash is replayed and recorded as PyTorch's (`oracle`), ours, or
    `unreproduced`, and the run goes on. With `progress`, each failing seed and, every 10,000
    programs, the totals so far go to stderr."""
    deadline = None if seconds is None else time.time() + seconds
    tried, failed, crashed = 0, [], {}
    for seed, result in worker.runner(first, stop, deadline):
        tried += 1
        if progress and tried % 10_000 == 0:
            print(f"-- {tried} programs, {len(failed)} failing, now at seed {seed}",
                  file=sys.stderr, flush=True)
        if result is None:
            continue
        if result[0] == "crash":
            crashed[seed] = result[1]
            if progress:
                print(f"seed {seed}: the process crashed ({result[1]})", file=sys.stderr,
                      flush=True)
            continue
        failed.append(result)
        if progress:
            print(f"seed {seed}: {result[1].headline()}", file=sys.stderr, flush=True)
    return tried, failed, crashed


def report(tried, failed, examples=1, out=sys.stdout, crashed=None):
    """The rate and the classes; a crash of ours counts as a failing program, an oracle
    crash or an unreproduced one does not (listed apart)."""
    crashed = crashed or {}
    ours = [s for s, kind in crashed.items() if kind == "ours"]
    classes = collections.defaultdict(list)
    for program, finding in failed:
        classes[finding.signature()].append((program, finding))
    n_failed = len(failed) + len(ours)
    rate = 1000.0 * n_failed / max(tried, 1)
    print(f"{tried} programs, {n_failed} failing ({rate:.1f} per 1000), "
          f"{len(classes) + bool(ours)} classes", file=out)
    for kind in ("ours", "oracle", "unreproduced"):
        seeds = [s for s, k in crashed.items() if k == kind]
        if seeds:
            print(f"  {len(seeds):4d}  crash ({kind})   (seeds "
                  f"{', '.join(map(str, seeds[:5]))})", file=out)
    for sig, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):4d}  {sig}   (seeds {', '.join(str(p.seed) for p, _ in items[:5])})",
              file=out)
    for sig, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        for program, finding in items[:examples]:
            print(check.describe(program, finding, check.shrink(program, finding)), file=out)


if __name__ == "__main__":
    sys.exit(main())
