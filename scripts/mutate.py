"""Mutations of real files, each checked as tests/fuzzing.py checks an input, then fixed on disk.

    python scripts/mutate.py [--files 25] [--seed 0] CORPUS...

From each corpus folder, ``--files`` Python files that mention a trigger of a rule (so portlint
parses them) are taken, the same for the same seed, and each is mutated in every way of
:data:`MUTATIONS`: truncated, a line deleted, random bytes inserted, a NUL, invalid UTF-8, a
BOM, CRLF and lone-CR line ends, tabs and spaces mixed, deep nesting, a 10 MB line. Each input
must not crash or hang portlint and must get CPython's verdict; a valid one must stay valid
under `--fix --unsafe-fixes`, which a second time changes nothing. Then every input of a corpus
is written to a folder and fixed there by the command line (`check --fix --unsafe-fixes`, one
run): a data-loss event is a file that changed though it was not valid, or that is not valid
after (a truncated or half-written file is not), or a temporary file left behind. The figures go to
docs/robustness.md. Exit 1 where anything is not zero.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from portlint.speed.gate import codes_with_triggers_in
from tests.fuzzing import FAILURES, FIXING, OUTCOMES, cpython_verdict, run_one


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randint(0, len(data))]


def delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def random_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]


def nul(data: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + b"\x00" + data[at:]


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"]) + data[at:]


def bom(data: bytes, rng: random.Random) -> bytes:
    return b"\xef\xbb\xbf" + data


def crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def lone_cr(data: bytes, rng: random.Random) -> bytes:
    """Some line ends (or all) made lone carriage returns."""
    lines = _lines(data.replace(b"\r\n", b"\n"))
    every = rng.random() < 0.5
    return b"".join(
        line[:-1] + b"\r" if line.endswith(b"\n") and (every or rng.random() < 0.1) else line
        for line in lines
    )


def tabs_and_spaces(data: bytes, rng: random.Random) -> bytes:
    """Four leading spaces made a tab on some lines; or a form feed put before an indent."""
    lines = _lines(data)
    for index, line in enumerate(lines):
        if line.startswith(b"    ") and rng.random() < 0.2:
            lines[index] = rng.choice([b"\t" + line[4:], b"\f" + line, b"  \t" + line[4:]])
    return b"".join(lines)


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([60, 150, 300, 5_000, 50_000])
    nest = rng.choice(
        [b"y = x" + b".a" * depth, b"y = f" + b"()" * depth, b"y = " + b"+".join([b"a"] * depth),
         b"y = " + b"[" * depth + b"]" * depth, b"y = " + b"(" * depth + b")" * depth]
    )  # fmt: skip
    lines = _lines(data)
    lines.insert(rng.randint(0, len(lines)), nest + b"\n")
    return b"".join(lines)


def huge_line(data: bytes, rng: random.Random) -> bytes:
    return data + b"\ny = [" + b"1, " * 3_400_000 + b"]  # cuda\n"


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    f.__name__: f
    for f in (truncate, delete_line, random_bytes, nul, invalid_utf8, bom, crlf, lone_cr,
              tabs_and_spaces, deep_nesting, huge_line)
}  # fmt: skip


def sample(corpus: Path, files: int, rng: random.Random) -> list[Path]:
    """``files`` Python files of ``corpus`` under 100 kB that mention a trigger of a rule."""
    candidates = sorted(
        path
        for path in corpus.rglob("*.py")
        if path.is_file() and path.stat().st_size < 100_000
        and codes_with_triggers_in(path.read_text("utf-8", "replace"), FIXING.select)
    )  # fmt: skip
    return rng.sample(candidates, min(files, len(candidates)))


def fixed_on_disk(inputs: dict[str, bytes]) -> list[str]:
    """The data-loss events of one `check --fix --unsafe-fixes` run over ``inputs``."""
    events = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, data in inputs.items():
            (root / name).write_bytes(data)
        command = [sys.executable, "-m", "portlint", "check", ".", "--fix", "--unsafe-fixes",
                   "--no-cache", "-q"]  # fmt: skip
        subprocess.run(command, cwd=root, capture_output=True, timeout=3600)
        for name, data in inputs.items():
            after = (root / name).read_bytes()
            if after != data and not (cpython_verdict(data).valid and cpython_verdict(after).valid):
                events.append(f"{name}: changed, and is not valid after (or was not before)")
        events += [f"left behind: {p.name}" for p in root.iterdir() if p.name not in inputs]
    return events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+", type=Path)
    parser.add_argument("--files", type=int, default=25, help="files per corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang", type=float, default=120.0, help="seconds before a hang")
    options = parser.parse_args(argv)
    import portlint.visit  # noqa: F401  (imported once, before the checks fork)

    rng = random.Random(options.seed)
    counts: Counter[str] = Counter()
    losses: list[str] = []
    start = time.monotonic()
    for corpus in options.corpora:
        inputs: dict[str, bytes] = {}
        for path in sample(corpus, options.files, rng):
            original = path.read_bytes()
            for name, mutate in MUTATIONS.items():
                data = mutate(original, rng)
                outcome, detail = run_one(data, options.hang)
                counts[outcome] += 1
                counts[f"{name}:{outcome}"] += 1
                if outcome in FAILURES:
                    print(f"{outcome}: {name} of {path}: {detail.strip().splitlines()[-1]}")
                if name != "huge_line":  # (one 10 MB line per file is enough for the big run)
                    inputs[f"{path.stem}.{name}.{len(inputs)}.py"] = data
        losses += fixed_on_disk(inputs)
        print(f"{corpus}: {len(inputs)} mutated files fixed on disk", file=sys.stderr)
    tried = sum(counts[outcome] for outcome in OUTCOMES)
    print(
        f"{tried} mutated inputs tried ({time.monotonic() - start:.0f} s): "
        + ", ".join(f"{counts[outcome]} {outcome}" for outcome in OUTCOMES)
        + f"; {len(losses)} data-loss events"
    )
    for name in MUTATIONS:
        print(f"  {name}: " + ", ".join(f"{counts[f'{name}:{o}']} {o}" for o in OUTCOMES))
    for loss in losses:
        print(f"data loss: {loss}")
    return 1 if losses or any(counts[outcome] for outcome in FAILURES) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore::SyntaxWarning")
    sys.exit(main())
