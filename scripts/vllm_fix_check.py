"""Prove portlint's fixes safe on a whole tree: fix a copy, then check what changed.

    python scripts/vllm_fix_check.py "$(bash ../shared/corpus/fetch_vllm.sh)"

On a copy of the tree: (1) lint it (JSON, with every fix's edits); (2) `--fix --unsafe-fixes`;
(3) every changed file must still compile (`py_compile`); (4) every changed line must lie in an
edit of a fix reported in (1); (5) a second `--fix --unsafe-fixes` must change nothing and find
nothing fixable. Prints the counts; exits 1 if a check fails.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import py_compile
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def portlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "portlint", "check", "vllm", "-j", "2", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*.py")
    }


def main(source: Path) -> int:
    work = Path(tempfile.mkdtemp(prefix="portlint-fix-check-"))
    shutil.copytree(source, work / "vllm")
    original = {
        p: (work / p).read_text(encoding="utf-8", errors="surrogateescape") for p in digest(work)
    }

    findings = json.loads(portlint("--output-format", "json", "--exit-zero", cwd=work).stdout)
    fixable = [f for f in findings if f["fix"]]
    allowed: dict[str, set[int]] = {}
    for finding in fixable:
        path = str(Path(finding["filename"]).relative_to(work))
        for edit in finding["fix"]["edits"]:
            start, end = edit["location"]["row"], edit["end_location"]["row"]
            allowed.setdefault(path, set()).update(range(start, max(end, start + 1)))

    fixed = portlint("--fix", "--unsafe-fixes", "--show-fixes", "--exit-zero", cwd=work)
    applied = Counter()
    for line in fixed.stdout.splitlines():
        if "×" in line:
            count, code = line.split("×")[0].strip(), line.split("×")[1].split()[0]
            applied[code] += int(count)
    dropped = [line for line in fixed.stderr.splitlines() if "fix dropped" in line]

    after = {p: (work / p).read_text(encoding="utf-8", errors="surrogateescape") for p in original}
    changed = [p for p in original if after[p] != original[p]]
    failures = []
    for path in changed:
        try:
            py_compile.compile(str(work / path), doraise=True, cfile=str(work / (path + "c")))
        except py_compile.PyCompileError as error:
            failures.append(f"{path}: does not compile: {error.msg}")
        matcher = difflib.SequenceMatcher(
            a=original[path].split("\n"), b=after[path].split("\n"), autojunk=False
        )
        for tag, i1, i2, _, _ in matcher.get_opcodes():
            touched = set(range(i1 + 1, i2 + 1)) or {i1 + 1}
            if tag != "equal" and not touched <= allowed.get(path, set()):
                failures.append(f"{path}: lines {i1 + 1}-{i2} changed outside a reported fix")

    before_second = digest(work)
    second = portlint("--fix", "--unsafe-fixes", "--exit-zero", cwd=work)
    if digest(work) != before_second:
        failures.append("a second --fix run changed files")
    remaining = json.loads(portlint("--output-format", "json", "--exit-zero", cwd=work).stdout)
    still_fixable = [f for f in remaining if f["fix"]]
    if still_fixable:
        failures.append(f"{len(still_fixable)} findings still have a fix after --fix")

    print(f"findings before: {len(findings)} ({len(fixable)} with a fix)")
    print(
        f"fixes applied: {sum(applied.values())} ({', '.join(f'{c}: {n}' for c, n in sorted(applied.items()))})"
    )
    print(f"fixes dropped: {len(dropped)}")
    for line in dropped:
        print(f"  {line}")
    print(
        f"files changed: {len(changed)}; all compile: {not any('compile' in f for f in failures)}"
    )
    print(
        f"findings after: {len(remaining)}; second run changed nothing: {'a second' not in ' '.join(failures)}"
    )
    print(f"second run stderr: {second.stderr.strip() or 'none'}")
    for failure in failures:
        print(f"FAIL {failure}")
    shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
