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
  counts calls (:mod:`portlint.calls`), to a fixpoint (see :func:`_closure`);
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
need them (see :func:`_unneeded_statements`). Dropped lines are left out of the text (a method's
first line, or a trimmed function's first body line, becomes ``pass``, so the block still has a
body); the cut carries the line of the file that each of its lines is, so every position maps
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

from portlint.calls import callers_anywhere, callers_in_class, definition_key, words_of
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

# A function's name after `def` (wherever it is: a name too many only keeps more; a pattern that
# starts with a literal is searched for as fast as ``str.find``, one that starts with ``^`` is not).
DEF = re.compile(r"def[ \t]+(\w+)")
# A line that is only a comment, after its line end (not one continuing a line that ends in a
# backslash). It starts with a literal, which ``re`` finds fast.


@dataclass(eq=False)
class Unit:
    name: str
    start: int  # first line (of the first decorator), 1-based
    end: int  # last line
    owner: str | None  # the class of a method; None for a top-level function or class
    body_start: int | None = None  # a top-level function's first body line, if it starts one
    docstring: tuple[int, int] | None = None  # its docstring's first and last lines
    text: str = ""
    code: str = ""  # the text without the docstring and comment lines: where evidence is sought
    body: str = ""  # the code from ``body_start`` on

    @property
    def method(self) -> bool:
        return self.owner is not None

    @functools.cached_property
    def defined_names(self) -> set[str]:
        """Its name and the names of the functions defined in it (read off the text: a name too
        many only keeps more)."""
        return {self.name, *DEF.findall(self.text)}

    @functools.cached_property
    def words(self) -> frozenset[str]:
        return words_of(self.text)


def _span(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno or node.lineno


def _body_start(node: ast.AST, lines: list[str]) -> int | None:
    """The line a function's body starts, where that line holds nothing of its header."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    first = node.body[0]
    if first.lineno <= node.lineno or lines[first.lineno - 1][: first.col_offset].strip():
        return None
    return first.lineno


def _docstring(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
) -> tuple[int, int] | None:
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.lineno, first.end_lineno or first.lineno
    return None


def _units(tree: ast.Module, lines: list[str]) -> tuple[list[Unit], dict[int, list[Unit]]]:
    """Top-level functions and classes; for each class (by its index), its methods."""
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    units, methods = [], {}
    for node in tree.body:
        if not isinstance(node, definitions):
            continue
        body_start = _body_start(node, lines)
        units.append(Unit(node.name, *_span(node), None, body_start, _docstring(node)))
        if isinstance(node, ast.ClassDef):
            methods[len(units) - 1] = [
                Unit(child.name, *_span(child), node.name, None, _docstring(child))
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return units, methods


def _code(lines: list[str], start: int, end: int, docstring: tuple[int, int] | None) -> str:
    """Lines ``start`` to ``end`` without the docstring."""
    if docstring and start <= docstring[0]:
        return "".join(lines[start - 1 : docstring[0] - 1] + lines[docstring[1] : end])
    return "".join(lines[start - 1 : end])


def _closure(candidates: list[Unit], kept: list[Unit]) -> list[Unit]:
    """``kept``, and the candidates that may call a function defined in a kept unit, to a
    fixpoint (callers of callers: whether a function is guarded depends on its callers being
    guarded).

    A call counts as :mod:`portlint.calls` says.
    """
    kept = list(kept)
    followed: set[int] = set()
    while True:
        new = [u for u in kept if id(u) not in followed]
        if not new:
            return kept
        followed |= {id(u) for u in new}
        anywhere: set[str] = set()
        in_class: dict[str, set[str]] = {}
        for unit in new:
            names = unit.defined_names
            anywhere |= {definition_key(name, unit.owner) for name in names}
            if unit.owner is not None:
                in_class.setdefault(unit.owner, set()).update(names)
        calls = callers_anywhere(anywhere)
        sought = {key.rpartition(".")[2] for key in anywhere}
        own = {owner: callers_in_class(names) for owner, names in in_class.items()}
        kept_ids = {id(u) for u in kept}
        kept += [
            u
            for u in candidates
            if id(u) not in kept_ids
            and (
                (not sought.isdisjoint(u.words) and calls.search(u.text))
                or (
                    u.owner in own
                    and not in_class[u.owner].isdisjoint(u.words)
                    and own[u.owner].search(u.text)
                )
            )
        ]


class _Module:
    """A file's text and its module-level statements other than definitions (with their texts),
    and the names these define, by what they mention."""

    def __init__(self, source: str, statements: list[tuple[ast.stmt, str]]) -> None:
        self.source, self.statements = source, statements
        self._bound: dict[str, re.Pattern | None] = {}

    def bound_by(self, mentions: re.Pattern) -> re.Pattern | None:
        """The names that the statements ``mentions`` matches define, as one pattern: ``from
        torch.cuda import nvtx`` defines ``nvtx``."""
        if mentions.pattern not in self._bound:
            names: set[str] = set()
            for node, text in self.statements:
                if mentions.search(text):
                    names |= _defined_in(node)
            self._bound[mentions.pattern] = words_pattern(names) if names else None
        return self._bound[mentions.pattern]


def _defined_in(node: ast.stmt) -> set[str]:
    """The names ``node``'s imports define. Only imports: a name bound otherwise resolves to
    nothing (``sync = torch.cuda.synchronize`` makes ``sync()`` no reference to torch; see
    :mod:`portlint.analysis.scopes`)."""
    return {
        (alias.asname or alias.name).split(".")[0]
        for child in ast.walk(node)
        if isinstance(child, (ast.Import, ast.ImportFrom))
        for alias in child.names
    }


# An import's names, up to the end of its statement (parenthesized or continued by backslashes).


class _Test:
    """Whether a text shows what one rule needs to report there: each piece of its evidence (or,
    for a rule without, one of its triggers), in the text itself, as a name that a module-level
    import mentioning one of its words defines, or as one of its words in an import of the text
    itself (a function's own ``from torch import int64``)."""

    def __init__(self, entry: Entry, module: _Module) -> None:
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


def _mentions(text: str, triggers: tuple[str, ...], aliases: re.Pattern | None) -> bool:
    return any(t in text for t in triggers) or bool(aliases and aliases.search(text))


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
    units, methods = _units(tree, lines)
    leaves = [unit for index, unit in enumerate(units) if index not in methods] + [
        method for group in methods.values() for method in group
    ]
    spans = sorted((u.start, u.end) for u in leaves)
    if any(a_end >= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans)):
        return None
    code_lines = split_lines(code_of(source))  # (emptied lines stay: the numbers hold)
    for unit in leaves:
        unit.text = "".join(lines[unit.start - 1 : unit.end])
        unit.code = _code(code_lines, unit.start, unit.end, unit.docstring)
        if unit.body_start:
            unit.body = _code(code_lines, unit.body_start, unit.end, unit.docstring)
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    statements = [
        (node, "".join(lines[node.lineno - 1 : node.end_lineno]))
        for node in tree.body
        if not isinstance(node, definitions)
    ]
    module = _Module(source, statements)
    # The nine PORT4xx rules differ in name only: one test for them all.
    named, entries = entries, list({_unnamed(entry): entry for entry in entries}.values())
    tests = {entry: _Test(entry, module) for entry in entries}
    idle: set[Entry] = set()  # (unnamed)
    outside = functools.cache(lambda: _outside(lines, leaves, tree))  # (before lines are dropped)
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
    callers = _closure(leaves, seeds)  # (the seeds among them)
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
    for start, end in _unneeded_statements(tree, lines, emptied, triggers, module):
        _drop_lines(lines, start, end, keep_pass=False)
        gone.add(start)
    if not gone and not headers and not dropped:
        return None
    remaining = [node for node in tree.body if _span(node)[0] not in gone]
    numbers = [number for number, line in enumerate(lines, 1) if line]
    idle_rules = frozenset(entry.name for entry in named if _unnamed(entry) in idle)
    return Slice("".join(lines), remaining, numbers, idle_rules)


def _unnamed(entry: Entry) -> Entry:
    """``entry`` without what names its rule: rules that differ only in that need one test."""
    return entry._replace(module="", name="")


def _outside(lines: list[str], leaves: list[Unit], tree: ast.Module) -> str:
    """The text outside the units and the module-level imports: module-level and class-level
    code (an import holds no finding; the names it defines are looked for in the units). A line
    that an import shares with another statement (``import torch; x = torch.device("cuda")``)
    is outside."""
    inside = bytearray(len(lines))
    for unit in leaves:
        inside[unit.start - 1 : unit.end] = b"\x01" * (unit.end - unit.start + 1)
    imports = (ast.Import, ast.ImportFrom)
    others = {
        line
        for node in tree.body
        if not isinstance(node, imports)
        for line in range(_span(node)[0], _span(node)[1] + 1)
    }
    for node in tree.body:
        if isinstance(node, imports):
            start, end = _span(node)
            for line in range(start, end + 1):
                if line not in others:
                    inside[line - 1] = 1
    return "".join(line for line, within in zip(lines, inside, strict=True) if not within)


SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
WORD = re.compile(r"\w+")


def _unneeded_statements(
    tree: ast.Module,
    lines: list[str],
    emptied: set[int],
    triggers: tuple[str, ...],
    module: _Module,
) -> list[tuple[int, int]]:
    """The spans of the module-level imports, assignments, expressions and classes whose methods
    are all dropped (``emptied``: their first lines) that nothing kept can need, to a fixpoint:
    they define no name that kept code mentions (so no name resolves otherwise), mention no
    function that kept code defines (so no caller the platform model counts, and no kernel launch,
    is lost), and, but for imports (which hold no finding), mention no trigger. A statement that
    shares a line with another stays. ``lines`` are those of the cut so far.

    Where a module-level statement other than an import or a definition mentions a trigger, a
    rule looks at the module's own code in order (a capture's warm-up calls, say): only imports
    go."""
    aliases = module.bound_by(literally(triggers))
    spans = [_span(node) for node in tree.body]
    texts = ["".join(lines[start - 1 : end]) for start, end in spans]
    imports = (ast.Import, ast.ImportFrom)
    definitions = (*imports, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    in_order = any(
        _mentions(text, triggers, aliases)
        for node, text in zip(tree.body, texts, strict=True)
        if not isinstance(node, definitions)
    )
    shared = {
        index
        for index, ((_, a_end), (b_start, _)) in enumerate(itertools.pairwise(spans))
        if a_end >= b_start
    }
    shared |= {index + 1 for index in shared}
    candidates: dict[tuple[int, int], tuple[set[str], set[str], str]] = {}
    needed: list[str] = []
    for index, (node, span, text) in enumerate(zip(tree.body, spans, texts, strict=True)):
        if index in shared:
            needed.append(text)
        elif isinstance(node, imports):
            if any(alias.name == "*" for alias in node.names):
                needed.append(text)  # defines names no one can list
            else:
                candidates[span] = _bound_names(node), set(), text
        elif not in_order and (
            isinstance(node, SIMPLE_STATEMENTS)  # mentions no trigger, as checked above
            or (span[0] in emptied and not _mentions(text, triggers, aliases))
        ):
            candidates[span] = _bound_names(node), set(WORD.findall(text)), text
        else:
            needed.append(text)
    if not candidates:
        return []
    needed_words, defined = set(WORD.findall("".join(needed))), set(DEF.findall("".join(needed)))
    changed = True
    while changed:
        changed = False
        for span, (bound, words, text) in list(candidates.items()):
            if not bound.isdisjoint(needed_words) or not words.isdisjoint(defined):
                del candidates[span]
                needed_words |= words
                defined.update(DEF.findall(text))
                changed = True
    return list(candidates)


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.ClassDef):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


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
