from __future__ import annotations

from portlint.findings import SAFE, Edit, Fix, Violation, split_lines
from portlint.registry import all_rules
from portlint.rule import Invalid, Rule
from portlint.suppression import PORTLINT_CODE, PORTLINT_NOQA, Directive, directives


class UnusedNoqa(Rule):
    """`# noqa` naming a portlint code that suppresses nothing.

    ## What it does
    Reports a line's `# noqa: PORTxxx` when no finding of that code is on that line any more
    ("unused"), when the code is not enabled for the file by `select`, `ignore` or
    `per-file-ignores` ("non-enabled": it suppresses nothing either), and codes that name no
    portlint rule ("unknown"). Only portlint's own codes are looked at: `# noqa: E501` and a bare
    `# noqa` belong to other tools.

    ## Why is this bad?
    A stale suppression hides the next real finding on its line: after a refactor, a new
    `torch.device("cuda")` on a line that still says `# noqa: PORT101` would pass CI unseen.

    ## Example
    ```python
    device = worker.device  # noqa: PORT101
    ```

    Use instead:
    ```python
    device = worker.device
    ```

    ## Fix safety
    Safe: the fix removes the unused codes, keeping any others (`# noqa: E501, PORT101` becomes
    `# noqa: E501`), or the whole directive when none is left; a comment line holding nothing
    else is removed, and text after the directive stays as a comment.

    ## References
    - https://docs.astral.sh/ruff/rules/unused-noqa/
    """

    code = "PORT001"
    name = "unused-noqa"
    triggers = ("noqa", "NOQA", "NoQA")

    CASES_ALSO_SELECT = ("PORT101", "PORT409")
    VALID = [
        "ok = x.is_cuda  # noqa: PORT409\n",
        "x = 1  # noqa\n",
        "x = 1  # noqa: E501\n",
        "# portlint: noqa: PORT101\nx = 1\n",
        "x = 1  # noqa: PORT101, PORT001\n",
    ]
    INVALID = [
        Invalid("x = 1  # noqa: PORT101\n", 1, 8, fixed="x = 1\n"),
        Invalid("x = 1  # noqa: E501, PORT101\n", 1, 8, fixed="x = 1  # noqa: E501\n"),
        Invalid(
            "ok = x.is_cuda  # noqa: PORT409, PORT101\n",
            1,
            17,
            fixed="ok = x.is_cuda  # noqa: PORT409\n",
        ),
        Invalid(
            "x = 1  # noqa: PORT101 kept for the XPU port\n",
            1,
            8,
            fixed="x = 1  # kept for the XPU port\n",
        ),
        Invalid(
            "def f():\n    # noqa: PORT999\n    return 1\n", 2, 5, fixed="def f():\n    return 1\n"
        ),
        Invalid("x = 1  # noqa: PORT102\n", 1, 8, fixed="x = 1\n"),
    ]

    @classmethod
    def check(
        cls, path: str, source: str, used: set[tuple[int, str]], enabled: frozenset[str]
    ) -> list[Violation]:
        """The directives of ``source`` naming codes that suppressed nothing (``used`` did)."""
        if not PORTLINT_NOQA.search(source):
            return []  # no directive names a code of ours
        known = all_rules()
        found = []
        lines = split_lines(source)
        for directive in directives(source)[0].values():
            if directive.codes is None or cls.code in directive.codes:
                continue  # a bare noqa directive, or one that suppresses this rule too
            ours = [c for c in directive.codes if PORTLINT_CODE.fullmatch(c) and c != cls.code]
            groups = {
                "unused": [c for c in ours if c in enabled and (directive.line, c) not in used],
                "non-enabled": [c for c in ours if c in known and c not in enabled],
                "unknown": [c for c in ours if c not in known],
            }
            stale = [c for codes in groups.values() for c in codes]
            if not stale:
                continue
            parts = [
                f"{group}: {', '.join(f'`{c}`' for c in codes)}"
                for group, codes in groups.items()
                if codes
            ]
            message = f"Unused `noqa` directive ({'; '.join(parts)})"
            keep = [c for c in directive.codes if c not in stale]
            fix = _remove(directive, keep, lines[directive.line - 1])
            where = (directive.line, directive.col)
            end = (directive.line, directive.end_col)
            found.append(Violation(path, *where, cls.code, message, *end, fix=fix))
        return found


def _remove(directive: Directive, keep: list[str], line: str) -> Fix:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    new = directive.rewrite(body, keep)
    content = f"{new}{ending}" if new.strip() else ""
    edit = Edit(directive.line, 1, directive.line + 1, 1, content)
    return Fix(SAFE, "Remove the unused codes" if keep else "Remove the `noqa` directive", (edit,))
