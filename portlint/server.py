"""``portlint server``: a Language Server over stdio, for editors (:mod:`portlint.lsp`).

It lints the editor's text, never the file on disk, and writes no source file: each document
gets the settings that `portlint check FILE` would use (the nearest pyproject.toml with
``[tool.portlint]``, its excludes included), read again when a ``pyproject.toml`` changes, and is
judged with its project where `portlint check` left its cache (:mod:`portlint.editing`). What it offers:
diagnostics on open, change and save; a code action for each fix (safe ones preferred, unsafe
ones labelled) and one to suppress a finding on its line; the rule's documentation on hover of a
code in a ``noqa`` comment or of a finding.

Typing must not wait for it. Linting runs in one worker thread, off the event loop that takes the
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
import os
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from portlint import __version__
from portlint.catalog import CATALOG
from portlint.discovery import PYTHON_SUFFIXES
from portlint.docs import rule_url
from portlint.findings import SAFE, Edit, Fix, Violation
from portlint.lsp import ERROR, WARNING, Connection, Document, code_points, text_range
from portlint.suppression import FILE_NOQA, LINE_NOQA, PORTLINT_CODE

if TYPE_CHECKING:
    from portlint.editing import Lint

# How long after a change the text is linted: long enough for the messages an editor has already
# sent (one action, an auto-closed bracket, a multi-cursor edit, an undo: one change) to be read;
# changes that come while a lint runs go into the one lint after it. The user waits this long.
DEBOUNCE_S = 0.005
SEVERITY = {"certain": ERROR, "likely": WARNING}
SOURCE = "portlint"
QUICK_FIX = "quickfix"
# The file a document's settings come from (:func:`portlint.config.find_pyproject`): where one is
# created, changed or deleted, every open document is linted again.
CONFIG_FILE = "pyproject.toml"
CAPABILITIES = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
    "codeActionProvider": {"codeActionKinds": [QUICK_FIX], "resolveProvider": True},
    "hoverProvider": True,
}

T = TypeVar("T")
# What each handler reads of its message's params: a message that lacks it is refused (a
# request with the protocol's "invalid params", a notification logged), not a failure.
DOCUMENT: dict[str, type | tuple[type, ...]] = {"textDocument.uri": str}
POSITION = {"position.line": int, "position.character": int}
RANGE = {f"range.{end}.line": int for end in ("start", "end")}
NEEDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "initialize": {"": dict},
    "workspace/didChangeWatchedFiles": {"changes": list},
    "textDocument/didOpen": {**DOCUMENT, "textDocument.text": str},
    "textDocument/didChange": {**DOCUMENT, "contentChanges": list},
    "textDocument/didSave": DOCUMENT,
    "textDocument/didClose": DOCUMENT,
    "textDocument/codeAction": {**DOCUMENT, **RANGE},
    "codeAction/resolve": {"": dict},
    "textDocument/hover": {**DOCUMENT, **POSITION},
}


def docs_url(code: str | None) -> str | None:
    """The page of rule ``code`` (:mod:`portlint.docs`); None for a diagnostic that is no rule's
    (a file that does not parse)."""
    return rule_url(CATALOG[code].name) if code in CATALOG else None


class PortlintServer:
    """The editor's documents and their lints, over one connection."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        # One lint at a time, off the event loop, which goes on reading the editor's messages.
        # (So the engine's process-wide speedups are safe here: no other thread parses.)
        self.linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="portlint-lint")
        # The linter (LibCST, the rules) is imported there while the editor's first requests are
        # answered: the server starts with the standard library and portlint's small modules.
        self.linter.submit(importlib.import_module, "portlint.editing")
        self.documents: dict[str, Document] = {}  # by URI: what the editor holds
        self.lints: dict[str, Lint] = {}  # by URI: the latest version linted of each document
        self.scheduled: set[str] = set()  # URIs whose lint is waiting or running
        # How many times a configuration file or a Python file on disk changed: a lint that
        # began before the last change may have read the settings or the project before it,
        # and is made again.
        self.disk_changes = 0
        self.client: dict = {}  # the editor's capabilities
        handlers: dict[str, Callable[[Any], Any]] = {
            "initialize": self.initialize,
            "initialized": self.on_initialized,
            "shutdown": lambda params: None,
            "workspace/didChangeWatchedFiles": self.on_watched_files_change,
            "textDocument/didOpen": self.on_open,
            "textDocument/didChange": self.on_change,
            "textDocument/didSave": self.on_save,
            "textDocument/didClose": self.on_close,
            "textDocument/codeAction": self.code_actions,
            "codeAction/resolve": self.resolve_code_action,
            "textDocument/hover": self.hover,
        }
        self.connection = Connection(reader, writer, handlers, NEEDS)

    # --- the documents and their lints ------------------------------------------------------
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
            while (document := self.documents.get(uri)) is not None and is_python(document):
                version, source = document.version, document.text
                disk_changes = self.disk_changes
                lint = await self.in_worker(
                    lint_document, document.path, version, source, self.lints.get(uri)
                )
                current = self.documents.get(uri)
                if (
                    current is not None
                    and current.version == version
                    and self.disk_changes == disk_changes
                ):
                    self.lints[uri] = lint
                    self.publish(uri, version, [diagnostic(v, lint) for v in lint.violations])
                    return
        finally:
            self.scheduled.discard(uri)

    async def disk_changed(self) -> None:
        """Lint every open document again, with the settings read anew and its project joined
        again from the disk (a document whose text, settings and project are unchanged keeps
        its findings: :func:`portlint.editing.lint_text`)."""
        self.disk_changes += 1
        await self.in_worker(forget_projects)
        await asyncio.gather(*(self.lint_soon(uri, delay=0) for uri in list(self.lints)))

    def publish(self, uri: str, version: int | None, diagnostics: list[dict]) -> None:
        params: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
        if version is not None:
            params["version"] = version
        self.connection.notify("textDocument/publishDiagnostics", params)

    def current_lint(self, uri: str) -> tuple[Document, Lint] | None:
        """The document and its lint, where the lint is of the text the editor holds now."""
        document, lint = self.documents.get(uri), self.lints.get(uri)
        if document is None or lint is None or lint.version != document.version:
            return None
        return document, lint

    def resolves_edits(self) -> bool:
        """Whether the client asks for a code action's edit only once the action is chosen."""
        code_action = self.client.get("textDocument", {}).get("codeAction", {})
        return "edit" in code_action.get("resolveSupport", {}).get("properties", [])

    # --- the editor's messages ----------------------------------------------------------------
    def initialize(self, params: dict) -> dict:
        self.client = params.get("capabilities") or {}
        return {
            "capabilities": CAPABILITIES,
            "serverInfo": {"name": "portlint", "version": __version__},
        }

    def on_initialized(self, params: dict) -> None:
        """Ask the client to tell of changes to configuration files, where it can be asked
        (files it watches of its own accord are taken as well: :meth:`on_watched_files_change`)."""
        watching = self.client.get("workspace", {}).get("didChangeWatchedFiles", {})
        if not watching.get("dynamicRegistration"):
            return
        globs = [f"**/{CONFIG_FILE}", *(f"**/*{suffix}" for suffix in PYTHON_SUFFIXES)]
        registration = {
            "id": "portlint-configuration",
            "method": "workspace/didChangeWatchedFiles",
            "registerOptions": {"watchers": [{"globPattern": glob} for glob in globs]},
        }
        self.connection.request("client/registerCapability", {"registrations": [registration]})

    async def on_watched_files_change(self, params: dict) -> None:
        """A configuration file changed: every open document is linted with the settings read
        anew. A Python file changed on disk that the editor does not hold (a checkout, another
        program's edit): the projects are joined again from the disk, and every open document
        judged with them. (A document the editor holds is its text, not the disk's.)"""
        uris = [change.get("uri", "") for change in params["changes"]]
        if any(
            is_config_file(uri) or (uri.endswith(PYTHON_SUFFIXES) and uri not in self.documents)
            for uri in uris
        ):
            await self.disk_changed()

    def on_open(self, params: dict) -> Any:
        item = params["textDocument"]
        uri = item["uri"]
        self.documents[uri] = Document(
            uri, item["text"], item.get("version"), item.get("languageId", "")
        )
        return self.lint_soon(uri, delay=0)

    def on_change(self, params: dict) -> Any:
        identifier = params["textDocument"]
        document = self.documents.get(identifier["uri"])
        if document is None:
            return None
        document.change(params["contentChanges"], identifier.get("version"))
        return self.lint_soon(document.uri, delay=DEBOUNCE_S)

    async def on_save(self, params: dict) -> None:
        """Lint the saved document again; where it is a configuration file, every open one."""
        uri = params["textDocument"]["uri"]
        if is_config_file(uri):
            await self.disk_changed()
        await self.lint_soon(uri, delay=0)

    def on_close(self, params: dict) -> None:
        uri = params["textDocument"]["uri"]
        self.documents.pop(uri, None)
        self.lints.pop(uri, None)
        self.publish(uri, None, [])

    async def code_actions(self, params: dict) -> list[dict]:
        """The fixes and the suppressions of the findings on the lines asked about. Their edits
        come on ``codeAction/resolve``, where the client resolves them (this is asked as the
        cursor moves: it must cost nothing), else with them."""
        found = self.current_lint(params["textDocument"]["uri"])
        if found is None:
            return []
        document, lint = found
        asked = params["range"]
        in_range = lint.at(asked["start"]["line"] + 1, asked["end"]["line"] + 1)
        actions = [fix_action(v, v.fix, lint, document) for v in in_range if v.fix is not None]
        suppressible: dict[tuple[int, str | None], Violation] = {}  # one per code and line
        for violation in in_range:
            suppressible.setdefault((violation.line, violation.code), violation)
        actions += [suppress_action(v, lint, document) for v in suppressible.values()]
        if not self.resolves_edits():
            for action in actions:
                await self.resolve_code_action(action)
        return actions

    async def resolve_code_action(self, action: dict) -> dict:
        """Give a code action its edit (none where the document changed since it was offered)."""
        data = action.get("data") or {}
        found = self.current_lint(data.get("uri", ""))
        if found is None or found[1].version != data.get("version"):
            return action
        document, lint = found
        key = (data["code"], data["line"], data["col"])
        edits = await self.in_worker(action_edits, data["action"], document.path, lint, key)
        if edits:
            action["edit"] = {"changes": {document.uri: [text_edit(edit, lint) for edit in edits]}}
        return action

    def hover(self, params: dict) -> dict | None:
        found = self.current_lint(params["textDocument"]["uri"])
        if found is None:
            return None
        _, lint = found
        lines, line = lint.lines, params["position"]["line"]
        if line >= len(lines):
            return None
        at = (line, code_points(lines[line].rstrip("\r\n"), params["position"]["character"]))
        under: list[Violation] = []  # the findings under the cursor: their message and detail
        codes = noqa_codes_at(lines[line], at[1])
        if not codes:
            under = [v for v in lint.violations if v.code is not None and spans(v, at)]
            codes = [v.code for v in under if v.code is not None]
        if not codes:
            return None
        pages = [
            rule_page(code, tuple(v for v in under if v.code == code))
            for code in dict.fromkeys(codes)
        ]
        return {"contents": {"kind": "markdown", "value": "\n\n---\n\n".join(pages)}}


def lint_document(path: str, version: int | None, source: str, previous: Lint | None) -> Lint:
    """The lint of the document's text (on the lint thread). A lint that fails (a defect, or
    a text no file can hold: a lone surrogate) is one diagnostic on the first line, as `portlint
    check` reports a file it could not check, not the last version's diagnostics left in place."""
    from portlint.editing import Lint, lint_text

    try:
        source.encode()
    except UnicodeEncodeError as error:  # (`"\ud800"` in the editor's JSON: half an emoji)
        line = source.count("\n", 0, error.start) + 1
        column = error.start - source.rfind("\n", 0, error.start)
        why = "portlint: the text holds a lone surrogate, which no UTF-8 file can: not linted"
        return Lint(version, source, None, [Violation(path, line, column, None, why)])
    try:
        return lint_text(path, version, source, previous)
    except Exception as error:
        traceback.print_exc()  # (the server's stderr: the editor's log of it)
        failed = f"portlint: internal error: {type(error).__name__}: {error}"
        return Lint(version, source, None, [Violation(path, 1, 1, None, failed)])


def forget_projects() -> None:
    from portlint.editing import forget_projects

    forget_projects()


def action_edits(kind: str, path: str, lint: Lint, key: tuple[str, int, int]) -> tuple[Edit, ...]:
    """The edits of a code action of ``kind`` (an entry of :data:`portlint.editing.EDITS`)."""
    from portlint.editing import EDITS

    return EDITS[kind](path, lint, key)


def is_python(document: Document) -> bool:
    """Whether the server lints ``document``: Python by the editor's word or by its name (an
    editor may also send other files, a ``pyproject.toml`` among them)."""
    return document.language == "python" or document.path.endswith(PYTHON_SUFFIXES)


def is_config_file(uri: str) -> bool:
    return uri.rsplit("/", 1)[-1] == CONFIG_FILE


def span(violation: Violation) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where ``violation`` starts and ends, as 0-based lines and code points (a diagnostic of a
    file that does not parse has a start only)."""
    start = (violation.line - 1, violation.col - 1)
    end = (violation.end_line - 1, violation.end_col - 1) if violation.end_line else start
    return start, end


def spans(violation: Violation, at: tuple[int, int]) -> bool:
    start, end = span(violation)
    return start <= at <= end


def diagnostic(violation: Violation, lint: Lint) -> dict:
    code = violation.code
    found: dict[str, Any] = {
        "range": text_range(lint.lines, *span(violation)),
        "message": violation.message,
        "severity": SEVERITY[violation.confidence] if code else ERROR,
        "source": SOURCE,
    }
    if code is not None:
        found["code"] = code
    if (url := docs_url(code)) is not None:
        found["codeDescription"] = {"href": url}
    if code in CATALOG:
        found["data"] = {"name": CATALOG[code].name}
    return found


def fix_action(violation: Violation, fix: Fix, lint: Lint, document: Document) -> dict:
    """The action that applies ``violation``'s fix: preferred where the fix is safe."""
    safe = fix.applicability == SAFE
    title = f"{violation.code}: {fix.message}" + ("" if safe else " (unsafe fix)")
    return action("fix", title, violation, lint, document, preferred=safe)


def suppress_action(violation: Violation, lint: Lint, document: Document) -> dict:
    """The action that adds ``# noqa: CODE`` on the finding's line."""
    title = f"{violation.code}: suppress on this line (# noqa)"
    return action("noqa", title, violation, lint, document, preferred=None)


def action(
    kind: str,
    title: str,
    violation: Violation,
    lint: Lint,
    document: Document,
    preferred: bool | None,
) -> dict:
    """A quick fix of ``violation``, its edit left to
    :meth:`PortlintServer.resolve_code_action` (``kind``: the entry of
    :data:`portlint.editing.EDITS` that makes it)."""
    made: dict[str, Any] = {
        "title": title,
        "kind": QUICK_FIX,
        "diagnostics": [diagnostic(violation, lint)],
        "data": {
            "action": kind,
            "uri": document.uri,
            "version": lint.version,
            "code": violation.code,
            "line": violation.line,
            "col": violation.col,
        },
    }
    if preferred is not None:
        made["isPreferred"] = preferred
    return made


def text_edit(edit: Edit, lint: Lint) -> dict:
    """A whole-line edit as the client takes it. (Its end is the start of the line after, or the
    end of the last line where that line has no line ending.)"""
    lines = lint.lines
    end = (edit.end_line - 1, 0)
    if edit.end_line > len(lines) and lines and lines[-1].rstrip("\r\n") == lines[-1]:
        end = (len(lines) - 1, len(lines[-1]))
    return {"range": text_range(lines, (edit.line - 1, 0), end), "newText": edit.content}


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
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # (stdout carries the protocol alone: a stray print goes to stderr)
    status = PortlintServer(reader, writer).connection.run()
    # A lint may still run on its thread: it is not waited for.
    sys.stderr.flush()
    os._exit(status)
