"""Where a cold run's worker time goes, by phase, in one process (no pool, no profiler).

    python bench/phases.py <package folder>      # e.g. the vllm folder of vLLM 0.33.0

Every ``.py`` file under the folder is read, gated, parsed by Python, modelled (the platform
model: :mod:`portlint.model`) and read for the project index; the files the text gate passes also get the nesting bound, ``compile()`` and the rules,
as a worker of ``portlint check <folder> --no-cache`` (no configuration) does them. The cycle
collector is off, as in a worker. Seconds per phase are printed; the main process's own work
(finding files, joining the index, reporting) is not in them.
"""

from __future__ import annotations

import ast
import gc
import sys
import time
from collections import defaultdict
from pathlib import Path

from portlint.bounds import compile_quietly, deepest
from portlint.config import Overrides, load_settings
from portlint.engine import lint_source
from portlint.index.reading import read_module
from portlint.model import module_model
from portlint.sources import decode_source
from portlint.speed.gate import codes_with_triggers_in


def main(root: Path) -> None:
    import portlint.visit  # noqa: F401  (LibCST and the rules imported before the clock runs)

    gc.disable()
    settings = load_settings(None, Overrides(), Path.cwd())
    packages = frozenset([root.name])
    seconds: dict[str, float] = defaultdict(float)
    linted = 0

    def timed(phase: str, start: float) -> float:
        now = time.perf_counter()
        seconds[phase] += now - start
        return now

    files = sorted(root.rglob("*.py"))
    for file in files:
        start = time.perf_counter()
        source = decode_source(str(file), file.read_bytes())
        start = timed("read", start)
        codes = codes_with_triggers_in(source, settings.codes_for(str(file)))
        start = timed("text gate", start)
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        start = timed("ast.parse (every file)", start)
        if codes:
            linted += 1
            deepest(tree)
            start = timed("nesting bound", start)
            compile_quietly(tree, str(file))
            start = timed("compile()", start)
        model = module_model(tree, source, str(file), settings)
        start = timed("platform model (every file)", start)
        facts = read_module(tree, packages, model)
        start = timed("index reader", start)
        if codes:
            lint_source(
                str(file), source, settings, fix_edits=False, codes=codes, speedups=True,
                tree=tree, facts=facts,
            )  # fmt: skip
            timed("rules (cut, LibCST, analyses; the model made above)", start)
    print(f"{root}: {len(files)} files, {linted} through the rules")
    for phase, spent in seconds.items():
        print(f"  {phase:32} {spent:6.2f} s")
    print(f"  {'total':32} {sum(seconds.values()):6.2f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
