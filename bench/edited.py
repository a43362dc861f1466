"""Warm runs on a tree, no configuration: nothing changed, and one file edited in several ways,
each timed beside ruff's cached run on the same tree.

    python bench/edited.py --corpus <package folder> [--before <checkout>] [--rounds 5]
        [--out bench/edited.json]

The package folder (vLLM 0.33.0's ``vllm``, say) is copied, so caches and edits stay out of it.
The cache is filled once; then in each round, for each case, the edit is made, ``portlint check``
runs and is timed, the file is put back and portlint runs again untimed (so that every case starts
from a filled cache of the tree as it is). Cases:

- ``warm``: nothing changed (the last run's findings are the answer);
- ``comment at the end``: a comment line appended to a small file (its lines stay where they are);
- ``line in the middle``: a statement inserted in the middle of a file, moving the lines below it
  (the project's verdicts are kept: the modules' shapes are the same);
- ``new call``: a call of another module's function added (a new use: the project is joined
  again).

Each is made in the small file and in the large one given. With ``--before``, another checkout
of portlint runs each case right after this one, on a copy of its own. Medians of the rounds,
wall and CPU (user + system of the command and its children), with ruff's cached ``--select
TID251`` run on the same tree in the same round as the yardstick.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMALL = "v1/worker/gpu/spec_decode/utils.py"  # 114 lines (vLLM 0.33.0)
LARGE = "v1/worker/gpu_model_runner.py"  # 7,192 lines
# A statement that can stand between any two top-level statements, and a call of a function of
# another module of the project (vLLM's `vllm.utils.torch_utils.set_random_seed`, imported here).
LINE = "_portlint_bench = {stamp}"
CALL = "from vllm.utils.torch_utils import set_random_seed\nset_random_seed({stamp})"


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def middle(text: str, insert: str) -> str:
    """``insert`` (lines) before the simple statement nearest the middle of ``text``, at its
    indentation: inside a function where the middle is one."""
    lines = text.splitlines(keepends=True)
    simple = (ast.Assign, ast.Expr, ast.Return, ast.AugAssign, ast.AnnAssign)
    statements = [node for node in ast.walk(ast.parse(text)) if isinstance(node, simple)]
    node = min(statements, key=lambda n: abs(n.lineno - len(lines) // 2))
    indent = lines[node.lineno - 1][: node.col_offset]
    added = "".join(indent + line + "\n" for line in insert.splitlines())
    return "".join(lines[: node.lineno - 1]) + added + "".join(lines[node.lineno - 1 :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a package folder (vllm/)")
    parser.add_argument("--before", type=Path, help="another checkout of portlint, run beside")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small", default=SMALL)
    parser.add_argument("--large", default=LARGE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    checkouts = {"now": REPO, **({"before": args.before.resolve()} if args.before else {})}
    work = Path(tempfile.mkdtemp(prefix="portlint-edited-"))
    name = args.corpus.resolve().name
    trees = {}
    for state, checkout in checkouts.items():
        # Bytecode for portlint's modules, as an installed portlint has it (this checkout may
        # run under PYTHONDONTWRITEBYTECODE: then every run would compile them again).
        compileall.compile_dir(checkout / "portlint", quiet=1)
        trees[state] = work / state  # (a copy each: each state's cache its own)
        shutil.copytree(args.corpus, trees[state] / name)
    ruff = ["ruff", "check", name, "--isolated", "--select", "TID251", "--exit-zero"]
    portlint = [sys.executable, "-m", "portlint", "check", name, "--exit-zero", "-q"]

    def run(state: str) -> tuple[float, float]:
        os.environ["PYTHONPATH"] = str(checkouts[state])
        return timed(portlint, trees[state])

    for state in checkouts:
        run(state)
    subprocess.run(ruff, cwd=trees["now"], stdout=subprocess.DEVNULL)
    edits: dict[str, tuple[str, Callable[[str, str], str]] | None] = {"warm": None}
    for size, relative in (("small", args.small), ("large", args.large)):
        for case, edit in (
            ("comment at the end", lambda t, s: t + f"# edited {s}\n"),
            ("line in the middle", lambda t, s: middle(t, LINE.format(stamp=s))),
            ("new call", lambda t, s: middle(t, CALL.format(stamp=s))),
        ):
            edits[f"{case}, {size} file"] = (relative, edit)
    samples: dict[str, list[tuple[float, float]]] = {"ruff cached": []}
    for round_ in range(args.rounds):
        samples["ruff cached"].append(timed(ruff, trees["now"]))
        for case, change in edits.items():
            for state in checkouts:
                original = None
                if change is not None:
                    path = trees[state] / name / change[0]
                    original = path.read_text()
                    path.write_text(change[1](original, f"{round_}{time.time_ns()}"))
                samples.setdefault(f"{case} ({state})", []).append(run(state))
                if original is not None:
                    path.write_text(original)
                    run(state)
        print(f"round {round_ + 1}/{args.rounds}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    rows = {
        case: {
            "wall": statistics.median(w for w, _ in found),
            "cpu": statistics.median(c for _, c in found),
            "runs": len(found),
        }
        for case, found in samples.items()
    }
    commits = {
        state: subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=checkout, capture_output=True, text=True
        ).stdout.strip()
        for state, checkout in checkouts.items()
    }
    print(f"{name}, {os.cpu_count()} CPUs, {commits}; medians of {args.rounds}\n")
    print("| case | wall (s) | CPU (s) |\n| --- | ---: | ---: |")
    for case, row in rows.items():
        print(f"| {case} | {row['wall']:.2f} | {row['cpu']:.2f} |")
    if args.out:
        record = {"tree": name, "commits": commits, "rows": rows}
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
