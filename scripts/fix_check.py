"""Check portlint's fixes on whole real projects: fix a copy, then check what changed.

    python scripts/fix_check.py [NAME ...] [--json OUT]   (default: vllm sglang deepspeed transformers)

Each NAME's package folder (``../shared/corpus/fetch_project.sh NAME`` prints it) is copied into a
scratch git repository and fixed with ``portlint check --fix --unsafe-fixes`` (no configuration).
Then, per project:

- every changed file compiles;
- no new undefined name or unused import: ``ruff check --select F401,F811,F821,F822,F823``
  before and after, compared per file, code and message;
- no finding introduced by a fix: a finding after the fix on a line the fix wrote, other than
  one that stood before (same file, code and message) on a line the fix replaced;
- a second ``--fix --unsafe-fixes`` changes nothing;
- the fixes applied equal the fixes listed before fixing (``[*] N fixable``);
- each changed module that imported before the fix still imports (best effort: torch is
  installed, third-party modules that are not are stubbed; one subprocess, a timeout per module).

Prints one JSON object per project (and writes them all to ``--json``); exits 1 if a check fails.
The diff of each fixed tree is kept as ``<scratch>/fix.diff`` (``--keep``: the scratch too).
"""

from __future__ import annotations

import argparse
import json
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FETCH = REPO.parent / "shared" / "corpus" / "fetch_project.sh"
PROJECTS = ("vllm", "sglang", "deepspeed", "transformers")
RUFF_CODES = "F401,F811,F821,F822,F823"
FINDING = re.compile(
    r"^(?P<path>[^:\s]+\.py):(?P<line>\d+):\d+: (?P<code>PORT\d{3}) (?P<message>.*)$"
)
FIXABLE = re.compile(r"\[\*\] (\d+) fixable")
APPLIED = re.compile(r"^\s*(\d+) × (PORT\d{3})", re.M)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)
IMPORT_TIMEOUT = 30  # seconds per module

IMPORTER = r"""
import importlib, importlib.abc, importlib.machinery, json, signal, sys, types

class Anything(type):
    # What a missing third-party module's names are: any attribute, call, subscript or base.
    def __new__(meta, name="Anything", bases=(), namespace=None):
        return super().__new__(meta, name, bases, dict(namespace or {}))
    def __init__(cls, *args, **kwargs):
        pass
    def __getattr__(cls, name):
        return stub(name)
    def __call__(cls, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else Anything()
    def __getitem__(cls, key):
        return Anything()
    def __or__(cls, other):
        return Anything()
    __ror__ = __or__
    def __iter__(cls):
        return iter(())
    def __mro_entries__(cls, bases):
        return (object,)

# Never stubbed: torch, and the plugins of other accelerators (a project probes for them by
# importing them: a stub would make it take that device's path).
REAL = {"torch", "triton", "torch_npu", "intel_extension_for_pytorch", "habana_frameworks",
        "torch_xla", "torch_mlu", "torch_musa", "torch_sdaa", "mindspore", "oneccl_bindings_for_pytorch"}

def stub(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Anything(name)

def importer():
    # The module whose code runs the import statement (past importlib's frames and this one's).
    frame = sys._getframe(1)
    while frame is not None and (
        frame.f_code.co_filename == "<string>"
        or frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib"))
    ):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""

class Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # Stub the third-party modules that are not installed (a best-effort import of a project
    # whose dependencies are not all here); torch and the project itself are real.
    def __init__(self, project):
        self.project = project
    def find_spec(self, name, path, target=None):
        top = name.partition(".")[0]
        if top in REAL or top == self.project or top in sys.stdlib_module_names:
            return None
        if importer().partition(".")[0] != self.project:
            return None  # a library's own optional import (sympy's of flint): left to fail
        if any(f.find_spec(name, path) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")):
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = stub
        return module
    def exec_module(self, module):
        pass

names = sys.stdin.read().split()
sys.meta_path.append(Stubs(names[0].partition(".")[0] if names else ""))
signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError()))
for name in names:
    signal.alarm(TIMEOUT)
    try:
        importlib.import_module(name)
        ok = True
    except BaseException as error:
        ok = type(error).__name__
    signal.alarm(0)
    print("FIX-CHECK", json.dumps([name, ok]), flush=True)
""".replace("TIMEOUT", str(IMPORT_TIMEOUT))


def run(command: list[str], cwd: Path, check: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=check)


def portlint(package: str, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "portlint", "check", package, "--no-cache", "--exit-zero"]
    return run([*command, *args], work)


def findings(output: str) -> list[tuple[str, int, str, str]]:
    return [
        (m["path"], int(m["line"]), m["code"], m["message"])
        for m in map(FINDING.match, output.splitlines())
        if m
    ]


def ruff(package: str, work: Path) -> Counter[tuple[str, str, str]]:
    command = ["ruff", "check", "--isolated", "--no-cache", "--select", RUFF_CODES]
    result = run([*command, "--output-format", "json", "--exit-zero", package], work)
    return Counter(
        (str(Path(d["filename"]).relative_to(work)), d["code"], d["message"])
        for d in json.loads(result.stdout)
    )


def hunks(diff: str) -> dict[str, tuple[set[int], set[int]]]:
    """Per file of a ``git diff -U0``: the old lines replaced, the new lines written."""
    changed: dict[str, tuple[set[int], set[int]]] = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif path and (m := HUNK.match(line)):
            old, old_count, new, new_count = (int(g) if g else None for g in m.groups())
            assert old is not None and new is not None  # a hunk header has both starts
            removed, written = changed.setdefault(path, (set(), set()))
            removed.update(range(old, old + (1 if old_count is None else old_count)))
            written.update(range(new, new + (1 if new_count is None else new_count)))
    return changed


def imports(modules: list[str], work: Path) -> dict[str, bool | str]:
    """Whether each module imports, from the tree at ``work`` (one process, in order)."""
    if not modules:
        return {}
    try:
        result = subprocess.run(
            [sys.executable, "-c", IMPORTER],
            cwd=work,
            input="\n".join(modules),
            capture_output=True,
            text=True,
            timeout=IMPORT_TIMEOUT * len(modules) + 60,
        )
        lines = result.stdout.splitlines()
    except subprocess.TimeoutExpired as expired:
        lines = (expired.stdout or b"").decode().splitlines() if expired.stdout else []
    marker = "FIX-CHECK "
    done = dict(json.loads(line[len(marker) :]) for line in lines if line.startswith(marker))
    return {m: done.get(m, "crashed") for m in modules}


def module_name(path: str) -> str:
    parts = Path(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_check(work: Path, changed: list[str]) -> tuple[list[str], dict[str, str]]:
    """The changed modules that import from the original tree (commit ``HEAD~1`` of ``work``),
    and those of them that do not from the fixed one (``HEAD``), with why. The same modules, in
    the same order, both times: imports have effects."""
    modules = [module_name(p) for p in changed]
    run(["git", "checkout", "-q", "HEAD~1", "--", "."], work, check=True)
    before = imports(modules, work)
    run(["git", "checkout", "-q", "HEAD", "--", "."], work, check=True)
    after = imports(modules, work)
    importable = [m for m, ok in before.items() if ok is True]
    return importable, {m: str(after[m]) for m in importable if after[m] is not True}


def check(name: str, keep: bool) -> dict:
    source = Path(run(["bash", str(FETCH), name], REPO, check=True).stdout.strip())
    package = source.name
    work = Path(tempfile.mkdtemp(prefix=f"portlint-fix-check-{name}-"))
    shutil.copytree(source, work / package, ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.name=fix-check", "-c", "user.email=fix-check@localhost"]
    run(["git", "init", "-q"], work, check=True)
    run(["git", "add", "-A"], work, check=True)
    run([*git, "commit", "-qm", "original"], work, check=True)

    ruff_before = ruff(package, work)
    listed_output = portlint(package, work, "--unsafe-fixes").stdout
    listed = int(m.group(1)) if (m := FIXABLE.search(listed_output)) else 0
    before = findings(listed_output)
    fixed = portlint(package, work, "--fix", "--unsafe-fixes", "--show-fixes")
    applied: Counter[str] = Counter()
    for count, code in APPLIED.findall(fixed.stdout):  # per file, then per rule
        applied[code] += int(count)
    dropped = [line for line in fixed.stderr.splitlines() if "fix dropped" in line]
    diff = run(["git", "diff", "-U0"], work).stdout
    (work.parent / f"{work.name}.diff").write_text(diff)
    changed = sorted(hunks(diff))

    failures = []
    compiled = Path(tempfile.mkdtemp(prefix="portlint-fix-check-pyc-"))
    for path in changed:
        try:
            py_compile.compile(str(work / path), doraise=True, cfile=str(compiled / "m.pyc"))
        except py_compile.PyCompileError as error:
            failures.append(f"{path}: does not compile: {error.msg}")
    shutil.rmtree(compiled)
    new_ruff = ruff(package, work) - ruff_before
    failures += [f"{p}: new {code} {message}" for (p, code, message) in new_ruff]

    after = findings(portlint(package, work, "--unsafe-fixes").stdout)
    changes = hunks(diff)
    stood = Counter(
        (path, code, message)
        for path, line, code, message in before
        if line in changes.get(path, (set(), set()))[0]
    )
    introduced = []
    for path, line, code, message in after:
        if line in changes.get(path, (set(), set()))[1]:
            if stood[(path, code, message)]:
                stood[(path, code, message)] -= 1
            else:
                introduced.append(f"{path}:{line}: {code} {message}")
    failures += [f"introduced by a fix: {f}" for f in introduced]

    run([*git, "commit", "-qam", "fixed"], work)
    portlint(package, work, "--fix", "--unsafe-fixes")
    second = run(["git", "diff", "--stat"], work).stdout.strip()
    if second:
        failures.append(f"a second --fix changed files: {second.splitlines()[-1]}")
    if sum(applied.values()) != listed:
        failures.append(f"{sum(applied.values())} fixes applied, {listed} listed")

    importable, broken = import_check(work, changed)
    failures += [f"{m}: imported before the fix, not after ({why})" for m, why in broken.items()]

    report = {
        "project": name,
        "findings before": len(before),
        "fixes listed": listed,
        "fixes applied": sum(applied.values()),
        "applied by rule": dict(sorted(applied.items())),
        "fixes dropped": len(dropped),
        "files changed": len(changed),
        "files that do not compile": sum("does not compile" in f for f in failures),
        "new ruff F-findings": len(new_ruff),
        "new ruff by code": dict(Counter(code for _, code, _ in new_ruff)),
        "findings after": len(after),
        "findings introduced by a fix": len(introduced),
        "second run changed nothing": not second,
        "changed modules importable before": len(importable),
        "of them importable after": len(importable) - len(broken),
        "diff": str(work.parent / f"{work.name}.diff"),
        "failures": failures,
    }
    if not keep:
        shutil.rmtree(work)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(PROJECTS))
    parser.add_argument("--json", type=Path, help="write the reports here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch repositories")
    parser.add_argument(
        "--imports-of", type=Path, help="only the import check, of a scratch that --keep left"
    )
    args = parser.parse_args()
    if args.imports_of:
        diff = run(["git", "diff", "--name-only", "HEAD~1", "HEAD"], args.imports_of).stdout
        importable, broken = import_check(args.imports_of, diff.split())
        print(json.dumps({"importable before": len(importable), "broken": broken}))
        return 1 if broken else 0
    reports = []
    for name in args.names:
        report = check(name, args.keep)
        reports.append(report)
        print(json.dumps(report, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1) + "\n")
    return 1 if any(r["failures"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
