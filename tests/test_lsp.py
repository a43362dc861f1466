"""The protocol's plumbing (portlint.lsp): messages, documents changed as the editor says, positions
in UTF-16 units; and `portlint server` spoken to byte for byte, with nothing but the linter's own
dependencies."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from portlint.lsp import Connection, Document, code_points, read_message, utf16_units

PATIENCE_S = 120


def framed(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_messages_are_read_by_their_length_and_the_end_of_the_input_ends_them():
    first, second = {"id": 1, "method": "a"}, {"method": "b", "params": {"x": "é"}}
    reader = io.BytesIO(framed(first) + b"Content-Type: x\r\n" + framed(second))
    assert read_message(reader) == first
    assert read_message(reader) == second  # (another header before the length: skipped)
    assert read_message(reader) is None
    assert read_message(io.BytesIO(b"Content-Length: 10\r\n\r\n{}")) is None  # (cut short)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"Content-Length: 2\r\n\r\n[]", "a message that is no object"),
        (b"Content-Length: 3\r\n\r\n{x}", "a message that is not JSON (or nests too deep)"),
        (
            b"Content-Length: 20001\r\n\r\n" + b"[" * 20001,
            "a message that is not JSON (or nests too deep)",
        ),
        (b"Content-Length: 99999999999999\r\n\r\n{}", "a message without a valid Content-Length"),
        (b"Content-Length: ten\r\n\r\n{}", "a message without a valid Content-Length"),
        (b"Content-Type: x\r\n\r\n{}", "a message without a valid Content-Length"),
    ],
)
def test_a_message_that_cannot_be_read_is_skipped_with_its_reason(data, why):
    reader = io.BytesIO(data + framed({"method": "next"}))
    unreadable = read_message(reader)
    assert unreadable == why
    assert getattr(unreadable, "code", None) == (-32600 if data.endswith(b"[]") else -32700)
    if b"Length: 9" not in data and b"Length: ten" not in data and b"Type" not in data:
        assert read_message(reader) == {"method": "next"}  # (the next one is read)


def served(messages: list[dict], handlers: dict, needs: dict | None = None) -> list[dict]:
    """What a connection answers to ``messages`` (an ``initialize`` first, an ``exit`` last)."""
    first = {"id": 0, "method": "initialize", "params": {}}
    last = {"method": "exit"}
    given = b"".join(framed({"jsonrpc": "2.0", **m}) for m in [first, *messages, last])
    written = io.BytesIO()
    handlers = {"initialize": lambda params: {}, **handlers}
    Connection(io.BytesIO(given), written, handlers, needs).run()
    written.seek(0)
    answers = []
    while (message := read_message(written)) is not None:
        answers.append(message)
    return answers[1:]  # (not initialize's)


def test_a_request_whose_params_lack_what_its_handler_reads_is_refused_as_invalid():
    needs = {"find": {"where.line": int, "name": str}}
    answers = served(
        [{"id": 1, "method": "find", "params": {"where": {"line": "2"}, "name": "x"}},
         {"id": 2, "method": "find", "params": {"where": {"line": True}, "name": "x"}},
         {"id": 3, "method": "find", "params": {"where": {"line": 2}, "name": "x"}},
         {"method": "told", "params": []}],
        {"find": lambda params: params["where"]["line"] + 1, "told": lambda params: None},
        {**needs, "told": {"": dict}},
    )  # fmt: skip
    invalid = {"code": -32602, "message": "params.where.line is missing or not a number"}
    assert answers[:3] == [
        {"jsonrpc": "2.0", "id": 1, "error": invalid},
        {"jsonrpc": "2.0", "id": 2, "error": invalid},
        {"jsonrpc": "2.0", "id": 3, "result": 3},
    ]
    assert answers[3]["method"] == "window/logMessage"
    assert answers[3]["params"]["message"] == (
        "portlint: skipped told: params is missing or not an object"
    )


def test_a_cancelled_request_is_answered_as_cancelled():
    async def never(params):
        await asyncio.Event().wait()

    answers = served(
        [{"id": 7, "method": "slow", "params": {"n": 1}},
         {"method": "$/cancelRequest", "params": {"id": 7}},
         {"method": "$/cancelRequest", "params": {"id": 99}}],  # (none such: nothing said)
        {"slow": never},
    )  # fmt: skip
    assert answers == [
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "cancelled"}}
    ]


def change(start: tuple[int, int], end: tuple[int, int], text: str) -> dict:
    return {
        "range": {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        },
        "text": text,
    }


@pytest.mark.parametrize(
    ("text", "changes", "after"),
    [
        ("ab\ncd\n", [change((1, 1), (1, 1), "X")], "ab\ncXd\n"),
        ("ab\ncd\n", [change((0, 1), (1, 1), "")], "ad\n"),  # across lines
        ("ab\r\ncd\r\n", [change((1, 0), (1, 2), "z")], "ab\r\nz\r\n"),  # \r\n ends a line
        ("ab\rcd", [change((1, 2), (1, 2), "!")], "ab\rcd!"),  # so does \r alone
        ("ab\n", [change((0, 9), (0, 9), "?")], "ab?\n"),  # past a line's end: at its end
        ("ab\n", [change((5, 0), (5, 0), "z\n")], "ab\nz\n"),  # past the last line
        # 😀 is two UTF-16 units and one code point; é is one of each
        ("a😀b\n", [change((0, 3), (0, 4), "B")], "a😀B\n"),
        ("é😀x\n", [change((0, 1), (0, 3), "")], "éx\n"),
        ("ab\n", [{"text": "whole\n"}, change((0, 0), (0, 1), "W")], "Whole\n"),  # in order
    ],
)
def test_a_document_takes_the_editors_changes(text, changes, after):
    document = Document("file:///w.py", text, 1, "python")
    document.change(changes, 2)
    assert (document.text, document.version) == (after, 2)


def test_positions_count_utf16_units():
    line = "a😀é b"
    assert [utf16_units(line, i) for i in range(len(line) + 1)] == [0, 1, 3, 4, 5, 6]
    assert [code_points(line, u) for u in (0, 1, 3, 4, 5, 6, 99)] == [0, 1, 2, 3, 4, 5, 5]
    assert utf16_units("é\ud800x", 3) == 3  # (a lone surrogate is one unit)


def test_a_file_uri_is_the_files_path():
    assert Document("file:///home/me/a%20b.py", "", 1, "").path == "/home/me/a b.py"
    assert Document("untitled:Untitled-1", "", 1, "").path == "Untitled-1"


class Session:
    """`portlint server` in a process of its own, spoken to as an editor does, byte for byte."""

    def __init__(self, cwd: Path, hide: tuple[str, ...]) -> None:
        hidden = "".join(f"sys.modules[{name!r}] = None; " for name in hide)
        program = f"import sys; {hidden}from portlint.cli import main; main(['server'])"
        self.process = subprocess.Popen(
            [sys.executable, "-c", program],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def ended(self) -> int:
        """The server's exit status, once it has ended (its pipes closed)."""
        status = self.process.wait(PATIENCE_S)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return status

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(framed({"jsonrpc": "2.0", **message}))
        self.process.stdin.flush()

    def receive(self) -> dict:
        """The server's next message (a server that says nothing for long is stopped: the test
        fails, it does not hang)."""
        assert self.process.stdout is not None
        with ThreadPoolExecutor(1) as reading:
            waiting = reading.submit(read_message, self.process.stdout)
            try:
                message = waiting.result(PATIENCE_S)
            except TimeoutError:
                self.process.kill()
                raise
        assert isinstance(message, dict), self.process.stderr.read() if self.process.stderr else ""
        return message


def test_the_server_speaks_the_protocol_with_nothing_but_the_linters_dependencies(tmp_path):
    """No LSP library is needed (none is imported): requests before `initialize` are refused,
    unknown ones answered with an error, and a `shutdown` then `exit` ends the process with 0."""
    session = Session(tmp_path, hide=("pygls", "lsprotocol", "attrs", "cattrs"))
    session.send({"id": 1, "method": "textDocument/hover", "params": {}})
    assert session.receive() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32002, "message": "not initialized"},
    }
    session.send({"id": 2, "method": "initialize", "params": {"capabilities": {}}})
    answer = session.receive()
    assert answer["id"] == 2
    assert answer["result"]["capabilities"]["textDocumentSync"]["change"] == 2  # incremental
    session.send({"method": "initialized", "params": {}})
    session.send({"id": 9, "method": "initialize", "params": {"capabilities": {}}})
    assert session.receive()["error"] == {"code": -32600, "message": "initialized already"}
    uri = (tmp_path / "w.py").as_uri()
    text = textwrap.dedent(
        """\
        import torch
        d = ("😀", torch.device("cuda"))
        """
    )
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    session.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
    published = session.receive()
    assert published["method"] == "textDocument/publishDiagnostics"
    [found] = published["params"]["diagnostics"]
    assert found["code"] == "PORT101"
    assert found["range"]["start"] == {"line": 1, "character": 11}  # 😀: two units
    typed = {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [change((1, 0), (1, 0), "e = 1; ")],
    }
    session.send({"method": "textDocument/didChange", "params": typed})
    published = session.receive()
    assert published["params"]["version"] == 2
    assert published["params"]["diagnostics"][0]["range"]["start"]["character"] == 18
    half = {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [change((0, 0), (0, 0), "# \ud800\n")],
    }
    session.send({"method": "textDocument/didChange", "params": half})
    published = session.receive()["params"]
    assert published["version"] == 3
    [refused] = published["diagnostics"]
    assert refused["message"].startswith("portlint: the text holds a lone surrogate")
    assert refused["range"]["start"] == {"line": 0, "character": 2}
    session.send({"id": 3, "method": "no/such", "params": {}})
    assert session.receive()["error"]["code"] == -32601
    assert session.process.stdin is not None
    session.process.stdin.write(b"Content-Length: 3\r\n\r\n{x}")  # skipped, answered, logged
    session.process.stdin.flush()
    logged, answered = session.receive(), session.receive()
    assert logged["method"] == "window/logMessage"
    assert answered["id"] is None and answered["error"]["code"] == -32700
    session.send({"id": 4, "method": "shutdown"})
    assert session.receive() == {"jsonrpc": "2.0", "id": 4, "result": None}
    hover = {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 20}}
    session.send({"id": 5, "method": "textDocument/hover", "params": hover})
    assert session.receive()["error"] == {"code": -32600, "message": "shut down"}
    session.send({"method": "exit"})
    assert session.ended() == 0
    assert not (tmp_path / "w.py").exists()


def test_the_server_ends_with_1_when_the_editor_goes_away_without_shutdown(tmp_path):
    session = Session(tmp_path, hide=())
    assert session.process.stdin is not None
    session.process.stdin.close()
    assert session.ended() == 1
