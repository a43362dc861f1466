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
import importlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import ServerTextPosition, ServerTextRange, TextDocument

from portlint import __version__
from portlint.catalog import CATALOG
from portlint.discovery import PYTHON_SUFFIXES
from portlint.docs import rule_url
from portlint.findings import SAFE, Edit, Fix, Violation
from portlint.suppression import FILE_NOQA, LINE_NOQA, PORTLINT_CODE

if TYPE_CHECKING:
    from portlint.editing import Lint

# How long after a change the text is linted: long enough for the messages an editor has already
# sent to be read (an editor sends one action, an auto-closed bracket, a multi-cursor edit or an
# undo, as one change); changes that come while a lint runs are gathered anyway, into the one lint
# after it. Every millisecond here is one the user waits for each diagnostic.
DEBOUNCE_S = 0.005
SEVERITY = {"certain": types.DiagnosticSeverity.Error, "likely": types.DiagnosticSeverity.Warning}
SOURCE = "portlint"
# The file a document's settings come from (:func:`portlint.config.find_pyproject`): where one is
# created, changed or deleted, every open document is linted again.
CONFIG_FILE = "pyproject.toml"

T = TypeVar("T")


def docs_url(code: str | None) -> str | None:
    """The page of rule ``code`` (:mod:`portlint.docs`); None for a diagnostic that is no rule's
    (a file that does not parse)."""
    return rule_url(CATALOG[code].name) if code in CATALOG else None


class PortlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("portlint", __version__)
        # One lint at a time, off the event loop, which goes on reading the editor's messages.
        # (So the engine's process-wide speedups are safe here: no other thread parses.)
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="portlint-lint")
        # The linter (LibCST, the rules) is imported there while the editor's first requests are
        # answered: the server starts with the protocol's modules alone.
        self.linter.submit(importlib.import_module, "portlint.editing")
        self.lints: dict[str, Lint] = {}  # by URI: the latest version linted of each document
        self.scheduled: set[str] = set()  # URIs whose lint is waiting or running
        # How many times a configuration file changed: a lint that began before the last change
        # may have read the settings before it, and is made again.
        self.config_changes = 0
        options = types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True
        )
        handlers: list[tuple[str, Any, Callable]] = [
            (types.INITIALIZED, None, on_initialized),
            (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, None, on_watched_files_change),
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
        running (which then lints its latest text), and publish the result while it is current:
        made of the text the editor holds and with the configuration on disk."""
        if uri in self.scheduled:
            return
        self.scheduled.add(uri)
        try:
            await asyncio.sleep(delay)
            while (document := self.document(uri)) is not None and is_python(document):
                version, source = document.version, document.source
                config_changes = self.config_changes
                lint = await self.in_worker(
                    lint_document, document.path, version, source, self.lints.get(uri)
                )
                current = self.document(uri)
                if (
                    current is not None
                    and current.version == version
                    and self.config_changes == config_changes
                ):
                    self.lints[uri] = lint
                    self.publish(
                        uri, version, [diagnostic(v, lint, current) for v in lint.violations]
                    )
                    return
        finally:
            self.scheduled.discard(uri)

    async def configuration_changed(self) -> None:
        """Lint every open document again, with the settings read anew (a document whose text
        and settings are unchanged keeps its findings: :func:`portlint.editing.lint_text`)."""
        self.config_changes += 1
        await asyncio.gather(*(self.lint_soon(uri, delay=0) for uri in list(self.lints)))

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


def lint_document(path: str, version: int | None, source: str, previous: Lint | None) -> Lint:
    from portlint.editing import lint_text

    return lint_text(path, version, source, previous)


def action_edits(kind: str, path: str, lint: Lint, key: tuple[str, int, int]) -> tuple[Edit, ...]:
    """The edits of a code action of ``kind`` (an entry of :data:`portlint.editing.EDITS`)."""
    from portlint.editing import EDITS

    return EDITS[kind](path, lint, key)


def is_python(document: TextDocument) -> bool:
    """Whether the server lints ``document``: Python by the editor's word or by its name (an
    editor may also send other files, a ``pyproject.toml`` among them)."""
    return document.language_id == "python" or document.path.endswith(PYTHON_SUFFIXES)


def is_config_file(uri: str) -> bool:
    return uri.rsplit("/", 1)[-1] == CONFIG_FILE


def on_initialized(ls: PortlintServer, params: types.InitializedParams) -> None:
    """Ask the client to tell of changes to configuration files, where it can be asked (files it
    watches of its own accord are taken as well: :func:`on_watched_files_change`)."""
    workspace = ls.client_capabilities.workspace
    watching = workspace.did_change_watched_files if workspace else None
    if watching is None or not watching.dynamic_registration:
        return
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{CONFIG_FILE}")]
    ls.client_register_capability(
        types.RegistrationParams(
            [
                types.Registration(
                    id="portlint-configuration",
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers),
                )
            ]
        )
    )


async def on_watched_files_change(
    ls: PortlintServer, params: types.DidChangeWatchedFilesParams
) -> None:
    if any(is_config_file(change.uri) for change in params.changes):
        await ls.configuration_changed()


async def on_open(ls: PortlintServer, params: types.DidOpenTextDocumentParams) -> None:
    await ls.lint_soon(params.text_document.uri, delay=0)


async def on_change(ls: PortlintServer, params: types.DidChangeTextDocumentParams) -> None:
    await ls.lint_soon(params.text_document.uri, delay=DEBOUNCE_S)


async def on_save(ls: PortlintServer, params: types.DidSaveTextDocumentParams) -> None:
    """Lint the saved document again; where it is a configuration file, every open document."""
    if is_config_file(params.text_document.uri):
        await ls.configuration_changed()
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
    edits = await ls.in_worker(action_edits, data["action"], document.path, lint, key)
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
    entry of :data:`portlint.editing.EDITS` that makes it)."""
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
