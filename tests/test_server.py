"""`portlint server` end to end: a real LSP client (pygls's) drives the server over stdio."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the `lsp` extra is not installed")

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from portlint.editing import Lint
from portlint.findings import Violation
from portlint.registry import all_rules
from portlint.server import diagnostic, noqa_codes_at

SOURCE = textwrap.dedent(
    """\
    import torch


    def warmup(worker):
        device = torch.device("cuda")  # noqa: E501
        x = torch.zeros(4).cuda()
        torch.cuda.synchronize()
        return device, x
    """
)
# Generous: only a hung server ever waits this long (no assertion is about time).
PATIENCE_S = 120


class Editor:
    """One document open in a client that talks to `portlint server` as an editor does."""

    def __init__(self, client: LanguageClient, uri: str, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()
        self.registrations: asyncio.Queue[types.Registration] = asyncio.Queue()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def collect(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            for registration in params.registrations:
                self.registrations.put_nowait(registration)

    async def diagnostics(self) -> list[types.Diagnostic]:
        """The diagnostics published for the current version of the text."""
        while True:
            params = await asyncio.wait_for(self.published.get(), PATIENCE_S)
            if params.uri == self.uri and params.version == self.version:
                return list(params.diagnostics)

    def open(self, uri: str, text: str, language: str) -> None:
        """Open another document in the editor."""
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language, 1, text))
        )

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    def change(self, text: str) -> None:
        self.text, self.version = text, self.version + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply ``edit`` to the text, as the editor does, and tell the server."""
        assert edit.changes is not None and list(edit.changes) == [self.uri]
        text = self.text
        lines = text.splitlines(keepends=True)

        def offset(position: types.Position) -> int:
            return sum(map(len, lines[: position.line])) + position.character

        for change in sorted(edit.changes[self.uri], key=lambda e: offset(e.range.start))[::-1]:
            text = (
                text[: offset(change.range.start)]
                + change.new_text
                + text[offset(change.range.end) :]
            )
        self.change(text)

    async def choose(self, action: types.CodeAction) -> None:
        """Choose ``action``: resolve its edit, as the editor does, and apply it."""
        resolved = await self.client.code_action_resolve_async(action)
        assert resolved.edit is not None
        self.apply(resolved.edit)

    async def code_actions(self, line: int) -> list[types.CodeAction]:
        whole_line = types.Range(types.Position(line, 0), types.Position(line, 0))
        actions = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri),
                range=whole_line,
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        return [action for action in actions or [] if isinstance(action, types.CodeAction)]

    async def hover(self, line: int, character: int) -> str | None:
        hovered = await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri),
                position=types.Position(line, character),
            )
        )
        if hovered is None:
            return None
        assert isinstance(hovered.contents, types.MarkupContent)
        return hovered.contents.value


def run_editor(
    project: Path, scenario, *, resolve: bool = True, text: str = SOURCE, name: str = "worker.py"
) -> None:
    """Start `portlint server` in ``project``, open ``project/NAME`` holding ``text`` (the
    editor's text, not the file's: nothing is on disk) and play ``scenario(editor)``."""

    async def session() -> None:
        client = LanguageClient("portlint-tests", "1")
        await client.start_io(sys.executable, "-m", "portlint", "server", cwd=str(project))
        resolve_support = types.ClientCodeActionResolveOptions(properties=["edit"])
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                code_action=types.CodeActionClientCapabilities(
                    resolve_support=resolve_support if resolve else None
                )
            ),
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True
                )
            ),
        )
        await client.initialize_async(
            types.InitializeParams(capabilities=capabilities, root_uri=project.as_uri())
        )
        client.initialized(types.InitializedParams())
        editor = Editor(client, (project / name).as_uri(), text)
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=editor.uri, language_id="python", version=1, text=text
                )
            )
        )
        try:
            await scenario(editor)
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()

    asyncio.run(session())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose configuration turns PORT102 off: the server must apply it."""
    (tmp_path / "pyproject.toml").write_text('[tool.portlint]\nignore = ["PORT102"]\n')
    return tmp_path


def summary(diagnostics: list[types.Diagnostic]) -> list[tuple]:
    return [
        (
            d.code,
            d.range.start.line,
            d.range.start.character,
            d.range.end.line,
            d.range.end.character,
        )
        for d in diagnostics
    ]


def test_diagnostics_of_the_editors_text_with_the_projects_configuration(project):
    async def scenario(editor: Editor) -> None:
        found = await editor.diagnostics()
        # 0-based lines and columns; PORT102 (`.cuda()` on line 6) is off in the configuration.
        assert summary(found) == [("PORT101", 4, 13, 4, 33), ("PORT401", 6, 4, 6, 26)]
        device, synchronize = found
        assert device.source == synchronize.source == "portlint"
        assert device.severity == types.DiagnosticSeverity.Error  # a certain finding
        assert device.data == {"name": "hardcoded-cuda-device"}
        assert device.code_description is not None
        assert device.code_description.href == (
            "https://github.com/portlint/portlint/blob/main/docs/rules/hardcoded-cuda-device.md"
        )
        assert device.message.startswith("`torch.device` hardcodes CUDA")
        editor.save(editor.uri)
        assert await editor.diagnostics() == found  # published again on save

    run_editor(project, scenario)
    assert not (project / "worker.py").exists()  # the server wrote nothing


def test_a_changed_configuration_lints_the_open_documents_again(project):
    """The server asks to be told of changes to pyproject.toml files, and on one lints what is
    open with the settings read anew, with no change to the document."""
    pyproject = project / "pyproject.toml"

    async def scenario(editor: Editor) -> None:
        registration = await asyncio.wait_for(editor.registrations.get(), PATIENCE_S)
        assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        globs = ["**/pyproject.toml", "**/*.py", "**/*.pyi"]
        assert registration.register_options == {"watchers": [{"globPattern": g} for g in globs]}
        assert [d.code for d in await editor.diagnostics()] == ["PORT101", "PORT401"]
        pyproject.write_text('[tool.portlint]\nignore = ["PORT401"]\n')
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(pyproject.as_uri(), types.FileChangeType.Changed)]
            )
        )
        assert [d.code for d in await editor.diagnostics()] == ["PORT101", "PORT102"]
        pyproject.unlink()  # no configuration left: every rule
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                [types.FileEvent(pyproject.as_uri(), types.FileChangeType.Deleted)]
            )
        )
        codes = [d.code for d in await editor.diagnostics()]
        assert codes == ["PORT101", "PORT102", "PORT401"]

    run_editor(project, scenario)


def test_saving_the_configuration_in_the_editor_lints_the_python_documents_again(project):
    """A pyproject.toml open in the editor is not linted as Python; saving it applies it."""
    pyproject = project / "pyproject.toml"

    async def scenario(editor: Editor) -> None:
        assert [d.code for d in await editor.diagnostics()] == ["PORT101", "PORT401"]
        editor.open(pyproject.as_uri(), pyproject.read_text(), "toml")
        editor.change(SOURCE + "\n")  # linted after pyproject.toml would have been
        published = await asyncio.wait_for(editor.published.get(), PATIENCE_S)
        assert (published.uri, published.version) == (editor.uri, editor.version)
        pyproject.write_text('[tool.portlint]\nselect = ["PORT401"]\n')
        editor.save(pyproject.as_uri())
        assert [d.code for d in await editor.diagnostics()] == ["PORT401"]

    run_editor(project, scenario)


def test_a_document_is_judged_with_its_project_where_portlint_check_left_its_cache(tmp_path):
    """As `portlint check FILE` judges it: ``b`` is imported only where CUDA is, so its
    CUDA call is no finding. Before any `portlint check` (no cache) the file is judged alone."""
    (tmp_path / ".git").mkdir()
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "import torch\n\nif torch.cuda.is_available():\n    from pkg import b\n"
    )
    text = "import torch\n\n\ndef sync():\n    torch.cuda.synchronize()\n"
    (package / "b.py").write_text(text)

    async def alone(editor: Editor) -> None:
        assert [d.code for d in await editor.diagnostics()] == ["PORT401"]

    run_editor(tmp_path, alone, text=text, name="pkg/b.py")
    assert not (tmp_path / ".portlint_cache").exists()  # (the server made no cache)
    check = [sys.executable, "-m", "portlint", "check"]
    subprocess.run([*check, "."], cwd=tmp_path, capture_output=True, check=False)
    assert subprocess.run([*check, "pkg/b.py"], cwd=tmp_path, capture_output=True).returncode == 0

    async def judged(editor: Editor) -> None:
        assert await editor.diagnostics() == []
        editor.change(text + "\n\ndef more():\n    torch.cuda.synchronize()\n")  # the same module
        assert await editor.diagnostics() == []
        # Another file changed on disk (not by the editor): `b` is now imported anywhere.
        (package / "a.py").write_text("import torch\n\nfrom pkg import b\n")
        changed = types.FileEvent((package / "a.py").as_uri(), types.FileChangeType.Changed)
        editor.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([changed])
        )
        assert [d.code for d in await editor.diagnostics()] == ["PORT401", "PORT401"]

    run_editor(tmp_path, judged, text=text, name="pkg/b.py")


def test_a_safe_fix_is_the_preferred_quick_fix_and_applying_it_clears_the_finding(project):
    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        actions = await editor.code_actions(6)
        titles = [(a.title, a.kind, a.is_preferred) for a in actions]
        assert titles == [
            ("PORT401: Use `torch.accelerator.synchronize`", "quickfix", True),
            ("PORT401: suppress on this line (# noqa)", "quickfix", None),
        ]
        fix = actions[0]
        assert fix.edit is None  # the client resolves it: edits are computed only when chosen
        await editor.choose(fix)
        assert "    torch.accelerator.synchronize()\n" in editor.text
        assert summary(await editor.diagnostics()) == [("PORT101", 4, 13, 4, 33)]

    run_editor(project, scenario)


def test_a_client_that_does_not_resolve_gets_the_edits_with_the_actions(project):
    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        fix, suppress = await editor.code_actions(6)
        assert fix.edit is not None and fix.edit.changes is not None
        [edit] = fix.edit.changes[editor.uri]
        assert (edit.range.start.line, edit.range.end.line) == (6, 7)
        assert edit.new_text == "    torch.accelerator.synchronize()\n"
        assert suppress.edit is not None and suppress.edit.changes is not None
        [noqa] = suppress.edit.changes[editor.uri]
        assert (noqa.range.start.line, noqa.range.end.line) == (6, 7)
        assert noqa.new_text == "    torch.cuda.synchronize()  # noqa: PORT401\n"

    run_editor(project, scenario, resolve=False)


def test_an_unsafe_fix_is_labelled_and_not_preferred(project):
    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        fix, _ = await editor.code_actions(4)
        assert (fix.title, fix.is_preferred) == ("PORT101: Use `worker.device` (unsafe fix)", False)
        await editor.choose(fix)
        assert "    device = worker.device  # noqa: E501\n" in editor.text
        assert summary(await editor.diagnostics()) == [("PORT401", 6, 4, 6, 26)]

    run_editor(project, scenario)


def test_removing_an_unused_code_from_a_noqa_keeps_the_code_it_uses(project):
    """PORT001 judges a directive by the other rules' findings: its fix must not lose them."""
    text = SOURCE.replace("# noqa: E501", "# noqa: PORT101, PORT402")

    async def scenario(editor: Editor) -> None:
        assert summary(await editor.diagnostics()) == [
            ("PORT001", 4, 35, 4, 59),
            ("PORT401", 6, 4, 6, 26),
        ]
        fix, _ = await editor.code_actions(4)
        assert (fix.title, fix.is_preferred) == ("PORT001: Remove the unused codes", True)
        await editor.choose(fix)
        assert '    device = torch.device("cuda")  # noqa: PORT101\n' in editor.text
        assert summary(await editor.diagnostics()) == [("PORT401", 6, 4, 6, 26)]

    run_editor(project, scenario, text=text)


def test_suppressing_a_finding_extends_the_noqa_comment_of_its_line(project):
    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        _, suppress = await editor.code_actions(4)
        assert (suppress.title, suppress.edit) == ("PORT101: suppress on this line (# noqa)", None)
        await editor.choose(suppress)
        assert '    device = torch.device("cuda")  # noqa: E501, PORT101\n' in editor.text
        assert summary(await editor.diagnostics()) == [("PORT401", 6, 4, 6, 26)]

    run_editor(project, scenario)


def test_a_burst_of_changes_ends_with_the_diagnostics_of_the_last_text(project):
    without_synchronize = SOURCE.replace("    torch.cuda.synchronize()\n", "")

    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        for text in (without_synchronize, SOURCE, without_synchronize):
            editor.change(text)
        assert summary(await editor.diagnostics()) == [("PORT101", 4, 13, 4, 33)]
        editor.change(SOURCE)
        assert [d.code for d in await editor.diagnostics()] == ["PORT101", "PORT401"]

    run_editor(project, scenario)


def test_hover_shows_the_rule_docs_of_a_code_in_a_noqa_comment_and_of_a_finding(project):
    suppressed = SOURCE.replace("# noqa: E501", "# noqa: E501, PORT101")
    documentation = all_rules()["PORT401"].documentation()

    async def scenario(editor: Editor) -> None:
        found = await editor.diagnostics()
        assert summary(found) == [("PORT401", 6, 4, 6, 26)]
        column = editor.text.splitlines()[4].index("PORT101")
        on_code = await editor.hover(4, column + 3)
        assert on_code is not None
        assert on_code.startswith("**PORT101** (hardcoded-cuda-device)\n\n")
        assert all_rules()["PORT101"].documentation() in on_code
        assert on_code.endswith(
            "[PORT101 docs](https://github.com/portlint/portlint/blob/main/docs/rules/hardcoded-cuda-device.md)"
        )
        on_finding = await editor.hover(6, 10)
        assert on_finding is not None and documentation in on_finding
        # On a finding, its message and its detail come first (the diagnostic's message is short).
        (synchronize,) = found
        detail = "`torch.accelerator.synchronize` needs torch ≥ 2.6."
        assert synchronize.message.endswith("`torch.accelerator.synchronize`")
        assert on_finding.startswith(
            f"**PORT401** (cuda-device-api)\n\n{synchronize.message}\n\n{detail}\n\n"
        )
        assert await editor.hover(4, editor.text.splitlines()[4].index("E501")) is None
        assert await editor.hover(1, 0) is None

    run_editor(project, scenario, text=suppressed)


def test_a_file_that_does_not_parse_gets_one_error_and_closing_clears_it(project):
    async def scenario(editor: Editor) -> None:
        await editor.diagnostics()
        editor.change(SOURCE + "def broken(:\n")
        [error] = await editor.diagnostics()
        assert (error.code, error.severity) == (None, types.DiagnosticSeverity.Error)
        assert error.range.start.line == 8
        assert error.message.startswith("SyntaxError")
        editor.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=editor.uri))
        )
        while (params := await asyncio.wait_for(editor.published.get(), PATIENCE_S)).version:
            pass
        assert list(params.diagnostics) == []

    run_editor(project, scenario)


def test_positions_are_in_the_clients_utf16_units(project):
    """A character outside the Basic Multilingual Plane is two UTF-16 units, one code point."""
    text = 'import torch\nd = ("😀", torch.device("cuda"))\n'
    start = text.splitlines()[1].index("torch.device")  # in code points: 11

    async def scenario(editor: Editor) -> None:
        [found] = await editor.diagnostics()
        assert summary([found]) == [("PORT101", 1, start + 1, 1, start + 1 + 20)]
        on_finding = await editor.hover(1, start + 1)
        assert on_finding is not None and on_finding.startswith("**PORT101**")

    run_editor(project, scenario, text=text)


@pytest.mark.parametrize(
    ("line", "column", "codes"),
    [
        ("x = 1  # noqa: PORT101, PORT402", 17, ["PORT101"]),
        ("x = 1  # noqa: PORT101, PORT402", 25, ["PORT402"]),
        ("x = 1  # NOQA:port402", 17, ["PORT402"]),
        ("# portlint: noqa: PORT401", 20, ["PORT401"]),
        ("x = 1  # noqa: PORT101", 3, []),  # not in the comment
        ("x = 1  # noqa: PORT999", 17, []),  # no such rule
        ("x = 1  # PORT101", 10, []),  # not a noqa comment
    ],
)
def test_the_code_under_the_cursor_in_a_noqa_comment(line, column, codes):
    assert noqa_codes_at(line, column) == codes


def test_severity_follows_confidence_and_a_file_that_does_not_parse_has_no_rule():
    text = "x = torch.device('cuda')\n"
    likely = Violation("w.py", 1, 5, "PORT101", "m", 1, 25, confidence="likely")
    unparsed = Violation("w.py", 1, 5, None, "SyntaxError: invalid syntax")
    lint = Lint(1, text, None, [likely, unparsed])
    warning, error = (diagnostic(v, lint) for v in lint.violations)
    assert (warning["severity"], warning["code"]) == (types.DiagnosticSeverity.Warning, "PORT101")
    assert error["severity"] == types.DiagnosticSeverity.Error
    assert not {"code", "codeDescription", "data"} & set(error)
    assert error["range"]["start"] == error["range"]["end"] == {"line": 0, "character": 4}


def test_a_file_the_configuration_excludes_gets_no_diagnostics(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.portlint]\nextend-exclude = ["generated"]\n')

    async def scenario(editor: Editor) -> None:
        assert await editor.diagnostics() == []

    run_editor(tmp_path, scenario, name="generated/worker.py")


def test_a_configuration_that_cannot_be_read_is_one_error_on_the_first_line(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.portlint]\nselect = ['PORT999']\n")

    async def scenario(editor: Editor) -> None:
        [error] = await editor.diagnostics()
        assert error.message == (
            f"portlint: unknown rule selector 'PORT999' in {pyproject} (see `portlint rules`)"
        )
        assert (error.code, error.severity) == (None, types.DiagnosticSeverity.Error)
        assert (error.range.start.line, error.range.start.character) == (0, 0)

    run_editor(tmp_path, scenario)
