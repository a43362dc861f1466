"""How many modules a demand-driven project index would still have to read.

    python bench/index_closure.py <package folder>        # e.g. ~/.cache/.../vllm-0.33.0/vllm

The index reads every module of the project (issue #19's cost). An index that reads only the
modules that could change a verdict would start from the findings the rules report, ask who uses
the function or class each sits in (a module can use a name only where its text holds the
name), read those modules, and go on from the uses there that are not guarded themselves, to a
fixpoint. This runs portlint once (no configuration) to get the findings before the index judges
them and every module's facts, then follows that closure over the modules' words and prints how
many modules each round has read. It counts what a text filter lets through, an upper bound on
what name resolution would keep: ``--modules`` also asks for each finding's module by the last
part of its name (who imports it), as the ``callers`` inference of modules needs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from portlint.catalog import GUARDABLE
from portlint.config import Overrides, find_pyproject, load_settings
from portlint.discovery import discover
from portlint.index import project as index_project
from portlint.run import lint_files

# Identifier characters kept, every other byte a space: a module's words are its split.
_WORD_BYTES = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123)) + b"_"
_TO_WORDS = bytes(c if c in _WORD_BYTES else 32 for c in range(256))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--modules", action="store_true", help="ask for the modules too")
    arguments = parser.parse_args()
    seen: dict = {}
    judge = index_project.Project.judge

    def keeping(self, violations, silenced):
        seen.update(violations=list(violations), project=self)
        return judge(self, violations, silenced)

    index_project.Project.judge = keeping
    settings = load_settings(find_pyproject(arguments.package / "x.py"), Overrides(), Path.cwd())
    files, _ = discover([arguments.package], settings)
    started = time.perf_counter()
    lint_files(files, settings, project=True)
    print(f"{len(files)} modules; the run took {time.perf_counter() - started:.1f} s")
    project = seen["project"]
    words = {str(f): set(f.read_bytes().translate(_TO_WORDS).split()) for f in files}
    findings = [v for v in seen["violations"] if v.code in GUARDABLE]
    print(
        f"{len(findings)} device findings before the index, in {len({v.path for v in findings})} modules"
    )
    asked: set[bytes] = set()
    wanted = set()
    for violation in findings:
        wanted |= _names_at(project, violation.path, violation.line, arguments.modules)
    read: set[str] = set()
    while wanted - asked:
        new = wanted - asked
        asked |= new
        for path, found in words.items():
            if path in read or not found & new:
                continue
            read.add(path)
            for name, line, guarded, _unit in project.facts.get(path, {}).get("uses", []):
                if not guarded and name.rsplit(".", 1)[-1].encode() in asked:
                    wanted |= _names_at(project, path, line, arguments.modules)
        print(f"round: {len(asked)} names asked, {len(read)} of {len(files)} modules read")


def _names_at(project, path: str, line: int, modules: bool) -> set[bytes]:
    """The names a use or finding at ``path:line`` makes the index ask about: its top-level
    function or class (and, with ``modules``, its module)."""
    names = {
        unit.encode()
        for unit, start, end in project.facts.get(path, {}).get("units", [])
        if start <= line <= end and "." not in unit
    }
    if modules and path in project.module_of:
        names.add(project.module_of[path].rsplit(".", 1)[-1].encode())
    return names


if __name__ == "__main__":
    main()
