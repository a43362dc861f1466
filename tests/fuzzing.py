"""What every input must give, whatever it is: the properties the fuzz test (tests/test_fuzz.py)
and the release scripts (scripts/fuzz.py, scripts/mutate.py) check.

For a file's bytes: portlint does not crash; it agrees with CPython on whether the file is valid
(where ``compile()`` refuses it, portlint reports a syntax error at CPython's line, and where
``compile()`` accepts it, portlint reports none); and where the file is valid, ``--fix
--unsafe-fixes`` leaves it valid and a second fix changes nothing. A file must mention a trigger
of a rule for portlint to parse it at all (see ``portlint.speed.gate``): inputs get one.
"""

from __future__ import annotations

import multiprocessing
import random
import traceback
import warnings
from dataclasses import dataclass

from portlint.bounds import TOO_DEEP, TOO_LARGE
from portlint.catalog import CATALOG
from portlint.engine import lint_source
from portlint.findings import applicable
from portlint.fix_rounds import fix_source
from portlint.settings import Settings
from portlint.sources import SourceError, decode_source
from portlint.speed.gate import codes_with_triggers_in
from portlint.speed.reuse import Parts

# Statements holding the strings the rules look for, put at statement boundaries.
TRIGGERS = (
    'd = torch.device("cuda")\n',
    "y = x.cuda()\n",
    "torch.cuda.synchronize()\n",
    "with torch.cuda.graph(g):\n    out = model(x)\n",
    "n = s.new_empty(3)\n",
    "@triton.jit\ndef kernel(x_ptr):\n    pass\n",
)
IMPORTS = "import torch\nimport triton\n"
# The ways portlint reads a file: partial parsing or whole, findings with fixes or without.
WAYS = [
    (Settings(select=frozenset(CATALOG), partial_parse=partial), fix_edits)
    for partial in (True, False)
    for fix_edits in (False, True)
]
FIXING = WAYS[-1][0]
BOUNDS = (TOO_DEEP, TOO_LARGE)
# What checking an input can give (see check and run_one), and which of these are failures.
OUTCOMES = ("valid", "refused", "bounded", "unparsed", "crash", "hang", "disagreement")
FAILURES = ("crash", "hang", "disagreement")


class Disagreement(AssertionError):
    """portlint and CPython differ on an input, or a fix broke or changed a fixed file."""


@dataclass(frozen=True)
class Verdict:
    valid: bool
    line: int | None = None  # where it is not: the line of the error
    message: str = ""


def cpython_verdict(data: bytes | str) -> Verdict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "m.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return Verdict(False, error.lineno or 1, f"SyntaxError: {error.msg}")
    except ValueError as error:  # a null byte (Python 3.11)
        return Verdict(False, None, str(error))
    except (RecursionError, MemoryError) as error:
        return Verdict(False, None, type(error).__name__)
    return Verdict(True)


def inject(program: str, at: list[int], triggers: list[str], imports: bool = True) -> str:
    """``program`` with each of ``triggers`` put before the line ``at`` says (a statement
    boundary where that line starts one), indented as that line is."""
    lines = program.splitlines(keepends=True) or [""]
    for line, trigger in sorted(zip(at, triggers, strict=True), reverse=True):
        index = min(line, len(lines) - 1)
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip(" \t"))]
        lines.insert(index, "".join(indent + part for part in trigger.splitlines(keepends=True)))
    return (IMPORTS if imports else "") + "".join(lines)


def with_triggers(program: str, rng: random.Random) -> str:
    """``program`` with 1 to 3 of :data:`TRIGGERS` at lines ``rng`` picks, and mostly with the
    imports that make them torch's and triton's."""
    lines = program.count("\n") + 1
    count = rng.randint(1, 3)
    at = [rng.randint(0, lines) for _ in range(count)]
    triggers = [rng.choice(TRIGGERS) for _ in range(count)]
    return inject(program, at, triggers, imports=rng.random() < 0.8)


def check(data: bytes, path: str = "m.py") -> str:
    """Every property, for one file's bytes (:class:`Disagreement` where one fails). Returns
    "valid" or "refused" (CPython's verdict), "bounded" (valid, but past portlint's bounds: one
    diagnostic says so) or "unparsed" (no trigger of any rule: portlint does not parse it)."""
    expected = cpython_verdict(data)
    try:
        source = decode_source(path, data)
    except SourceError as error:
        if expected.valid:
            raise Disagreement(f"portlint cannot read a valid file: {error.violation}") from None
        return "refused"
    if not codes_with_triggers_in(source, FIXING.select):
        return "unparsed"
    # The editor's way: the parts of another text (this one less its middle line) reused.
    editor, settings = Parts(), WAYS[0][0]
    lines = source.splitlines(keepends=True)
    other = "".join(lines[: len(lines) // 2] + lines[len(lines) // 2 + 1 :])
    lint_source(path, other, settings, fix_edits=False, parts=editor)
    if lint_source(path, source, settings, fix_edits=False, parts=editor) != lint_source(
        path, source, settings, fix_edits=False
    ):
        raise Disagreement("the editor's lint, reusing another text's parts, differs")
    for settings, fix_edits in WAYS:
        found = lint_source(path, source, settings, fix_edits=fix_edits)
        diagnostics = [v for v in found if v.code is None]
        bounded = len(diagnostics) == 1 and diagnostics[0].message.startswith(BOUNDS)
        if expected.valid:
            if bounded:
                return "bounded"
            if diagnostics:
                raise Disagreement(f"a valid file gets {diagnostics[0].message!r}")
        elif expected.message in ("RecursionError", "MemoryError"):
            if not bounded:
                raise Disagreement(f"{expected.message} in CPython, portlint gives {diagnostics}")
        elif [(v.line, v.message) for v in diagnostics] != [(expected.line, expected.message)]:
            raise Disagreement(f"CPython: {expected}; portlint: {diagnostics}")
    if not expected.valid:
        return "refused"
    first = fix_source(path, source, FIXING, unsafe=True)
    fixed = first.source
    if not cpython_verdict(fixed).valid:
        raise Disagreement("the fixed file is not valid")
    # A fix applies what the lint listed: the fixes of findings that fixes brought are left, and
    # reported as fixable (a file with an unresolved `torch` gains an `import torch`).
    left = any(applicable(v, True) for v in first.violations)
    if not left and fix_source(path, fixed, FIXING, unsafe=True).source != fixed:
        raise Disagreement("a second fix changes the fixed file")
    return "valid"


def _checked(data: bytes, answers) -> None:
    try:
        answers.put((check(data), ""))
    except Disagreement as error:
        answers.put(("disagreement", str(error)))
    except BaseException:
        answers.put(("crash", traceback.format_exc()))


def run_one(data: bytes, hang_after: float) -> tuple[str, str]:
    """What checking ``data`` gave, in a process of its own (a hang or a crash by a signal is
    counted, not suffered)."""
    answers = multiprocessing.SimpleQueue()
    process = multiprocessing.Process(target=_checked, args=(data, answers))
    process.start()
    process.join(hang_after)
    if process.is_alive():
        process.kill()
        process.join()
        return "hang", f"over {hang_after} s"
    if answers.empty():
        return "crash", f"the process died (exit {process.exitcode})"
    return answers.get()
