"""Draw the seeded random sample of findings that an audit reads (docs/precision.md).

    python scripts/audit_sample.py sglang                 # prints a markdown table to fill in
    python scripts/audit_sample.py sglang --findings F    # sample from a saved concise output

The project's tree comes from ``../shared/corpus/fetch_project.sh NAME`` (vllm 0.33.0, sglang
0.5.23, deepspeed 0.19.8, transformers 5.23.0, accelerate 1.15.0; ``--version`` for another).
portlint runs from the folder above the package, with **no configuration** (``--isolated``
where the installed portlint has it; the corpus folders hold no pyproject.toml either way), so
paths read ``sglang/...``. Only the codes ``--codes`` selects are sampled (default: the device and
API rules, ``PORT1`` and ``PORT4``); ``--n`` findings (all of them when fewer) are drawn with
``random.Random(seed)`` from the findings sorted by path, line, column and code, so the same
output and seed always give the same sample.
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
from pathlib import Path

CORPUS_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "fetch_project.sh"
# `path:line:col: CODE message`, as portlint's concise format prints a finding.
CONCISE = re.compile(
    r"^(?P<path>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<code>PORT\d+) (?P<message>.*)$"
)
DEFAULT_SEED = 20261201


def project_tree(name: str, version: str | None) -> Path:
    command = ["bash", str(CORPUS_SCRIPT), name, *([version] if version else [])]
    return Path(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip())


def run_portlint(tree: Path) -> str:
    command = [sys.executable, "-m", "portlint", "check", tree.name, "--no-cache", "--exit-zero"]
    command += ["--output-format", "concise", "-q"]
    return subprocess.run(
        command, cwd=tree.parent, check=True, capture_output=True, text=True
    ).stdout


def findings(output: str, prefixes: tuple[str, ...]) -> list[dict[str, str]]:
    rows = [m.groupdict() for m in map(CONCISE.match, output.splitlines()) if m]
    rows = [row for row in rows if row["code"].startswith(prefixes)]
    return sorted(rows, key=lambda r: (r["path"], int(r["line"]), int(r["col"]), r["code"]))


def sample(rows: list[dict[str, str]], n: int, seed: int) -> list[dict[str, str]]:
    if len(rows) <= n:
        return rows
    chosen = random.Random(seed).sample(range(len(rows)), n)
    return [rows[i] for i in sorted(chosen)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project")
    parser.add_argument("--version")
    parser.add_argument("--findings", type=Path, help="a saved concise output to sample from")
    parser.add_argument("--codes", default="PORT1,PORT4", help="code prefixes to sample")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)

    if args.findings:
        output = args.findings.read_text(encoding="utf-8")
    else:
        output = run_portlint(project_tree(args.project, args.version))
    rows = findings(output, tuple(args.codes.split(",")))
    chosen = sample(rows, args.n, args.seed)
    print(
        f"<!-- {args.project}: {len(rows)} findings of {args.codes}; sample of {len(chosen)}, "
        f"seed {args.seed} -->"
    )
    print("| # | finding | code | verdict | reason |")
    print("| ---: | --- | --- | --- | --- |")
    for index, row in enumerate(chosen, 1):
        print(f"| {index} | {row['path']}:{row['line']}:{row['col']} | {row['code']} |  |  |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
