"""Parse less: the parts of a file where a rule can report, with every position kept.

LibCST parses a 7,000-line module in about 0.6 s and computes its positions, parents and
qualified names in about 5 s more; most of that is spent on functions no rule looks at. Here the
file is cut with Python's own parser (``ast``, about 100 times faster) into units — top-level
functions and classes, and the methods of classes — and only these units are kept:

- the units whose code (their text without docstring and comment lines) shows a rule's evidence
  (``portlint.evidence.Evidence``: what must be there for the rule to report, such as ``"cuda"``
  given to a call), or a name that a module-level import mentioning it defines (``from
  torch.cuda import nvtx`` defines ``nvtx``); for a rule without evidence, a trigger;
- for the rules whose findings depend on callers (``guardable``: a function is guarded when its
  callers are), the units that may call a function a kept unit defines, as the platform model
  counts calls (:mod:`portlint.calls`), to a fixpoint (see
  :func:`~portlint.speed.units.callers_closure`);
- for the rules that read the class around a finding (``reads_class``), the ``__init__`` of the
  class of each kept method, and for the guardable ones, of each method kept as a caller too
  (where a class sets the flags its methods test, ``self.use_cuda = ...``);
- for the rules whose findings are at launches (``at_launches``), the units that launch a
  function their triggers mark (``kernel[grid](...)``) and show their evidence, and then those
  functions.

A top-level function kept for its decorators or signature only (a Triton kernel: ``@triton.jit``),
that nothing above needs whole, keeps only those: its body is Triton code, which no rule reads.
At module level, ``if``/``try``/``with`` blocks and the like are kept as they are; imports,
assignments, expressions and classes whose methods all went are dropped where nothing kept can
need them (see :func:`~portlint.speed.module_level.unneeded_statements`). Dropped lines are
left out of the text (a method's first line, or a trimmed function's first body line, becomes
``pass``, so the block still has a body); the cut carries the line of the file that each of its lines is, so every position maps
back (columns do not move: only whole lines go). Left blank instead, they would cost LibCST an
``EmptyLine`` node each: a quarter of its parse of the cuts of vLLM.

Where no rule can report anywhere in the file, :func:`slice_source` returns :data:`NOTHING`: no
need to parse it at all. Where nothing can be dropped or cutting cannot be done safely (two units
share a line), it returns None: parse the whole file. The cut keeps the ``ast`` statements that
remain, from which positions are computed (``portlint.analysis.positions``). (Cutting even when
most of a file is kept pays: on vLLM, the first cut, which blanked the units it dropped, took the
cold run from 56 s to 41 s.)
"""

from __future__ import annotations

import ast
import bisect
import builtins
import enum
import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from portlint.evidence import Entry
from portlint.findings import split_lines
from portlint.speed.gate import (
    code_of,
    compiled,
    found_in,
    imports_in,
    literally,
    words_pattern,
)
from portlint.speed.module_level import ModuleLevel, outside_units, unneeded_statements
from portlint.speed.units import Unit, callers_closure, span_of, units_of, without_docstring


class _Test:
    """Whether a text shows what one rule needs to report there: each piece of its evidence (or,
    for a rule without, one of its triggers), in the text itself, as a name that a module-level
    import mentioning one of its words defines, or as one of its words in an import of the text
    itself (a function's own ``from torch import int64``)."""

    def __init__(self, entry: Entry, module: ModuleLevel) -> None:
        self.pieces: list[tuple[list[re.Pattern], re.Pattern | None, re.Pattern | None]] = []
        for index, e in enumerate(entry.evidence):
            words = words_pattern(set(e.words)) if e.words else None
            names = module.bound_by(words) if words else None
            # The first piece is sought in every unit: first, the patterns that can match at all.
            first = index == 0 and not entry.at_launches
            patterns = found_in(module.source, e.patterns) if first else compiled(e.patterns)
            self.pieces.append((patterns, names, words))
        if not entry.evidence:
            triggers = tuple(map(re.escape, entry.triggers))
            names = module.bound_by(literally(entry.triggers))
            self.pieces.append((found_in(module.source, triggers), names, None))

    def __call__(self, text: str) -> bool:
        return all(
            any(pattern.search(text) for pattern in patterns)
            or (names is not None and names.search(text))
            or (words is not None and "import" in text and words.search(imports_in(text)))
            for patterns, names, words in self.pieces
        )


class Unparsed(enum.Enum):
    """Not parsed yet (a tree of None means: Python refuses the source)."""

    UNPARSED = "unparsed"


UNPARSED = Unparsed.UNPARSED


def parse_ast(source: str) -> ast.Module | None:
    """Python's own parse of ``source``, or None where it fails."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass
class Slice:
    text: str  # the source without the dropped lines
    statements: list[ast.stmt]  # the top-level statements still in it (a dropped unit is gone)
    lines: list[int]  # the line of the source that each line of ``text`` is (see source_line)
    # The rules (by name) that can report nowhere in the file: kept in it by the others only.
    idle: frozenset[str] = frozenset()


# A call of a subscript, `kernel[grid](...)`, as text; and what is no kernel launch there: a
# builtin type or a class (`dict[str, int]()`, `Deque[int]()` make a container).
SUBSCRIPT_CALL = re.compile(r"\](?=\s*\()")
CALLEE = re.compile(r"([A-Za-z_][\w.]*)\s*$")
NOT_KERNELS = frozenset(name for name in dir(builtins) if isinstance(getattr(builtins, name), type))
BRACKETS = {"]": 1, "[": -1}
MAX_SUBSCRIPT = 10_000  # characters looked back for a subscript's `[` (past it: a launch, maybe)
NEWLINE = re.compile("\n")


def launch_lines(source: str) -> set[int]:
    """The lines where ``source`` may launch a Triton kernel: a call of a subscript whose callee
    is not a builtin type or a class (read by its name: kernels are functions). Where the
    brackets cannot be matched on the text, the call counts."""
    calls = []
    for match in SUBSCRIPT_CALL.finditer(source):
        depth, at, stop = 0, match.start(), max(-1, match.start() - MAX_SUBSCRIPT)
        while at > stop:
            depth += BRACKETS.get(source[at], 0)
            if depth == 0:
                break
            at -= 1
        callee = CALLEE.search(source, max(0, at - 200), at) if at > stop else None
        last = callee.group(1).rsplit(".", 1)[-1] if callee else ""
        if not (last in NOT_KERNELS or last[:1].isupper()):
            calls.append(match.start())
    if not calls:
        return set()
    newlines = [match.start() for match in NEWLINE.finditer(source)]
    return {bisect.bisect(newlines, at) + 1 for at in calls}


# What :func:`slice_source` returns where no rule can report anywhere in the file.
NOTHING = Slice("", [], [])


def slice_source(source: str, tree: ast.Module, entries: Sequence[Entry]) -> Slice | None:
    """``source`` (parsed as ``tree``) with the units where the rules of ``entries`` cannot
    report left out; None: parse it whole; :data:`NOTHING`: no rule can report in it."""
    lines = split_lines(source)
    units, methods = units_of(tree, lines)
    leaves = [unit for index, unit in enumerate(units) if index not in methods] + [
        method for group in methods.values() for method in group
    ]
    spans = sorted((u.start, u.end) for u in leaves)
    if any(a_end >= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans)):
        return None
    code_lines = split_lines(code_of(source))  # (emptied lines stay: the numbers hold)
    for unit in leaves:
        unit.text = "".join(lines[unit.start - 1 : unit.end])
        unit.code = without_docstring(code_lines, unit.start, unit.end, unit.docstring)
        if unit.body_start:
            unit.body = without_docstring(code_lines, unit.body_start, unit.end, unit.docstring)
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    statements = [
        (node, "".join(lines[node.lineno - 1 : node.end_lineno]))
        for node in tree.body
        if not isinstance(node, definitions)
    ]
    module = ModuleLevel(source, statements)
    # The nine PORT4xx rules differ in name only: one test for them all.
    named, entries = entries, list({_unnamed(entry): entry for entry in entries}.values())
    tests = {entry: _Test(entry, module) for entry in entries}
    idle: set[Entry] = set()  # (unnamed)
    outside = functools.cache(
        lambda: outside_units(lines, leaves, tree)
    )  # (before lines are dropped)
    # What keeps a function's body: code a rule may report on, or a kernel defined in it.
    body_tests = [test for entry, test in tests.items() if not entry.at_launches]
    hits: list[Unit] = []
    seeds: list[Unit] = []  # kept with their callers
    in_classes: list[Unit] = []  # kept with their class's `__init__`
    launched: list[Unit] = []
    for entry, test in tests.items():
        if entry.at_launches:
            defines_kernel = _Test(entry._replace(evidence=()), module)  # by its triggers
            body_tests.append(defines_kernel)
            # The kernels it defines, and every unit that may launch one of its own or of
            # another module's (the project index knows those kernels' contracts).
            kernels = [u for u in leaves if defines_kernel(u.text)]
            launches = launch_lines(source)
            launchers = [
                u for u in leaves if test(u.code) and any(u.start <= n <= u.end for n in launches)
            ]
            if launchers or test(outside()):
                hits += kernels
                launched += launchers
            else:
                idle.add(_unnamed(entry))
            continue
        found = [u for u in leaves if test(u.code)]
        if not found and not test(outside()):
            idle.add(_unnamed(entry))
        hits += found
        if entry.guardable:
            seeds += found
        if entry.reads_class:
            in_classes += found
    if "__file__" in source and "__main__" in source:
        # (A test module that runs itself as its tests' worker: the platform model asks whether
        # every launch of `__file__` runs only on CUDA, which needs each and its callers.)
        seeds += [u for u in leaves if "__file__" in u.code]
    hits, seeds = list(dict.fromkeys(hits)), list(dict.fromkeys(seeds))
    callers = callers_closure(leaves, seeds)  # (the seeds among them)
    kept = [*callers, *(u for u in launched if u not in callers)]
    headers = [
        u
        for u in hits
        if u not in kept and u.body_start and not any(test(u.body) for test in body_tests)
    ]
    kept += [u for u in hits if u not in kept and u not in headers]
    if not (kept or headers) and not any(
        test(outside()) for entry, test in tests.items() if not entry.at_launches
    ):
        return NOTHING
    # The `__init__` of a class whose methods a rule that reads the class concerns, or whose
    # methods are kept for a guardable rule: the platform model reads the flags a class sets
    # there (`self.use_cuda = torch.cuda.is_available()`).
    in_classes += callers
    for group in methods.values():
        if any(m in in_classes for m in group):
            kept += [m for m in group if m.name == "__init__" and m not in kept]
    dropped = [u for u in leaves if u not in kept and u not in headers]
    gone = {unit.start for unit in dropped if not unit.method}
    for unit in dropped:
        _drop_lines(lines, unit.start, unit.end, keep_pass=unit.method)
    for unit in headers:
        assert unit.body_start is not None  # a header has a body line to drop from
        _drop_lines(lines, unit.body_start, unit.end, keep_pass=True)
    emptied = {units[i].start for i, group in methods.items() if all(m in dropped for m in group)}
    triggers = tuple(dict.fromkeys(t for entry in entries for t in entry.triggers))
    for start, end in unneeded_statements(tree, lines, emptied, triggers, module):
        _drop_lines(lines, start, end, keep_pass=False)
        gone.add(start)
    if not gone and not headers and not dropped:
        return None
    remaining = [node for node in tree.body if span_of(node)[0] not in gone]
    numbers = [number for number, line in enumerate(lines, 1) if line]
    idle_rules = frozenset(entry.name for entry in named if _unnamed(entry) in idle)
    return Slice("".join(lines), remaining, numbers, idle_rules)


def _unnamed(entry: Entry) -> Entry:
    """``entry`` without what names its rule: rules that differ only in that need one test."""
    return entry._replace(module="", name="")


def _drop_lines(lines: list[str], start: int, end: int, keep_pass: bool) -> None:
    """Lines ``start`` to ``end`` taken out (made empty strings, which keep the others' places in
    ``lines``); the first one ``pass`` (as indented) if ``keep_pass``, so that the block around it
    still has a body."""
    for number in range(start - 1, end):
        line = lines[number]
        if number == start - 1 and keep_pass:
            ending = line[len(line.rstrip("\r\n")) :]  # its own: "\n", "\r\n" or a lone "\r"
            lines[number] = f"{line[: len(line) - len(line.lstrip())]}pass{ending}"
        else:
            lines[number] = ""


def source_line(lines: Sequence[int], number: int) -> int:
    """The line of the file that line ``number`` of a cut (whose lines were ``lines`` of the file)
    was; past the cut's end, as far past the file's last kept line."""
    if number <= len(lines):
        return lines[number - 1]
    return (lines[-1] if lines else 0) + number - len(lines)
