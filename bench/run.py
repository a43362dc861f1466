"""portlint against its peers on vLLM 0.33.0: median wall time, CPU time and peak memory.

Usage (from the repository root; the peers in the same environment or on PATH):

    pip install ruff fixit torchfix            # the peers; not dependencies of portlint
    python bench/run.py --corpus "$(bash ../shared/corpus/fetch_vllm.sh)"
    python bench/run.py --corpus ... --only "portlint warm"   # rerun some cases, keep the rest

Cases:
- portlint cold: no cache, all rules, vLLM's configuration (docs/vllm-portlint.toml);
- portlint cold, whole files: the same with --no-partial-parse;
- portlint warm: the cache filled, nothing changed;
- portlint one file changed: the cache filled, one mid-sized file edited before each run;
- portlint no-trigger: the files of the tree that mention no trigger string, no cache
  (all of them, and a pre-commit-sized batch of 20);
- ruff with a banned-api rule for torch.cuda (TID251), cold and with its cache;
- Fixit with a one-rule LibCST rule (bench/fixit_rule.py) reporting torch.cuda calls;
- torchfix, its default rules;
- LibCST parse of every file, two processes;
- Python's own parser (``ast``) on the files portlint's text gate lets through, two processes:
  the floor of any analysis of those files written in Python.

Each case runs --repeat times (the cases that take minutes: --repeat-slow) and the median is
reported; CPU time
is user + system of the command and its children; memory is the peak resident set of the largest
process. Ratios are to portlint cold. Results go to bench/results.json (per case, with the commit
it was measured at) and bench/results.md (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHANGED_FILE = "vllm/v1/worker/gpu/spec_decode/utils.py"


@dataclass
class Sample:
    wall: float
    cpu: float
    peak_mb: float


def measure(command: list[str], cwd: Path, env: dict | None = None) -> Sample:
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({process.returncode}): {process.stderr.read()}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def median(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.wall for s in samples),
        statistics.median(s.cpu for s in samples),
        max(s.peak_mb for s in samples),
    )


def no_trigger_files(corpus: Path) -> list[str]:
    sys.path.insert(0, str(REPO))
    from portlint.catalog import CATALOG
    from portlint.speed.gate import codes_with_triggers_in

    codes = frozenset(CATALOG)
    return [
        str(path.relative_to(corpus))
        for path in sorted((corpus / "vllm").rglob("*.py"))
        if not codes_with_triggers_in(path.read_text(errors="replace"), codes)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="vLLM's Python tree (vllm/)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-slow", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], help="case names to leave out")
    parser.add_argument(
        "--only", nargs="*", help="run only these cases; the others keep their last results"
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results.md")
    args = parser.parse_args()
    corpus = args.corpus.resolve().parent  # the folder holding vllm/
    work = Path(tempfile.mkdtemp(prefix="portlint-bench-"))
    tree = work / "tree"
    shutil.copytree(corpus / "vllm", tree / "vllm")  # edits and caches stay out of the corpus
    python = sys.executable
    config = ["--config", str(REPO / "docs" / "vllm-portlint.toml")]
    portlint = [python, "-m", "portlint", "check", "vllm", "-j", "2", "--exit-zero", "-q", *config]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    quiet = [f for f in no_trigger_files(tree)]

    def portlint_cold(extra=()):
        return [*portlint, "--no-cache", *extra]

    def clear():
        shutil.rmtree(tree / ".portlint_cache", ignore_errors=True)
        shutil.rmtree(tree / ".ruff_cache", ignore_errors=True)

    def edit():
        path = tree / CHANGED_FILE
        path.write_text(path.read_text() + f"# edit {time.time_ns()}\n")

    ruff_config = ["--config", 'lint.flake8-tidy-imports.banned-api."torch.cuda".msg = "portable"']
    ruff = [
        "ruff",
        "check",
        "vllm",
        "--isolated",
        "--select",
        "TID251",
        "--exit-zero",
        *ruff_config,
    ]
    fixit_config = work / "fixit"
    fixit_config.mkdir()
    shutil.copy(REPO / "bench" / "fixit_rule.py", fixit_config / "torch_cuda_rule.py")
    cases = [
        ("portlint cold", portlint_cold(), clear, args.repeat_slow),
        ("portlint cold, whole files", portlint_cold(["--no-partial-parse"]), clear,
         args.repeat_slow),
        ("portlint warm", portlint, None, args.repeat),
        ("portlint one file changed", portlint, edit, args.repeat),
        ("portlint no-trigger, all files", [*portlint_cold()[:4], *quiet, "--no-cache", "-q"],
         None, args.repeat),
        ("portlint no-trigger, 20 files", [*portlint_cold()[:4], *quiet[:20], "--no-cache", "-q"],
         None, args.repeat),
        ("ruff banned-api, cold", [*ruff, "--no-cache"], None, args.repeat),
        ("ruff banned-api, cached", ruff, None, args.repeat),
        ("LibCST parse, 2 processes", [python, str(REPO / "bench" / "parse_all.py"), "vllm"],
         None, args.repeat_slow),
        ("ast parse of the gated files, 2 processes",
         [python, str(REPO / "bench" / "parse_all.py"), "vllm", "--ast-gated", config[1]],
         None, args.repeat),
        ("Fixit, one LibCST rule", ["fixit", "--rules", "torch_cuda_rule", "lint", "vllm"],
         None, args.repeat_slow),
        ("torchfix", ["torchfix", "vllm"], None, args.repeat_slow),
    ]  # fmt: skip
    rows = []
    warmed = False
    for name, command, before, repeat in cases:
        wanted = name not in args.skip and (args.only is None or name in args.only)
        if not wanted or (shutil.which(command[0]) is None and command[0] != python):
            print(f"skipped: {name}", file=sys.stderr)
            continue
        if name.startswith("portlint warm") and not warmed:
            measure(portlint, tree, env)
            warmed = True
        if name.startswith("ruff banned-api, cached"):
            measure(ruff, tree, env)
        samples = []
        for _ in range(repeat):
            if before:
                before()
            case_env = {**env, "PYTHONPATH": f"{REPO}:{fixit_config}"}
            samples.append(measure(command, tree, case_env))
        rows.append((name, median(samples), repeat))
        print(f"{name}: {rows[-1][1]}", file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    results_file = args.out.with_suffix(".json")
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    for name, sample, repeat in rows:
        results[name] = {**asdict(sample), "runs": repeat, "commit": commit}
    results_file.write_text(json.dumps(results, indent=2) + "\n")
    report = render(results, corpus, len(quiet))
    print(report)
    # The sections written by hand after the table (bench/compare.py's rows) stay.
    kept = args.out.read_text().partition("\n## ")[1:] if args.out.exists() else ()
    args.out.write_text(report + "".join(kept))


def render(results: dict, corpus: Path, quiet: int) -> str:
    base = results.get("portlint cold")
    lines = [
        f"vLLM 0.33.0 ({len(list((corpus / 'vllm').rglob('*.py')))} files), "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; no-trigger: {quiet} files",
        "",
        "| case | runs | wall (s) | CPU (s) | peak RSS (MB) | wall / portlint cold | commit |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, r in results.items():
        ratio = f"{r['wall'] / base['wall']:.3g}" if base else ""
        lines.append(
            f"| {name} | {r['runs']} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['peak_mb']:.0f} | "
            f"{ratio} | {r['commit']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
