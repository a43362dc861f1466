"""`portlint server`: the time from a change in the editor to its diagnostics, on a long file.

Usage (from the repository root, with the `test` extra installed: pygls's client):

    python bench/lsp_latency.py            # vLLM 0.33.0's gpu_model_runner.py, 7,192 lines
    python bench/lsp_latency.py --file PATH --changes 30 --line 299

It starts the server as an editor does (over stdio, with pygls's client), opens the file (its text
sent by the client; nothing is written), then types: each change inserts one character in a
comment line of its own before line ``--line`` (default: the middle of the file), as an
incremental ``didChange``, and the clock runs until the ``publishDiagnostics`` of that version
arrives. (In gpu_model_runner.py the middle is in a method no rule reports on, which the cut
leaves out; line 299 is in one the rules analyse.) Printed:

- start: the server's process started to its answer to ``initialize`` (what the editor waits
  for before it sends anything else);
- open: ``didOpen`` to the first diagnostics (the server cold: LibCST and the rules imported);
- change, one at a time: each change sent once the previous one's diagnostics came (warm), in ms;
- burst: ``--burst`` changes sent ``--interval`` ms apart, as fast typing does; the time from the
  last change to its diagnostics, and how many times diagnostics were published for the burst;
- the lint alone: what the server's worker does for a change (settings, the engine's fast path,
  the parts of the last version reused), timed in this process on the same text right after each
  change's diagnostics came (this process keeps its own last version, as the server does), and the
  server's part (the change's time less that: debounce, messages, positions), so that the two
  can be told apart on a machine busy with other work.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from portlint.editing import lint_text

VLLM_FILE = Path.home() / ".cache/portlint-corpus/vllm-0.33.0/vllm/v1/worker/gpu_model_runner.py"


class Typist:
    """A client with one document open, typing into a comment line of its own."""

    def __init__(self, client: LanguageClient, path: Path, line: int | None) -> None:
        self.client, self.uri, self.version = client, path.as_uri(), 1
        self.text = path.read_text(encoding="utf-8")
        # where the comment goes (0-based: before the line given)
        self.line = line - 1 if line else self.text.count("\n") // 2
        self.typed = 0
        self.published: asyncio.Queue[tuple[float, int | None]] = asyncio.Queue()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def arrived(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait((time.perf_counter(), params.version))

    def open(self) -> float:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(self.uri, "python", self.version, self.text)
            )
        )
        return time.perf_counter()

    def type_one(self) -> float:
        """Insert one character (the first change opens the comment line); return when sent."""
        self.version += 1
        at = types.Position(self.line, self.typed)
        text = "# x\n" if self.typed == 0 else "x"
        self.typed += 3 if self.typed == 0 else 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=self.version, uri=self.uri),
                [types.TextDocumentContentChangePartial(types.Range(at, at), text)],
            )
        )
        return time.perf_counter()

    def text_now(self) -> str:
        """The text with what was typed (the comment line in the middle of the file)."""
        lines = self.text.splitlines(keepends=True)
        typed = "# " + "x" * (self.typed - 2) + "\n" if self.typed else ""
        return "".join(lines[: self.line]) + typed + "".join(lines[self.line :])

    async def diagnostics_of_current(self) -> tuple[float, int]:
        """When the current version's diagnostics arrived, and how many publications came."""
        count = 0
        while True:
            arrived, version = await self.published.get()
            count += 1
            if version == self.version:
                return arrived, count


async def measure(
    path: Path, changes: int, burst: int, interval_ms: float, line: int | None
) -> None:
    client = LanguageClient("portlint-bench", "1")
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "portlint", "server", cwd=str(path.parent))
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    answered = time.perf_counter()
    client.initialized(types.InitializedParams())
    typist = Typist(client, path, line)
    sent = typist.open()
    arrived, _ = await typist.diagnostics_of_current()
    print(f"{path} ({typist.text.count(chr(10)):,} lines)")
    print(
        f"start: the process started to `initialize` answered: {(answered - started) * 1000:.0f} ms"
    )
    print(
        f"open (cold): {(arrived - sent) * 1000:.0f} ms; from the start: {(arrived - started) * 1000:.0f} ms"
    )

    latencies, alone = [], []
    mine = lint_text(str(path), typist.version, typist.text, None)  # (as the server's open)
    for _ in range(changes):
        sent = typist.type_one()
        arrived, _ = await typist.diagnostics_of_current()
        latencies.append((arrived - sent) * 1000)
        started = time.perf_counter()  # the same text linted here, while the server is idle
        mine = lint_text(str(path), typist.version, typist.text_now(), mine)
        alone.append((time.perf_counter() - started) * 1000)
    added = [whole - lint for whole, lint in zip(latencies, alone, strict=True)]
    print(
        f"change, one at a time (warm, {changes} changes): median {statistics.median(latencies):.0f} ms, "
        f"min {min(latencies):.0f}, max {max(latencies):.0f}"
    )
    print(
        f"the lint alone, in this process, after each change: median {statistics.median(alone):.0f} ms, "
        f"min {min(alone):.0f}; the server's part: median {statistics.median(added):.0f} ms"
    )

    for _ in range(burst):
        sent = typist.type_one()
        await asyncio.sleep(interval_ms / 1000)
    arrived, lints = await typist.diagnostics_of_current()
    print(
        f"burst of {burst} changes {interval_ms:.0f} ms apart: last change to its diagnostics "
        f"{(arrived - sent) * 1000:.0f} ms; {lints} publications of diagnostics for the {burst} changes"
    )
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=VLLM_FILE)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--interval", type=float, default=50, help="ms between burst changes")
    parser.add_argument("--line", type=int, help="type before this line (default: the middle)")
    options = parser.parse_args()
    asyncio.run(
        measure(
            options.file.resolve(), options.changes, options.burst, options.interval, options.line
        )
    )


if __name__ == "__main__":
    main()
