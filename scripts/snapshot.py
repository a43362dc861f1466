"""Every finding and every silenced finding, with its reason, over the fetched corpus releases.

    python scripts/snapshot.py run CORPUS OUT [-j N] [--config 'KEY = VALUE' ...] [--known-real]
                                  [NAME-VERSION ...]
    python scripts/snapshot.py diff OLD NEW [--lines]
    python scripts/snapshot.py store OUT [--into DIR]   # keep OUT as tests/data/snapshot/
    python scripts/snapshot.py sample OLD NEW [--n 60] [--seed S]   # changed verdicts to read

``run`` lints each release of ``CORPUS`` (a folder that ``python scripts/fetch_corpus.py CORPUS``
filled) once, with no configuration (but the ``--config`` pairs, as the command line's),
as ``portlint check PACKAGE --show-silenced`` does from the
release's folder, the releases in parallel (``-j``, all cores by default), and writes one file a
release, ``OUT/NAME-VERSION.txt``, sorted, one finding a line::

    sglang/srt/utils/common.py:2706:9 PORT402
    sglang/srt/utils/common.py:2710:9 PORT402 ~ guard: torch.cuda.is_available() @2701

(``~``: silenced, then the kind of reason, what says so and the line that says so).
``--known-real``: only the releases and files that ``tests/data/known_real.txt`` names are
linted, the rest of each release read as their project (as ``portlint check FILE`` does); their
lines are those of a whole run, in half its time (what CI runs). The
known-real test (``tests/test_known_real.py``) reads these files; ``diff`` prints what moved
between two snapshots, by release and by rule or kind of reason (``--lines``: every line).
``tests/data/snapshot/`` keeps the snapshot of the code on main, one gzip file a release
(``store`` writes it): a change's ``diff`` against it shows what the change moves. ``sample``
draws a seeded sample of the findings whose verdict changed (reported before and silenced
after, or the reverse), half of each way where there are enough, to be read in their source.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

SILENCED = " ~ "


KNOWN_REAL = Path(__file__).resolve().parent.parent / "tests" / "data" / "known_real.txt"


def known_real_files() -> dict[str, set[str]]:
    """By release (``NAME-VERSION``), the files ``tests/data/known_real.txt`` names."""
    files: dict[str, set[str]] = {}
    for line in KNOWN_REAL.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            project, version, where, _ = line.split()
            files.setdefault(f"{project}-{version}", set()).add(where.rsplit(":", 2)[0])
    return files


def release_lines(root: Path, table: dict | None = None, only: set[str] | None = None) -> list[str]:
    """The snapshot lines of the release in ``root`` (linted from there, paths as printed);
    ``table``: settings laid over (as ``--config 'KEY = VALUE'``); ``only``: the files to lint
    (paths as printed), the release's others read for the project index only."""
    from portlint.config import Overrides, load_settings
    from portlint.discovery import discover
    from portlint.run import lint_files

    packages = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    os.chdir(root)
    settings = load_settings(None, Overrides(table=table or {}), root)
    files, _ = discover([Path(p) for p in packages], settings, False)
    linted = files if only is None else [f for f in files if str(f) in only]
    found = lint_files(
        linted, settings, jobs=1, fix_edits=False, speedups=True, show_silenced=True,
        project=True, context=files,
    )  # fmt: skip
    lines = [f"{v.path}:{v.line}:{v.col} {v.code}" for v in found.violations]
    for s in found.silenced:
        v = s.violation
        why = " ".join(s.why.split())
        lines.append(f"{v.path}:{v.line}:{v.col} {v.code}{SILENCED}{s.kind}: {why} @{s.line}")
    lines += [f"! {error}" for error in found.internal_errors]
    return sorted(set(lines))


def _snapshot_one(job: tuple[str, str, dict, set[str] | None]) -> tuple[str, float]:
    root, out, table, only = job
    started = time.perf_counter()
    lines = release_lines(Path(root), table, only)
    Path(out).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return Path(root).name, time.perf_counter() - started


def releases(corpus: Path, names: list[str] | None = None) -> list[Path]:
    """The releases of ``corpus`` named (by default, those ``scripts/fetch_corpus.py`` fetches:
    other releases in the folder are left out), largest first."""
    from fetch_corpus import AUDIT_SET, HELD_OUT  # (beside this script)

    names = names or [r.replace("==", "-") for r in (*AUDIT_SET, *HELD_OUT)]
    found = [p for p in corpus.iterdir() if (p / ".complete").exists() and p.name in names]
    missing = sorted(set(names) - {p.name for p in found})
    if missing:
        sys.exit(f"snapshot: not fetched in {corpus}: {', '.join(missing)}")
    return sorted(found, key=lambda p: -sum(f.stat().st_size for f in p.rglob("*.py")))


def run(
    corpus: Path,
    out: Path,
    jobs: int,
    names: list[str] | None = None,
    table: dict | None = None,
    known_real: bool = False,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    only = known_real_files() if known_real else {}
    names = names or (sorted(only) if known_real else None)
    todo = [
        (str(root.resolve()), str((out / f"{root.name}.txt").resolve()), table or {},
         only.get(root.name, set()) if known_real else None)
        for root in releases(corpus, names)
    ]  # fmt: skip
    started = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        for done in as_completed([pool.submit(_snapshot_one, job) for job in todo]):
            name, seconds = done.result()
            print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    print(
        f"snapshot: {len(todo)} releases in {time.perf_counter() - started:.0f} s", file=sys.stderr
    )


KEPT = Path(__file__).resolve().parent.parent / "tests" / "data" / "snapshot"


def store(snapshot: Path, into: Path = KEPT) -> None:
    """Keep ``snapshot`` as ``into`` (``tests/data/snapshot/``: main's), gzip files made the same
    from the same text (no time or name in their headers)."""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.txt.gz"):
        old.unlink()
    for file in sorted(snapshot.glob("*.txt")):
        data = gzip.compress(file.read_bytes(), compresslevel=9, mtime=0)
        (into / f"{file.name}.gz").write_bytes(data)


def read_snapshot(folder: Path) -> dict[str, set[str]]:
    """Each release's lines, from ``NAME-VERSION.txt`` or ``NAME-VERSION.txt.gz`` files."""
    snapshot = {}
    for file in folder.iterdir():
        if file.name.endswith(".txt.gz"):
            text = gzip.decompress(file.read_bytes()).decode("utf-8")
        elif file.name.endswith(".txt"):
            text = file.read_text(encoding="utf-8")
        else:
            continue
        snapshot[file.name.split(".txt")[0]] = set(text.splitlines())
    return snapshot


def _kind(line: str) -> str:
    """What a line counts under in a summary: its code, and the kind of reason where silenced."""
    where_code, _, reason = line.partition(SILENCED)
    code = where_code.rsplit(" ", 1)[-1]
    return f"{code} silenced ({reason.split(':', 1)[0]})" if reason else f"{code} reported"


def diff(old: Path, new: Path, every_line: bool) -> int:
    before, after = read_snapshot(old), read_snapshot(new)
    moved = 0
    for release in sorted(set(before) | set(after)):
        gone = before.get(release, set()) - after.get(release, set())
        came = after.get(release, set()) - before.get(release, set())
        if not gone and not came:
            continue
        moved += len(gone) + len(came)
        print(f"{release}: -{len(gone)} +{len(came)}")
        counts = Counter(("-", _kind(x)) for x in gone) + Counter(("+", _kind(x)) for x in came)
        for (sign, kind), count in sorted(counts.items(), key=lambda item: item[0][1]):
            print(f"  {sign}{count} {kind}")
        if every_line:
            for line in sorted(gone):
                print(f"  - {line}")
            for line in sorted(came):
                print(f"  + {line}")
    print(f"{moved} lines moved" if moved else "the same")
    return 0


def verdicts(lines: set[str]) -> dict[str, str]:
    """Each finding (``path:line:col CODE``) -> its reason where silenced, else ``""``."""
    found = {}
    for line in lines:
        finding, _, reason = line.partition(SILENCED)
        found[finding] = reason
    return found


def sample(old: Path, new: Path, n: int, seed: int) -> int:
    """Print a seeded sample of ``n`` findings whose verdict changed, as TSV rows: release,
    finding, the verdict before and after (``reported`` or the reason)."""
    import random

    before, after = read_snapshot(old), read_snapshot(new)
    ways: dict[str, list[tuple[str, str, str, str]]] = {"silenced": [], "reported": []}
    for release in sorted(set(before) & set(after)):
        was, now = verdicts(before[release]), verdicts(after[release])
        for finding in sorted(set(was) & set(now)):
            if bool(was[finding]) != bool(now[finding]):
                way = "silenced" if now[finding] else "reported"
                row = (release, finding, was[finding] or "reported", now[finding] or "reported")
                ways[way].append(row)
    chooser = random.Random(seed)
    half = n // 2
    taken = {way: min(len(rows), half) for way, rows in ways.items()}
    spare = n - sum(taken.values())
    for way, rows in ways.items():  # (one way short of half: the other gets the rest)
        extra = min(spare, len(rows) - taken[way])
        taken[way] += extra
        spare -= extra
    print(
        f"# {len(ways['reported'])} newly reported, {len(ways['silenced'])} newly silenced; seed {seed}"
    )
    for way, rows in ways.items():
        for row in sorted(chooser.sample(rows, taken[way])):
            print("\t".join(row))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    runs = verbs.add_parser("run")
    runs.add_argument("corpus", type=Path)
    runs.add_argument("out", type=Path)
    runs.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    runs.add_argument("--config", action="append", default=[], metavar="'KEY = VALUE'")
    runs.add_argument("--known-real", action="store_true")
    runs.add_argument("releases", nargs="*")
    diffs = verbs.add_parser("diff")
    diffs.add_argument("old", type=Path)
    diffs.add_argument("new", type=Path)
    diffs.add_argument("--lines", action="store_true")
    stores = verbs.add_parser("store")
    stores.add_argument("snapshot", type=Path)
    stores.add_argument("--into", type=Path, default=KEPT)
    samples = verbs.add_parser("sample")
    samples.add_argument("old", type=Path)
    samples.add_argument("new", type=Path)
    samples.add_argument("--n", type=int, default=60)
    samples.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    if args.verb == "store":
        store(args.snapshot, args.into)
        return 0
    if args.verb == "sample":
        return sample(args.old, args.new, args.n, args.seed)
    if args.verb == "run":
        from portlint.config import inline_table

        table = {
            key: value for option in args.config for key, value in inline_table(option).items()
        }
        run(args.corpus, args.out, args.jobs, args.releases, table, args.known_real)
        return 0
    return diff(args.old, args.new, args.lines)


if __name__ == "__main__":
    raise SystemExit(main())
