"""Write what is derived from the rules: ``portlint/catalog.py``.

    python -m portlint.generate           # rewrite the derived files
    python -m portlint.generate --check   # exit 1 if one is stale (what the tests check)

The catalog is what the text gate, the cut and the configuration know of each rule, readable
without importing LibCST or the rules; each rule class declares it (see ``portlint.rule.Rule``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from portlint import evidence as shared_evidence
from portlint.evidence import Entry, Evidence

PACKAGE = Path(__file__).resolve().parent
CATALOG_FILE = PACKAGE / "catalog.py"

HEADER = '''"""Every rule's declarations, as the text gate, the cut and the configuration need them.

Generated from the rule classes in portlint/rules/ by `python -m portlint.generate`: do not edit.
(LibCST-free: a run that parses nothing reads this, and never imports the rules.)
"""

from __future__ import annotations

from portlint import evidence
from portlint.evidence import Entry{extra}

'''
FOOTER = """
# The device rules: silent in code that runs only on CUDA.
GUARDABLE = frozenset(code for code, entry in CATALOG.items() if entry.guardable)
"""


def _evidence(value: Evidence) -> str:
    """A piece of evidence as the catalog writes it: by its name where ``portlint.evidence``
    defines it (so a change there needs no new catalog), else as the value itself."""
    for name, shared in vars(shared_evidence).items():
        if isinstance(shared, Evidence) and shared == value and name.isupper():
            return f"evidence.{name}"
    return repr(value)


def _entry(entry: Entry) -> str:
    pieces = "".join(f"{_evidence(e)}, " for e in entry.evidence)
    return (
        "    Entry(\n"
        f"        module={entry.module!r},\n"
        f"        name={entry.name!r},\n"
        f"        triggers={entry.triggers!r},\n"
        f"        guardable={entry.guardable!r},\n"
        f"        evidence=({pieces.rstrip()}),\n"
        f"        at_launches={entry.at_launches!r},\n"
        f"        reads_class={entry.reads_class!r},\n"
        "    )"
    )


def catalog_text() -> str:
    """The text ``portlint/catalog.py`` must have, from the rules as they are now."""
    from portlint.registry import discover_rules

    rules = discover_rules()
    body = "".join(f"    {code!r}: {_entry(rule.entry())[4:]},\n" for code, rule in rules.items())
    # (`Evidence` is named only where a rule declares evidence of its own.)
    header = HEADER.format(extra=", Evidence" if "Evidence(" in body else "")
    return f"{header}CATALOG: dict[str, Entry] = {{\n{body}}}\n{FOOTER}"


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    text = catalog_text()
    current = CATALOG_FILE.read_text(encoding="utf-8") if CATALOG_FILE.exists() else ""
    if current == text:
        return 0
    if check:
        print(f"{CATALOG_FILE} is stale: run `python -m portlint.generate`", file=sys.stderr)
        return 1
    CATALOG_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {CATALOG_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
