"""Draw the seeded sample of findings that the project index silenced, for an audit's losses check
(docs/precision.md): the findings of kind callers, rebinds or checks in the JSON output of
``portlint check PACKAGE --no-cache --show-silenced --output-format json``.

    python scripts/audit_losses_sample.py SILENCED.json PROJECT_FOLDER [N] [KINDS]

``KINDS`` is a comma-separated list of silencing kinds, or ``all`` (a held-out round reads a
sample of every silenced finding). ``N`` (default 20) are drawn with ``random.Random(20261201)`` from the findings sorted by path,
line, column and code, and printed as the rows of a markdown table to fill in.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter
from pathlib import Path

SEED = 20261201
INDEX_KINDS = {"callers", "rebinds", "checks"}


def main() -> int:
    path, root = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    kinds = sys.argv[4].split(",") if len(sys.argv) > 4 else sorted(INDEX_KINDS)
    findings = json.loads(Path(path).read_text())
    rows = sorted(
        (
            os.path.relpath(f["filename"], root), f["location"]["row"], f["location"]["column"],
            f["code"], f["silenced"]["kind"], f["silenced"]["why"],
        )
        for f in findings
        if "silenced" in f
        and (kinds == ["all"] or f["silenced"]["kind"] in kinds)
        and f["code"][:5] in ("PORT1", "PORT4")
    )  # fmt: skip
    print(f"<!-- {len(rows)} findings silenced with kind {'/'.join(kinds)}; seed {SEED} -->")
    print(f"<!-- by kind: {dict(Counter(row[4] for row in rows))} -->")
    sample = random.Random(SEED).sample(rows, min(n, len(rows)))
    for i, (file, line, col, code, kind, why) in enumerate(sample, 1):
        print(f"| {i} | {file}:{line}:{col} | {code} | {kind} | {why} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
