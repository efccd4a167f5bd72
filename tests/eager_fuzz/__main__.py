"""`python -m tests.eager_fuzz --time SECONDS` (fresh seeds) or `--seeds A B` (a range), or
`--seed N` (replay one program, printed with its first difference, shrunk)."""

import argparse
import collections
import faulthandler
import os
import sys
import time

from tests.eager_fuzz import check, gen


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.eager_fuzz")
    p.add_argument("--time", type=float, help="fuzz fresh seeds for this many seconds")
    p.add_argument("--seeds", type=int, nargs=2, metavar=("FIRST", "STOP"))
    p.add_argument("--seed", type=int, help="replay one seed")
    p.add_argument("--examples", type=int, default=1, help="shrunk programs shown per class")
    args = p.parse_args(argv)
    faulthandler.enable()  # a crash (of either library) names the statement being observed
    if args.seed is not None:
        program = gen.generate(args.seed)
        finding = check.check(program)
        print(program.render())
        if finding is not None:
            print(check.describe(program, finding, check.shrink(program, finding)))
        return 0 if finding is None else 1
    if args.seeds:
        seeds = iter(range(*args.seeds))
    else:
        base = int.from_bytes(os.urandom(4), "little") * 1000
        seeds = (base + i for i in range(10**9))
    tried, failed = fuzz(seeds, args.time, progress=True)
    report(tried, failed, args.examples)
    return 1 if failed else 0


def fuzz(seeds, seconds=None, progress=False):
    """(programs tried, [(program, finding)]) until seeds or seconds run out. With `progress`,
    each failing seed and, every 10,000 programs, the totals so far go to stderr (so a run that
    dies, e.g. when the oracle itself crashes, still leaves its rate)."""
    start, tried, failed = time.monotonic(), 0, []
    for seed in seeds:
        if seconds is not None and time.monotonic() - start > seconds:
            break
        program = gen.generate(seed)
        tried += 1
        if progress and tried % 10_000 == 0:
            print(f"-- {tried} programs, {len(failed)} failing, now at seed {seed}",
                  file=sys.stderr, flush=True)
        finding = check.check(program)
        if finding is not None:
            failed.append((program, finding))
            if progress:
                print(f"seed {seed}: {finding.headline()}", file=sys.stderr, flush=True)
    return tried, failed


def report(tried, failed, examples=1, out=sys.stdout):
    classes = collections.defaultdict(list)
    for program, finding in failed:
        classes[finding.signature()].append((program, finding))
    rate = 1000.0 * len(failed) / max(tried, 1)
    print(f"{tried} programs, {len(failed)} failing ({rate:.1f} per 1000), "
          f"{len(classes)} classes", file=out)
    for sig, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):4d}  {sig}   (seeds {', '.join(str(p.seed) for p, _ in items[:5])})",
              file=out)
    for sig, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        for program, finding in items[:examples]:
            print(check.describe(program, finding, check.shrink(program, finding)), file=out)


if __name__ == "__main__":
    sys.exit(main())
