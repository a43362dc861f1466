"""Every output format, in one registry (:data:`FORMATS`): concise text, full text, JSON (ruff's
field names), JSON lines, JUnit XML, GitHub annotations, SARIF.

Each renders the same list of violations. ``sources`` maps a path to its text where the file on
disk is not the source (stdin); otherwise a file's text is read when a format shows source lines.
What people read beside the findings (the summary, the statistics) is in
:mod:`portlint.reporters`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from portlint import __version__
from portlint.baseline import fingerprint
from portlint.catalog import CATALOG
from portlint.docs import REPOSITORY_URL, rule_url
from portlint.findings import Fix, Silenced, Violation, split_lines
from portlint.reporters import (
    INVALID_SYNTAX,
    code_of,
    label,
    location,
    silenced_report,
    statistics,
    statistics_items,
)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"  # the base of SARIF's file URIs: the repository root
FINGERPRINT = "portlint/v1"  # SARIF's partialFingerprints key: the baseline's fingerprint


class Sources:
    """File texts, read once each, for formats that quote source lines."""

    def __init__(self, given: dict[str, str] | None = None) -> None:
        self.texts = dict(given or {})

    def lines(self, path: str) -> list[str]:
        if path not in self.texts:
            try:
                self.texts[path] = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self.texts[path] = ""
        return [line.rstrip("\r\n") for line in split_lines(self.texts[path])]


def text_report(
    violations: list[Violation], color: bool = False, unsafe_fixes: bool = False
) -> str:
    lines = [f"{location(v, color)} {label(v, color, unsafe_fixes)}" for v in violations]
    return "\n".join(lines) + ("\n" if lines else "")


def _fix_json(fix: Fix | None) -> dict | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.message,
        "edits": [
            {
                "content": e.content,
                "location": {"row": e.line, "column": e.col},
                "end_location": {"row": e.end_line, "column": e.end_col},
            }
            for e in fix.edits
        ],
    }


def severity(violation: Violation) -> str:
    """``error``, or ``warning`` for a finding that needs a look (confidence ``likely``)."""
    return "warning" if violation.confidence == "likely" else "error"


def _name(violation: Violation) -> str:
    return CATALOG[violation.code].name if violation.code else INVALID_SYNTAX


def _url(violation: Violation) -> str | None:
    return rule_url(CATALOG[violation.code].name) if violation.code else None


def json_items(violations: list[Violation]) -> list[dict]:
    """The findings as ruff's JSON objects (plus ``confidence`` and ``detail``)."""
    return [
        {
            "cell": None,
            "code": code_of(v),
            "confidence": v.confidence,
            "detail": v.detail,
            "end_location": {"column": v.end_col or v.col, "row": v.end_line or v.line},
            "filename": os.path.abspath(v.path),
            "fix": _fix_json(v.fix),
            "location": {"column": v.col, "row": v.line},
            "message": v.message,
            "name": _name(v),
            "noqa_row": v.line if v.code else None,
            "severity": severity(v),
            "url": _url(v),
        }
        for v in violations
    ]


def json_lines_report(violations: list[Violation]) -> str:
    return "".join(json.dumps(item, sort_keys=True) + "\n" for item in json_items(violations))


def full_report(
    violations: list[Violation],
    given: dict[str, str] | None = None,
    color: bool = False,
    unsafe_fixes: bool = False,
) -> str:
    """Each finding with its source line, a caret under the span, its detail and its fix, if
    any."""
    sources = Sources(given)
    blocks = []
    for v in violations:
        lines = sources.lines(v.path)
        block = [f"{location(v, color)} {label(v, color, unsafe_fixes)}"]
        if 0 < v.line <= len(lines):
            text = lines[v.line - 1]
            end = v.end_col if v.end_line == v.line and v.end_col > v.col else len(text) + 1
            width = len(str(v.line))
            block += [
                f"{' ' * width} |",
                f"{v.line} | {text}",
                f"{' ' * width} | {' ' * (v.col - 1)}{'^' * max(1, end - v.col)}",
            ]
        if v.detail:
            block.append(f"  = note: {v.detail}")
        if v.fix is not None:
            block.append(f"  = fix ({v.fix.applicability}): {v.fix.message}")
            for edit in v.fix.edits:
                removed = lines[edit.line - 1 : edit.end_line - 1]
                block += [f"  - {line}" for line in removed]
                block += [
                    f"  + {line.rstrip(chr(13) + chr(10))}" for line in split_lines(edit.content)
                ]
        blocks.append("\n".join(block) + "\n")
    return "\n".join(blocks)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_report(violations: list[Violation]) -> str:
    """GitHub Actions workflow commands: one ``::error`` annotation per finding, its detail on a
    second line (GitHub shows an annotation's every line where it shows the annotation)."""
    lines = []
    for v in violations:
        title = f"portlint ({code_of(v)})"
        properties = [
            f"title={_escape_property(title)}",
            f"file={_escape_property(v.path)}",
            f"line={v.line}",
            f"col={v.col}",
            f"endLine={v.end_line or v.line}",
            f"endColumn={v.end_col or v.col}",
        ]
        message = f"{v.path}:{v.line}:{v.col}: {label(v)}" + (f"\n{v.detail}" if v.detail else "")
        lines.append(f"::error {','.join(properties)}::{_escape_data(message)}\n")
    return "".join(lines)


def junit_report(violations: list[Violation]) -> str:
    """JUnit XML: one test suite per file, one failing test case per finding (its message the
    finding's; its text, which CI shows as the failure's details, the detail too)."""
    from xml.etree import ElementTree  # (only this format needs it: 4 ms of start-up)

    suites = ElementTree.Element(
        "testsuites", name="portlint", tests=str(max(1, len(violations))),
        failures=str(len(violations)), errors="0",
    )  # fmt: skip
    if not violations:
        suite = ElementTree.SubElement(
            suites, "testsuite", name="portlint", tests="1", failures="0", errors="0"
        )
        ElementTree.SubElement(suite, "testcase", name="No errors found", classname="portlint")
    for path in sorted({v.path for v in violations}):
        found = [v for v in violations if v.path == path]
        suite = ElementTree.SubElement(
            suites, "testsuite", name=path, tests=str(len(found)), failures=str(len(found)),
            errors="0",
        )  # fmt: skip
        for v in found:
            case = ElementTree.SubElement(
                suite, "testcase", name=f"portlint.{code_of(v)}",
                classname=os.path.splitext(path)[0].replace(os.sep, "."), file=path,
                line=str(v.line),
            )  # fmt: skip
            failure = ElementTree.SubElement(case, "failure", message=v.message)
            failure.text = f"line {v.line}, col {v.col}, {v.message}" + (
                f"\n{v.detail}" if v.detail else ""
            )
    ElementTree.indent(suites)
    body = ElementTree.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def repository_root(start: str) -> str:
    """The root of the git work tree holding ``start``, else ``start`` itself: what code scanning
    takes file URIs to be relative to."""
    folder = os.path.abspath(start)
    for candidate in [folder, *map(str, Path(folder).parents)]:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
    return folder


def _artifact(path: str, root: str) -> dict:
    """A file's location: relative to the root (``%SRCROOT%``) where it lies inside it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    if relative.startswith(".."):
        return {"uri": Path(absolute).as_uri()}
    return {"uri": Path(relative).as_posix(), "uriBaseId": SOURCE_ROOT}


def _region(line: int, col: int, end_line: int, end_col: int) -> dict:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}


def _section(docs: str, title: str) -> str:
    """The text of one ``## title`` section of a rule's documentation."""
    after = docs.split(f"## {title}\n", 1)[-1]
    return after.split("\n## ", 1)[0].strip()


def _sarif_rule(code: str) -> dict:
    from portlint.registry import all_rules  # the rules' documentation

    rule = all_rules()[code]
    docs = rule.documentation()
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": _section(docs, "What it does")},
        "help": {"text": docs, "markdown": docs},
        "helpUri": rule_url(rule.name),
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["portability"]},
    }


# The rule of the files that could not be read or parsed.
SARIF_INVALID_SYNTAX = {
    "id": INVALID_SYNTAX,
    "name": INVALID_SYNTAX,
    "shortDescription": {"text": "The file could not be read or parsed."},
    "help": {"text": "The file could not be read, decoded or parsed: nothing in it was checked."},
    "defaultConfiguration": {"level": "error"},
}


def _sarif_fix(v: Violation, location: dict) -> list[dict]:
    if v.fix is None or not v.fix.edits:
        return []
    replacements = [
        {
            "deletedRegion": _region(e.line, e.col, e.end_line, e.end_col),
            "insertedContent": {"text": e.content},
        }
        for e in v.fix.edits
    ]
    return [
        {
            "description": {"text": f"{v.fix.message} ({v.fix.applicability})"},
            "artifactChanges": [{"artifactLocation": location, "replacements": replacements}],
        }
    ]


def _sarif_message(v: Violation) -> dict:
    """The message as plain text, and with its detail as Markdown (what a viewer that renders
    Markdown shows): its code is in backticks already."""
    if not v.detail:
        return {"text": v.message}
    return {"text": v.message, "markdown": f"{v.message}\n\n{v.detail}"}


def sarif_report(
    violations: list[Violation], root: str, given: dict[str, str] | None = None
) -> str:
    """SARIF 2.1.0, as GitHub code scanning takes it: rules with help and their docs' address,
    results with a level (``warning`` where the finding is ``likely``), a fingerprint that
    survives moved lines (the baseline's) and fixes; file URIs relative to ``root`` (the
    repository root). A file that could not be read or parsed is a result of ``invalid-syntax``.
    """
    root = os.path.abspath(root)
    sources = Sources(given)
    rules = [*(_sarif_rule(code) for code in sorted(CATALOG)), SARIF_INVALID_SYNTAX]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for v in violations:
        artifact = _artifact(v.path, root)
        region = _region(v.line, v.col, v.end_line or v.line, v.end_col or v.col)
        result = {
            "ruleId": code_of(v),
            "ruleIndex": index[code_of(v)],
            "level": severity(v),
            "message": _sarif_message(v),
            "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": region}}],
            "partialFingerprints": {FINGERPRINT: fingerprint(v, sources.lines(v.path))},
            "properties": {"confidence": v.confidence},
        }
        fixes = _sarif_fix(v, artifact)
        if fixes:
            result["fixes"] = fixes
        results.append(result)
    run = {
        "tool": {
            "driver": {
                "name": "portlint",
                "version": __version__,
                "informationUri": REPOSITORY_URL,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": True}],
        "results": results,
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2) + "\n"


@dataclass(frozen=True)
class Context:
    """What a format may need besides the findings."""

    sources: dict[str, str] = field(default_factory=dict)  # texts not on disk (stdin)
    root: str = "."  # what SARIF's URIs are relative to (the repository root)
    statistics: bool = False  # --statistics: counts per code instead of the findings
    silenced: list[Silenced] | None = None  # --show-silenced: the silenced findings too
    color: bool = False  # for people's formats: ANSI colours, as ruff's
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes are fixable ([*]) too


@dataclass(frozen=True)
class OutputFormat:
    render: Callable[[list[Violation], Context], str]
    help: str
    # Its findings show their fixes' edits.
    shows_edits: bool = False
    # For people: followed by the summary.
    for_people: bool = False
    # It can show the silenced findings (--show-silenced).
    shows_silenced: bool = False
    # It can show the counts of --statistics.
    shows_statistics: bool = False


def _text(violations: list[Violation], context: Context) -> str:
    if context.statistics:
        text = statistics(violations, context.unsafe_fixes)
    else:
        text = text_report(violations, context.color, context.unsafe_fixes)
    return text + silenced_report(context.silenced or [])


def _json(violations: list[Violation], context: Context) -> str:
    if context.statistics:
        items = statistics_items(violations, context.unsafe_fixes)
    else:
        items = json_items(violations)
    for silenced in context.silenced or []:
        (item,) = json_items([silenced.violation])
        why = {"kind": silenced.kind, "why": silenced.why, "line": silenced.line}
        items.append({**item, "silenced": why})
    return json.dumps(items, indent=2) + "\n"


def _full(violations: list[Violation], context: Context) -> str:
    if context.statistics:
        return statistics(violations, context.unsafe_fixes)
    full = full_report(violations, context.sources, context.color, context.unsafe_fixes)
    return full + silenced_report(context.silenced or [])


FORMATS: dict[str, OutputFormat] = {
    "concise": OutputFormat(
        _text, "one line per finding", for_people=True, shows_silenced=True,
        shows_statistics=True,
    ),
    "text": OutputFormat(
        _text, "the same as concise", for_people=True, shows_silenced=True,
        shows_statistics=True,
    ),
    "full": OutputFormat(
        _full, "each finding with its source line, a caret and its fix", shows_edits=True,
        for_people=True, shows_silenced=True, shows_statistics=True,
    ),
    "json": OutputFormat(
        _json, "a JSON array, with ruff's field names", shows_edits=True, shows_silenced=True,
        shows_statistics=True,
    ),
    "json-lines": OutputFormat(
        lambda found, c: json_lines_report(found), "one JSON object per line", shows_edits=True
    ),
    "junit": OutputFormat(lambda found, c: junit_report(found), "JUnit XML"),
    "github": OutputFormat(lambda found, c: github_report(found), "GitHub workflow annotations"),
    "sarif": OutputFormat(
        lambda found, c: sarif_report(found, c.root, c.sources), "SARIF 2.1.0, for code scanning",
        shows_edits=True,
    ),
}  # fmt: skip
