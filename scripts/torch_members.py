"""What the installed torch has of portlint's table of torch APIs (portlint/cuda_api.py).

    python scripts/torch_members.py           # the installed torch against the table
    python scripts/torch_members.py --json    # the installed torch's sets, as JSON

Run from a checkout, in an environment with portlint (``pip install -e .``), pytest and the torch
to check. It prints the members of each portable type as tests/test_fix_meaning.py reads them
(its ``public`` and ``device_module_members``) and each replacement the table names that torch
has, and against the table: the members that ``members_at(type, installed)`` lacks or has too
many of, and the replacements whose ``since`` is after the installed torch although it has them,
or not after it although it lacks them. Exit status 1 where anything differs.

When a torch comes out: install it as ``.ci/run``'s "oldest and newest torch" step does (``uv pip
install --excludes`` of Triton, cuSOLVER and NVTX: `import torch` needs the rest of its CUDA
libraries, not a GPU), or with a plain ``pip install torch==X``; run this script; then in
portlint/cuda_api.py raise ``NEWEST_KNOWN``, add each new member to ``MEMBERS`` and date it in
``MEMBERS_SINCE``, keep a member torch dropped in ``MEMBERS`` and date its last release in
``MEMBERS_UNTIL``, and give a new replacement's entry the release as its ``since``. The JSON form
records one release's sets, to compare releases with each other (``diff``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from portlint.cuda_api import (
    APIS,
    DEVICE_MODULE,
    MEMBERS,
    OTHER_API,
    members_at,
    parse_version,
)
from tests.test_fix_meaning import needed, portable_members, resolves


def replacements() -> dict[str, tuple[str, tuple[int, int]]]:
    """Each replacement the table names that is a name in torch, as what the entries need of
    torch (``needed``), with the earliest ``since`` of the entries that name it."""
    found: dict[str, tuple[str, tuple[int, int]]] = {}
    for api in (*APIS, OTHER_API):
        if re.fullmatch(r"torch(\.\w+)+", api.replacement) or api.replacement.startswith(
            DEVICE_MODULE
        ):
            what = needed(api.name, api.replacement)
            first = min(api.since, found.get(what, ("", api.since))[1])
            found[what] = (api.replacement, first)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the installed torch's sets")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
    installed = parse_version(torch.__version__)
    table = replacements()
    has = {what: resolves(torch, what) for what in table}
    members = {
        name: sorted(portable_members(torch, name)) for name in MEMBERS if resolves(torch, name)
    }
    if args.json:
        json.dump(
            {"torch": torch.__version__, "has": has, "members": members}, sys.stdout, indent=1
        )
        print()
        return 0
    print(f"torch {torch.__version__}")
    differs = False
    for what, (_, first) in sorted(table.items()):
        if has[what] != (first <= installed):
            differs = True
            since = ".".join(map(str, first))
            print(
                f"  {what}: since {since} in the table, but torch {'has' if has[what] else 'lacks'} it"
            )
    for name, actual in members.items():
        table = members_at(name, installed)
        missing, extra = sorted(set(actual) - table), sorted(table - set(actual))
        print(f"  {name}: {len(actual)} members")
        if missing:
            print(f"    not in members_at (date them in MEMBERS_SINCE, or add them): {missing}")
        if extra:
            print(f"    members_at has, torch has not (MEMBERS_SINCE / MEMBERS_UNTIL): {extra}")
        differs = differs or bool(missing or extra)
    print("differs from the table" if differs else "the table agrees")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
