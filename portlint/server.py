"""``portlint server``: a Language Server over stdio, for editors (pygls; the ``lsp`` extra).

It lints the editor's text, never the file on disk, and writes nothing: each document gets the
settings that `portlint check FILE` would use (the nearest pyproject.toml with ``[tool.portlint]``,
its excludes included). What it offers: diagnostics on open, change and save; a code action for
each fix (safe ones preferred, unsafe ones labelled) and one to suppress a finding on its line;
the rule's documentation on hover of a code in a ``noqa`` comment or of a finding.

Typing must not wait for it. Linting runs in one worker thread, off the thread that reads the
editor's messages; a burst of changes is linted once (the latest text, a short while after the
first change, and again at once if more came while it ran; a result for a text that has changed
since is not published). Diagnostics need no fix edits, so they come from a lint that makes none
(``fix_edits=False``); a version's result is kept, so a save or a hover re-lints nothing. Fix
edits are made only for a code action's rule, when the action is chosen (``codeAction/resolve``,
where the client can) or asked for.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from portlint import __version__
from portlint.catalog import CATALOG
from portlint.config import ConfigError, Overrides, find_pyproject, load_settings
from portlint.discovery import is_excluded
from portlint.docs import rule_url
from portlint.engine import lint_source
from portlint.findings import SAFE, Edit, Fix, Violation, split_lines
from portlint.settings import Settings
from portlint.speed.reuse import Parts
from portlint.suppression import FILE_NOQA, LINE_NOQA, PORTLINT_CODE, add_noqa

# How long after a change the text is linted: long enough for the messages an editor has already
# sent to be read (an editor sends one action, an auto-closed bracket, a multi-cursor edit or an
# undo, as one change); changes that come while a lint runs are gathered anyway, into the one lint
# after it. Every millisecond here is one the user waits for each diagnostic.
DEBOUNCE_S = 0.005
SEVERITY = {"certain": types.DiagnosticSeverity.Error, "likely": types.DiagnosticSeverity.Warning}
SOURCE = "portlint"

T = TypeVar("T")


def docs_url(code: str | None) -> str | None:
    """The page of rule ``code`` (:mod:`portlint.docs`); None for a diagnostic that is no rule's
    (a file that does not parse)."""
    return rule_url(CATALOG[code].name) if code in CATALOG else None


@dataclass
class Lint:
    """What one version of a document linted to."""

    version: int | None
    source: str
    settings: Settings | None  # None: the configuration could not be read
    violations: list[Violation]  # their fixes carry no edits
    # By code: the same findings with their fix edits, computed when a code action needs them.
    with_edits: dict[str, list[Violation]] = field(default_factory=dict)
    # What LibCST parsed of it, by part: the next version parses again only the parts it changed.
    parts: Parts = field(default_factory=Parts)

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    def at(self, first: int, last: int) -> list[Violation]:
        """The rules' findings on lines ``first`` .. ``last`` (1-based)."""
        return [
            v
            for v in self.violations
            if v.code is not None and v.line <= last and max(v.line, v.end_line) >= first
        ]


def settings_for(path: str) -> Settings:
    """The settings `portlint check PATH` uses, run from this process's folder."""
    cwd = Path.cwd()
    return load_settings(find_pyproject(cwd / path), Overrides(), cwd)


def lint_text(path: str, version: int | None, source: str, previous: Lint | None) -> Lint:
    """Lint ``source`` as the text of ``path`` (the fast path: no fix edits). The previous
    version's result is reused where neither the text nor the settings changed."""
    try:
        settings = settings_for(path)
    except ConfigError as error:
        return Lint(version, source, None, [Violation(path, 1, 1, None, f"portlint: {error}")])
    parts = previous.parts if previous else Parts()
    if previous and previous.source == source and previous.settings == settings:
        return Lint(version, source, settings, previous.violations, previous.with_edits, parts)
    if is_excluded(Path(path), settings):
        return Lint(version, source, settings, [], parts=parts)
    found = lint_source(path, source, settings, fix_edits=False, speedups=True, parts=parts)
    return Lint(version, source, settings, found, parts=parts)


Key = tuple[str, int, int]  # a finding's code, line and column: what a code action is about


def finding(violations: list[Violation], key: Key) -> Violation | None:
    return next((v for v in violations if (v.code, v.line, v.col) == key), None)


def fix_edits(path: str, lint: Lint, key: Key) -> tuple[Edit, ...]:
    """The edits of the fix of ``lint``'s finding ``key``. Where the diagnostics' lint did not
    make them (it makes PORT001's), the file is linted again with that rule alone, its fixes'
    edits made: once per version."""
    known = finding(lint.violations, key)
    if known is not None and known.fix is not None and known.fix.edits:
        return known.fix.edits
    code = key[0]
    if code not in lint.with_edits:
        assert lint.settings is not None  # it has findings of a rule: its settings were read
        lint.with_edits[code] = lint_source(
            path, lint.source, lint.settings, fix_edits=True, codes=[code], speedups=True
        )
    fixed = finding(lint.with_edits[code], key)
    return fixed.fix.edits if fixed is not None and fixed.fix is not None else ()


def noqa_edits(path: str, lint: Lint, key: Key) -> tuple[Edit, ...]:
    """The edit that adds ``# noqa: CODE`` to the line of ``lint``'s finding ``key`` (extending
    a ``noqa`` comment there); none where no comment can go (a line inside a string)."""
    found = finding(lint.violations, key)
    if found is None:
        return ()
    suppressed, changed, _ = add_noqa(lint.source, [found])
    if not changed:
        return ()
    return (Edit(found.line, 1, found.line + 1, 1, split_lines(suppressed)[found.line - 1]),)


# What each kind of code action does, by its name in the action's data.
EDITS: dict[str, Callable[[str, Lint, Key], tuple[Edit, ...]]] = {
    "fix": fix_edits,
    "noqa": noqa_edits,
}


class PortlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("portlint", __version__)
        # One lint at a time, off the event loop, which goes on reading the editor's messages.
        # (So the engine's process-wide speedups are safe here: no other thread parses.)
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="portlint-lint")
        self.lints: dict[str, Lint] = {}  # by URI: the latest version linted of each document
        self.scheduled: set[str] = set()  # URIs whose lint is waiting or running
        options = types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True
        )
        handlers: list[tuple[str, Any, Callable]] = [
            (types.TEXT_DOCUMENT_DID_OPEN, None, on_open),
            (types.TEXT_DOCUMENT_DID_CHANGE, None, on_change),
            (types.TEXT_DOCUMENT_DID_SAVE, None, on_save),
            (types.TEXT_DOCUMENT_DID_CLOSE, None, on_close),
            (types.TEXT_DOCUMENT_CODE_ACTION, options, code_actions),
            (types.CODE_ACTION_RESOLVE, None, resolve_code_action),
            (types.TEXT_DOCUMENT_HOVER, None, hover),
        ]
        for method, method_options, handler in handlers:
            self.feature(method, method_options)(handler)

    def document(self, uri: str) -> TextDocument | None:
        """The open document at ``uri`` (None once it is closed)."""
        return self.workspace.text_documents.get(uri)

    async def in_worker(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.linter, function, *args)

    async def lint_soon(self, uri: str, delay: float) -> None:
        """Lint the document at ``uri`` after ``delay`` unless a lint of it is already waiting or
        running (which then lints its latest text), and publish the result while it is current."""
        if uri in self.scheduled:
            return
        self.scheduled.add(uri)
        try:
            await asyncio.sleep(delay)
            while (document := self.document(uri)) is not None:
                version, source = document.version, document.source
                lint = await self.in_worker(
                    lint_text, document.path, version, source, self.lints.get(uri)
                )
                current = self.document(uri)
                if current is not None and current.version == version:
                    self.lints[uri] = lint
                    self.publish(
                        uri, version, [diagnostic(v, lint, current) for v in lint.violations]
                    )
                    return
        finally:
            self.scheduled.discard(uri)

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def current_lint(self, uri: str) -> tuple[TextDocument, Lint] | None:
        """The document and its lint, where the lint is of the text the editor holds now."""
        document, lint = self.document(uri), self.lints.get(uri)
        if document is None or lint is None or lint.version != document.version:
            return None
        return document, lint

    def resolves_edits(self) -> bool:
        """Whether the client asks for a code action's edit only once the action is chosen."""
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        support = code_action.resolve_support if code_action else None
        return support is not None and "edit" in support.properties


async def on_open(ls: PortlintServer, params: types.DidOpenTextDocumentParams) -> None:
    await ls.lint_soon(params.text_document.uri, delay=0)


async def on_change(ls: PortlintServer, params: types.DidChangeTextDocumentParams) -> None:
    await ls.lint_soon(params.text_document.uri, delay=DEBOUNCE_S)


async def on_save(ls: PortlintServer, params: types.DidSaveTextDocumentParams) -> None:
    await ls.lint_soon(params.text_document.uri, delay=0)


def on_close(ls: PortlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.lints.pop(uri, None)
    ls.publish(uri, None, [])


async def code_actions(
    ls: PortlintServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """The fixes and the suppressions of the findings on the lines asked about. Their edits come
    on ``codeAction/resolve``, where the client resolves them (this is asked as the cursor moves:
    it must cost nothing), else with them."""
    found = ls.current_lint(params.text_document.uri)
    if found is None:
        return []
    document, lint = found
    in_range = lint.at(params.range.start.line + 1, params.range.end.line + 1)
    actions = [fix_action(v, v.fix, lint, document) for v in in_range if v.fix is not None]
    suppressible: dict[tuple[int, str | None], Violation] = {}  # one per code and line
    for violation in in_range:
        suppressible.setdefault((violation.line, violation.code), violation)
    actions += [suppress_action(v, lint, document) for v in suppressible.values()]
    if not ls.resolves_edits():
        for action in actions:
            await resolve_code_action(ls, action)
    return actions


async def resolve_code_action(ls: PortlintServer, action: types.CodeAction) -> types.CodeAction:
    """Give a code action its edit (none where the document changed since it was offered)."""
    data = action.data or {}
    found = ls.current_lint(data.get("uri", ""))
    if found is None or found[1].version != data.get("version"):
        return action
    document, lint = found
    key = (data["code"], data["line"], data["col"])
    edits = await ls.in_worker(EDITS[data["action"]], document.path, lint, key)
    if edits:
        changes = [text_edit(edit, lint, document) for edit in edits]
        action.edit = types.WorkspaceEdit(changes={document.uri: changes})
    return action


def hover(ls: PortlintServer, params: types.HoverParams) -> types.Hover | None:
    found = ls.current_lint(params.text_document.uri)
    if found is None:
        return None
    document, lint = found
    lines = lint.lines
    if params.position.line >= len(lines):
        return None
    at = document.position_codec.position_from_client_units(lines, params.position)
    under: list[Violation] = []  # the findings under the cursor: their message and detail
    codes = noqa_codes_at(lines[at.line], at.character)
    if not codes:
        under = [v for v in lint.violations if v.code is not None and spans(v, at)]
        codes = [v.code for v in under if v.code is not None]
    if not codes:
        return None
    pages = [
        rule_page(code, tuple(v for v in under if v.code == code)) for code in dict.fromkeys(codes)
    ]
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(pages)
        )
    )


def client_range(
    lint: Lint, document: TextDocument, start: tuple[int, int], end: tuple[int, int]
) -> types.Range:
    """The range from ``start`` to ``end`` (0-based lines and code points) in the client's units."""
    server = ServerTextRange(ServerTextPosition(*start), ServerTextPosition(*end))
    return document.position_codec.range_to_client_units(lint.lines, server)


def span(violation: Violation) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where ``violation`` starts and ends, as 0-based lines and code points (a diagnostic of a
    file that does not parse has a start only)."""
    start = (violation.line - 1, violation.col - 1)
    end = (violation.end_line - 1, violation.end_col - 1) if violation.end_line else start
    return start, end


def diagnostic(violation: Violation, lint: Lint, document: TextDocument) -> types.Diagnostic:
    code = violation.code
    url = docs_url(code)
    return types.Diagnostic(
        range=client_range(lint, document, *span(violation)),
        message=violation.message,
        severity=SEVERITY[violation.confidence] if code else types.DiagnosticSeverity.Error,
        code=code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        data={"name": CATALOG[code].name} if code in CATALOG else None,
    )


def fix_action(violation: Violation, fix: Fix, lint: Lint, document: TextDocument):
    """The action that applies ``violation``'s fix: preferred where the fix is safe."""
    safe = fix.applicability == SAFE
    title = f"{violation.code}: {fix.message}" + ("" if safe else " (unsafe fix)")
    return action("fix", title, violation, lint, document, preferred=safe)


def suppress_action(violation: Violation, lint: Lint, document: TextDocument):
    """The action that adds ``# noqa: CODE`` on the finding's line."""
    title = f"{violation.code}: suppress on this line (# noqa)"
    return action("noqa", title, violation, lint, document, preferred=None)


def action(
    kind: str,
    title: str,
    violation: Violation,
    lint: Lint,
    document: TextDocument,
    preferred: bool | None,
) -> types.CodeAction:
    """A quick fix of ``violation``, its edit left to :func:`resolve_code_action` (``kind``: the
    entry of :data:`EDITS` that makes it)."""
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic(violation, lint, document)],
        is_preferred=preferred,
        data={
            "action": kind,
            "uri": document.uri,
            "version": lint.version,
            "code": violation.code,
            "line": violation.line,
            "col": violation.col,
        },
    )


def text_edit(edit: Edit, lint: Lint, document: TextDocument) -> types.TextEdit:
    """A whole-line edit as the client takes it. (Its end is the start of the line after, or the
    end of the last line where that line has no line ending.)"""
    lines = lint.lines
    end = (edit.end_line - 1, 0)
    if edit.end_line > len(lines) and lines and lines[-1].rstrip("\r\n") == lines[-1]:
        end = (len(lines) - 1, len(lines[-1]))
    return types.TextEdit(
        range=client_range(lint, document, (edit.line - 1, 0), end), new_text=edit.content
    )


def spans(violation: Violation, at: ServerTextPosition) -> bool:
    start, end = span(violation)
    return start <= (at.line, at.character) <= end


def noqa_codes_at(line: str, column: int) -> list[str]:
    """The rule code under ``column`` (0-based) in a ``noqa`` comment of ``line``, if any."""
    for pattern in (LINE_NOQA, FILE_NOQA):
        for directive in pattern.finditer(line):
            for code in PORTLINT_CODE.finditer(line, *directive.span()):
                if code.start() <= column <= code.end() and code.group().upper() in CATALOG:
                    return [code.group().upper()]
    return []


def rule_page(code: str, found: tuple[Violation, ...] = ()) -> str:
    """Rule ``code``'s documentation, as `portlint rule CODE` prints it, with its link; first,
    the message and the detail of each of ``found`` (its findings under the cursor). The
    diagnostic's own message stays short, for the one-line places editors show it (Neovim's
    virtual text, VS Code's Problems panel); the hover is where both show the reasoning."""
    from portlint.registry import all_rules

    rule = all_rules()[code]
    findings = "".join(f"{v.message}\n\n" + (f"{v.detail}\n\n" if v.detail else "") for v in found)
    return (
        f"**{code}** ({rule.name})\n\n{findings}{rule.documentation()}\n\n"
        f"[{code} docs]({docs_url(code)})"
    )


def serve() -> None:
    """Serve one editor over stdin and stdout until it says exit."""
    PortlintServer().start_io()
