"""The Language Server Protocol's plumbing for `portlint server`: JSON-RPC messages over stdin and
stdout, the documents the editor holds, and positions in the editor's units.

It is small on purpose: the server needs a dozen of the protocol's methods, and importing a
general library for them (pygls and lsprotocol) took longer than the whole start may take. Each
message is a ``Content-Length`` header and a JSON body; requests are answered in the order their
work ends, and the editor's notifications are taken in the order they came. Messages are read on a
thread of their own and handled on the event loop of the main thread, which alone writes.
Positions are in UTF-16 code units, the protocol's default, and lines end at ``\\r\\n``, ``\\r``
or ``\\n``, as Python numbers them.
"""

from __future__ import annotations

import asyncio
import json
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from portlint.findings import split_lines

# JSON-RPC's and the protocol's error codes.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR, NOT_INITIALIZED, REQUEST_CANCELLED = -32602, -32603, -32002, -32800
CANCEL = "$/cancelRequest"
ERROR, WARNING = 1, 2  # (`window/logMessage`'s types; a diagnostic's severities)

Handler = Callable[[Any], Awaitable[Any] | Any]


class Connection:
    """One editor, over ``reader`` and ``writer``: each message's method looked up in
    ``handlers`` (a request's answer is what its handler returns), its ``params`` first checked
    against what ``needs`` says that method's handler reads (``{"textDocument.uri": str}``): a
    request that lacks it is answered with an error, a notification that does is logged."""

    def __init__(
        self,
        reader: BinaryIO,
        writer: BinaryIO,
        handlers: dict[str, Handler],
        needs: dict[str, dict[str, type | tuple[type, ...]]] | None = None,
    ) -> None:
        self.reader, self.writer, self.handlers = reader, writer, handlers
        self.needs = needs or {}
        self.initialized = self.shut_down = False
        self.sent = 0  # (the server's own requests, numbered)
        self.loop = asyncio.new_event_loop()
        self.ended = self.loop.create_future()  # the exit status, once the editor says exit
        self.tasks: set[asyncio.Task] = set()  # (handlers running: kept until they end)
        self.running: dict[Any, asyncio.Task] = {}  # requests still working, by id (to cancel)

    def run(self) -> int:
        """Serve until the editor says exit (0 after a ``shutdown``, else 1) or goes away (1)."""
        threading.Thread(target=self._read, name="portlint-read", daemon=True).start()
        try:
            return self.loop.run_until_complete(self.ended)
        finally:
            for task in self.tasks:  # (what was still working when the editor said exit)
                task.cancel()
            if self.tasks:
                gathered = asyncio.gather(*self.tasks, return_exceptions=True)
                self.loop.run_until_complete(gathered)
            self.loop.close()

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> None:
        """Send a request; its answer is not awaited (the server asks only what it can do
        without: to be told of changed files)."""
        self.sent += 1
        self._write(
            {"jsonrpc": "2.0", "id": f"portlint-{self.sent}", "method": method, "params": params}
        )

    def log(self, message: str, kind: int = ERROR) -> None:
        self.notify("window/logMessage", {"type": kind, "message": message})

    def _read(self) -> None:
        """Read each message (on this thread) and hand it to the event loop; at the end of the
        input, or once the serving has ended, stop (ending the serving)."""
        try:
            while (message := read_message(self.reader)) is not None:
                handler = self._unreadable if isinstance(message, Unreadable) else self._dispatch
                if not self._hand(handler, message):
                    return
        finally:
            self._hand(self._end, 1)

    def _hand(self, handler: Callable[[Any], None], argument: Any) -> bool:
        """Give ``argument`` to ``handler`` on the event loop; False once the loop is closed."""
        try:
            self.loop.call_soon_threadsafe(handler, argument)
        except RuntimeError:  # (the editor said exit: what it sent after is not read)
            return False
        return True

    def _unreadable(self, why: Unreadable) -> None:
        """JSON-RPC's answer to a message that cannot be read: an error with no id."""
        self.log(f"portlint: skipped {why}")
        self._write({"jsonrpc": "2.0", "id": None, "error": {"code": why.code, "message": why}})

    def _end(self, status: int) -> None:
        if not self.ended.done():
            self.ended.set_result(status)

    def _dispatch(self, message: dict) -> None:
        method, params = message.get("method"), message.get("params")
        if method is None:
            return  # (an answer to one of the server's requests)
        if method == "exit":
            self._end(0 if self.shut_down else 1)
            return
        handler = self.handlers.get(method)
        if method == CANCEL and isinstance(params, dict):
            self._cancel(params.get("id"))
        elif "id" not in message:  # a notification: taken now, in the order they come
            if handler is not None and self.initialized and not self.shut_down:
                if (wrong := missing(params, self.needs.get(method, {}))) is not None:
                    self.log(f"portlint: skipped {method}: {wrong}")
                else:
                    self._call(method, handler, params)
        elif not self.initialized and method != "initialize":
            self._answer(message["id"], error=(NOT_INITIALIZED, "not initialized"))
        elif self.shut_down or (self.initialized and method == "initialize"):
            refused = "shut down" if self.shut_down else "initialized already"
            self._answer(message["id"], error=(INVALID_REQUEST, refused))
        elif handler is None:
            self._answer(message["id"], error=(METHOD_NOT_FOUND, f"no method {method!r}"))
        elif (wrong := missing(params, self.needs.get(method, {}))) is not None:
            self._answer(message["id"], error=(INVALID_PARAMS, wrong))
        else:
            self.initialized = True
            self.shut_down = self.shut_down or method == "shutdown"
            self._call(method, handler, params, message["id"])

    def _call(self, method: str, handler: Handler, params: Any, id_: Any = None) -> None:
        """Run ``handler`` (to its first wait, now) and answer the request ``id_`` (if any)
        with what it returns, or with an error where it fails (a defect: the editor is told,
        and the server goes on)."""
        try:
            result = handler(params)
        except Exception:
            self._failed(method, id_)
            return
        if asyncio.iscoroutine(result):
            task = self.loop.create_task(self._awaited(method, result, id_))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            task.add_done_callback(lambda _: result.close())  # (one cancelled before it began)
            if id_ is not None:
                self.running[id_] = task
                task.add_done_callback(lambda _: self.running.pop(id_, None))
        elif id_ is not None:
            self._answer(id_, result)

    def _cancel(self, id_: Any) -> None:
        """The editor no longer wants the answer to request ``id_``: where it is still working,
        it stops, answered with the protocol's error for it (an answer sent already stands)."""
        task = self.running.get(id_)
        if task is not None and task.cancel():
            self._answer(id_, error=(REQUEST_CANCELLED, "cancelled"))

    async def _awaited(self, method: str, work: Awaitable[Any], id_: Any) -> None:
        try:
            result = await work
        except Exception:
            self._failed(method, id_)
        else:
            if id_ is not None:
                self._answer(id_, result)

    def _failed(self, method: str, id_: Any) -> None:
        self.log(f"portlint: {method} failed:\n{traceback.format_exc()}")
        if id_ is not None:
            self._answer(id_, error=(INTERNAL_ERROR, f"{method} failed"))

    def _answer(self, id_: int | str, result: Any = None, error: tuple[int, str] | None = None):
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
        if error is None:
            answer["result"] = result
        else:
            answer["error"] = {"code": error[0], "message": error[1]}
        self._write(answer)

    def _write(self, message: dict) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.writer.flush()


def missing(params: Any, needs: dict[str, type | tuple[type, ...]]) -> str | None:
    """What ``params`` lack of ``needs`` (dotted paths and the type each must have), or None."""
    for path, kind in needs.items():
        value = params
        for key in path.split(".") if path else ():  # ("": the params themselves)
            value = value.get(key) if isinstance(value, dict) else None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            return f"params{'.' if path else ''}{path} is missing or not {_named(kind)}"
    return None


def _named(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "a number", list: "a list", dict: "an object"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


class Unreadable(str):
    """Why a message could not be read (its bytes are skipped), and JSON-RPC's code for it."""

    code = PARSE_ERROR


class NoRequest(Unreadable):
    code = INVALID_REQUEST


MAX_HEADER = 1 << 16  # (a header line's bytes; a longer one is read in parts)
# The longest message read (a text of a few hundred megabytes at most; a longer length is a
# broken header, not a message to allocate).
MAX_LENGTH = 1 << 30


def read_message(reader: BinaryIO) -> dict | Unreadable | None:
    """The next message of ``reader``; None at the end of the input."""
    length = None
    while (header := reader.readline(MAX_HEADER)) not in (b"\r\n", b"\n"):
        if not header:
            return None
        name, _, value = header.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value) if value.strip().isdigit() else None
    if length is None or length > MAX_LENGTH:
        return Unreadable("a message without a valid Content-Length")
    body = reader.read(length)
    if len(body) < length:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return Unreadable("a message that is not JSON (or nests too deep)")
    return message if isinstance(message, dict) else NoRequest("a message that is no object")


@dataclass
class Document:
    """A text the editor holds: what it last said of it."""

    uri: str
    text: str
    version: int | None
    language: str

    @property
    def path(self) -> str:
        """The file's path (for a ``file:`` URI; else the URI's path)."""
        parsed = urlparse(self.uri)
        if parsed.scheme != "file":
            return unquote(parsed.path)
        return url2pathname(f"//{parsed.netloc}{parsed.path}" if parsed.netloc else parsed.path)

    def change(self, changes: list[dict], version: int | None) -> None:
        """Apply the editor's ``changes`` (each a range's new text, or the whole text), in order."""
        for change in changes:
            if "range" not in change:
                self.text = change["text"]
                continue
            lines = split_lines(self.text)
            start, end = (offset(lines, change["range"][end]) for end in ("start", "end"))
            self.text = self.text[:start] + change["text"] + self.text[end:]
        self.version = version


def offset(lines: list[str], position: dict) -> int:
    """Where an editor's ``position`` (``line``, ``character`` in UTF-16 units) is in the text
    of ``lines``: past the end of a line, at its end; past the last line, at the text's end."""
    line = position["line"]
    if line >= len(lines):
        return sum(map(len, lines))
    text = lines[line]
    content = text.rstrip("\r\n")
    return sum(map(len, lines[:line])) + code_points(content, position["character"])


def code_points(line: str, units: int) -> int:
    """The index in ``line`` of the position ``units`` UTF-16 code units into it."""
    if line.isascii():
        return min(units, len(line))
    count = 0
    for index, character in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(character) > 0xFFFF else 1
    return len(line)


def utf16_units(line: str, index: int) -> int:
    """How many UTF-16 code units ``line`` has before ``index`` (in code points)."""
    head = line[:index]
    return len(head) if head.isascii() else len(head.encode("utf-16-le", "surrogatepass")) // 2


def position(lines: list[str], line: int, column: int) -> dict:
    """The editor's position of 0-based ``line`` and code point ``column`` of ``lines``."""
    text = lines[line] if 0 <= line < len(lines) else ""
    return {"line": line, "character": utf16_units(text, column)}


def text_range(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> dict:
    return {"start": position(lines, *start), "end": position(lines, *end)}
