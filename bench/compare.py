"""Two states of portlint, or its output formats, on the same trees, interleaved with ruff as the
yardstick.

    git worktree add /tmp/before <rev>
    python bench/compare.py --before /tmp/before --corpus "$(bash ../shared/corpus/fetch_project.sh vllm)" \\
        --corpus "$(bash ../shared/corpus/fetch_project.sh sglang)" --rounds 3
    python bench/compare.py --corpus ... --format concise --format json --format sarif --format full
    python bench/compare.py --corpus ... --config 'platform-inferences = []'

Each round runs, on each tree, ``ruff check --select TID251 --no-cache``, then portlint from
``--before`` (if given) and from this checkout (``portlint check <package> --no-cache
--exit-zero``, no configuration, as a new user runs it), in each ``--format`` (default: concise),
and with ``--config`` from this checkout with those settings too,
one after the other, so that a slow minute of a shared machine slows them all alike. It prints
the medians of wall and CPU time, each portlint's ratio to ruff and, with several formats, to
the concise format of the same checkout, and writes them to ``--out`` (JSON) if given; with
``--markdown``, the rows of a table too. Timed assertions belong here, not in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _time(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of ``command``."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{command[:4]} failed in {cwd}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="a checkout of the old state")
    parser.add_argument("--corpus", type=Path, action="append", required=True)
    parser.add_argument("--format", action="append", dest="formats", help="an output format")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="'KEY = VALUE'",
        help="also run this checkout with these settings (as `portlint check --config`)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--markdown", action="store_true", help="print the rows of a table too")
    args = parser.parse_args()

    formats = args.formats or ["concise"]
    states = {"now": REPO, **({"before": args.before.resolve()} if args.before else {})}
    commands = {
        "ruff TID251": (["ruff", "check", "--select", "TID251", "--no-cache", "--exit-zero"], None)
    }
    for state, checkout in sorted(states.items()):
        for output in formats:
            name = f"portlint {state}" + (f" {output}" if args.formats else "")
            commands[name] = (
                [sys.executable, "-m", "portlint", "check", "--no-cache", "--exit-zero", "-q",
                 "--output-format", output],
                {**os.environ, "PYTHONPATH": str(checkout)},
            )  # fmt: skip
    if args.config:
        configured = [arg for pair in args.config for arg in ("--config", pair)]
        command, env = commands["portlint now" + (" concise" if args.formats else "")]
        commands["portlint now " + "; ".join(args.config)] = ([*command, *configured], env)
    times: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for _ in range(args.rounds):
        for corpus in args.corpus:
            for name, (command, env) in commands.items():
                sample = _time([*command, corpus.name], corpus.parent, env)
                times.setdefault(corpus.name, {}).setdefault(name, []).append(sample)
    results = {}
    rows = ["| tree | case | wall (s) | CPU (s) | CPU / ruff | CPU / concise |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for tree, by_command in times.items():
        medians = {
            name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in by_command.items()
        }
        ruff_wall, ruff_cpu = medians["ruff TID251"]
        results[tree] = {name: {"wall": w, "cpu": c} for name, (w, c) in medians.items()}
        print(f"{tree} (medians of {args.rounds}):")
        for name, (wall, cpu) in medians.items():
            # (the same checkout's concise run, where formats are compared)
            concise = medians.get(" ".join([*name.split()[:2], "concise"]))
            against = f"{cpu / concise[1]:.2f}" if concise and args.formats else ""
            ratio = f"  {wall / ruff_wall:5.1f}x ruff wall, {cpu / ruff_cpu:5.1f}x CPU"
            ratio += f", {against}x concise CPU" if against else ""
            print(
                f"  {name:24} {wall:6.2f} s wall {cpu:6.2f} s CPU"
                + ("" if "ruff" in name else ratio)
            )
            rows.append(
                f"| {tree} | {name} | {wall:.2f} | {cpu:.2f} | {cpu / ruff_cpu:.1f} | {against} |"
            )
    if args.markdown:
        print("\n".join(rows))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
