"""The long fuzz run for a release: many generated programs, each checked as tests/test_fuzz.py
checks a few (tests/fuzzing.py), with the counts printed.

    python scripts/fuzz.py --examples 3000 [--seed 0] [--out DIR]

Each program comes from hypothesmith (Python's grammar) with 1 to 3 trigger statements put at
statement boundaries. A program that breaks a property is written to ``--out`` (default
``fuzz-failures/``) to be minimised and kept in tests/fixtures/fuzz/. Counted: programs tried,
crashes (an exception in portlint), hangs (over ``--hang`` seconds on one program, which is then
reported and the run goes on), disagreements with CPython (or a fix that breaks the file or does
not settle), and how many programs CPython refused. Exit 1 where anything is not zero.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzzing import FAILURES, OUTCOMES, run_one, with_triggers


def programs(count: int, seed: int):
    """``count`` programs, the same for the same seed."""
    import hypothesmith
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed

    made: list[str] = []
    rng = random.Random(seed)

    @settings(
        max_examples=count, database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @fixed_seed(seed)
    @given(hypothesmith.from_grammar())
    def collect(program: str) -> None:
        made.append(program)

    collect()
    for program in made:
        yield with_triggers(program, rng)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=60.0, help="seconds before a hang")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    options = parser.parse_args(argv)
    import portlint.visit  # noqa: F401  (imported once, before the checks fork)

    warnings.simplefilter("ignore", SyntaxWarning)  # (hypothesmith compiles what it generates)

    counts: Counter[str] = Counter()
    start = time.monotonic()
    for number, program in enumerate(programs(options.examples, options.seed)):
        data = program.encode("utf-8")
        outcome, detail = run_one(data, options.hang)
        counts[outcome] += 1
        if number % 500 == 499:
            print(f"{number + 1} programs: {dict(counts)}", file=sys.stderr)
        if outcome in FAILURES:
            options.out.mkdir(exist_ok=True)
            (options.out / f"{outcome}-{number}.py.txt").write_bytes(data)
            print(f"{outcome} on program {number}: {detail.strip().splitlines()[-1]}")
    tried = sum(counts[outcome] for outcome in OUTCOMES)
    print(
        f"{tried} generated programs tried (seed {options.seed}, "
        f"{time.monotonic() - start:.0f} s): "
        + ", ".join(f"{counts[outcome]} {outcome}" for outcome in OUTCOMES)
    )
    return 1 if any(counts[outcome] for outcome in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
