"""Check that a warm run after edits finds what a cold run finds, on a copy of a real tree.

Usage: ``python scripts/check_warm.py PACKAGE_FOLDER [--seed N] [--steps 4] [--files 8]``

The folder (vLLM 0.33.0's ``vllm``, say) is copied; portlint fills its cache on the copy. Then,
at each step, ``--files`` files drawn at random (seeded) are edited, and ``portlint check`` runs
with the cache and with ``--no-cache`` (no configuration, concise output): the two outputs must
be the same. Even steps insert a comment line at a random place in each file (every line below it
moves; the modules' join shapes stay, so the project's kept verdicts are used); odd steps remove
one of each file's top-level import lines (the shapes change: the project is joined again).
Prints each step's finding count and verdict; exits 1 if any step differs.
"""

from __future__ import annotations

import argparse
import difflib
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--files", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="portlint-warm-"))
    name = args.folder.resolve().name
    shutil.copytree(args.folder, work / name)
    command = [sys.executable, "-m", "portlint", "check", name, "--exit-zero"]
    command += ["--output-format", "concise"]

    def run(*extra: str) -> str:
        return subprocess.run([*command, *extra], cwd=work, capture_output=True, text=True).stdout

    run()
    rng = random.Random(args.seed)
    files = sorted((work / name).rglob("*.py"))
    differing = 0
    for step in range(args.steps):
        for path in rng.sample(files, args.files):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
            imports = [i for i, line in enumerate(lines) if line.startswith(("import ", "from "))]
            if step % 2 and imports:
                del lines[rng.choice(imports)]
            else:
                lines.insert(rng.randrange(len(lines) + 1), "# an edit of check_warm.py\n")
            path.write_text("".join(lines), encoding="utf-8")
        warm, cold = run(), run("--no-cache")
        same = warm == cold
        differing += not same
        print(f"step {step}: {len(cold.splitlines())} lines of output; warm == cold: {same}")
        if not same:
            diff = difflib.unified_diff(
                cold.splitlines(True), warm.splitlines(True), "cold", "warm"
            )
            sys.stdout.writelines(list(diff)[:60])
    shutil.rmtree(work, ignore_errors=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
