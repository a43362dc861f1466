"""The check to run before stopping: what CI (``.ci/run``) checks, in this environment.

    python scripts/check.py [--corpus DIR] [--skip STEP ...]

Runs, one after the other (the tests use every core): the README's tests, ruff, the formatter
check, mypy, the generated-docs check, the ``slow`` and ``network`` tests, and the known-real
check (each corpus release linted once, in parallel, by ``scripts/snapshot.py``; the corpus is
fetched into ``DIR`` where it is missing, by default ``$PORTLINT_CORPUS`` or
``~/.cache/portlint-corpus``). Ends with one verdict line and the time each step took; exits 1
where a step failed. What moved against the snapshot kept in ``tests/data/snapshot/`` is said,
not checked.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SNAPSHOT = REPO / ".ci-snapshot"


def steps(corpus: Path) -> dict[str, list[list[str]]]:
    """Each step's commands, run from the repository's root."""
    return {
        "tests": [[PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"]],
        "ruff": [[PYTHON, "-m", "ruff", "check", "."]],
        "format": [[PYTHON, "-m", "ruff", "format", "--check", "."]],
        "mypy": [[PYTHON, "-m", "mypy"]],
        "docs": [[PYTHON, "-m", "portlint.generate", "--check"]],
        "slow": [[PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or network"]],
        "known-real": [
            [PYTHON, "scripts/fetch_corpus.py", str(corpus)],
            [PYTHON, "scripts/snapshot.py", "run", str(corpus), str(SNAPSHOT)],
            [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "corpus"],
        ],
    }


def run_step(commands: list[list[str]], corpus: Path) -> bool:
    env = {**os.environ, "PORTLINT_SNAPSHOT": str(SNAPSHOT), "PORTLINT_CORPUS": str(corpus)}
    for command in commands:
        print(f"$ {' '.join(command)}", flush=True)
        if subprocess.run(command, cwd=REPO, env=env).returncode != 0:
            return False
    return True


def moved_against_kept() -> str:
    """The last line of the snapshot diff against the kept snapshot."""
    diff = subprocess.run(
        [PYTHON, "scripts/snapshot.py", "diff", "tests/data/snapshot", str(SNAPSHOT)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    lines = diff.stdout.strip().splitlines()
    return lines[-1] if lines else diff.stderr.strip()


def main() -> int:
    default = os.environ.get("PORTLINT_CORPUS") or str(Path.home() / ".cache" / "portlint-corpus")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(default))
    parser.add_argument("--skip", nargs="*", default=[], help="steps to leave out")
    args = parser.parse_args()
    timings, failed = [], []
    for name, commands in steps(args.corpus).items():
        if name in args.skip:
            timings.append(f"{name} skipped")
            continue
        print(f"\n== {name}", flush=True)
        started = time.perf_counter()
        if not run_step(commands, args.corpus):
            failed.append(name)
        timings.append(f"{name} {time.perf_counter() - started:.0f} s")
    note = ""
    if "known-real" not in args.skip:
        note = f" (snapshot against tests/data/snapshot: {moved_against_kept()})"
    verdict = f"FAILED: {', '.join(failed)}" if failed else "PASSED"
    print(f"\ncheck: {verdict} — {', '.join(timings)}{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
