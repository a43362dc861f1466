"""Parse less: the parts of a file that a rule can report on, with every position kept.

LibCST parses a 7,000-line module in about 0.6 s and computes its positions, parents and
qualified names in about 5 s more; most of that is spent on functions no rule looks at. Here the
file is cut with Python's own parser (``ast``, about 100 times faster) into units — top-level
functions and classes, and the methods of classes — and only these units are kept:

- the units that mention a trigger string, or a name that a module-level statement mentioning
  one binds (``from torch.cuda import nvtx`` binds ``nvtx``);
- for the rules whose findings depend on callers (the guardable ones: a function is guarded when
  its callers are), the units that may call a function a kept unit defines, as the guard
  analysis counts calls, to a fixpoint (see :func:`_closure`), and the ``__init__`` of a class
  whose methods they concern (where ``self.device`` is set, which their fixes use);
- the units that launch a Triton kernel a kept unit defines (``kernel[grid](...)``: PORT202
  checks the launch, one call away).

A top-level function that mentions a trigger only in its decorators or signature (a Triton
kernel: ``@triton.jit``), and that nothing above needs whole, keeps only those: its body is
Triton code, which no rule reads. At module level, imports, ``if``/``try``/``with`` blocks and
the like are kept as they are; assignments, expressions and classes whose methods all went are
dropped where nothing kept can need them (see :func:`_unneeded_statements`). Dropped lines become
blank lines (a method's first line, or a trimmed function's first body line, becomes ``pass``,
so the block still has a body), so every line and column stays where it was.

Where nothing can be dropped or cutting cannot be done safely (two units share a line),
:func:`slice_source` returns None: parse the whole file. The cut keeps the ``ast`` statements
that remain, from which positions are computed (``portlint.analysis.positions``). (Cutting even
when most of a file is kept pays: a blanked line costs LibCST almost nothing; on vLLM this took
the cold run from 56 s to 41 s.)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from portlint.findings import split_lines

DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)


@dataclass(eq=False)
class Unit:
    name: str
    start: int  # first line (of the first decorator), 1-based
    end: int  # last line
    owner: str | None  # the class of a method; None for a top-level function or class
    body_start: int | None = None  # a top-level function's first body line, if it starts one
    text: str = ""
    body: str = ""  # the text from ``body_start`` on

    @property
    def method(self) -> bool:
        return self.owner is not None

    def defined_names(self) -> set[str]:
        """Its name and the names of the functions defined in it (read off the text: a name too
        many only keeps more)."""
        return {self.name, *DEF.findall(self.text)}


def _span(node: ast.AST) -> tuple[int, int]:
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


def _units(tree: ast.Module, lines: list[str]) -> tuple[list[Unit], dict[int, list[Unit]]]:
    """Top-level functions and classes; for each class (by its index), its methods."""
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    units, methods = [], {}
    for node in tree.body:
        if not isinstance(node, definitions):
            continue
        units.append(Unit(node.name, *_span(node), owner=None, body_start=_body_start(node, lines)))
        if isinstance(node, ast.ClassDef):
            methods[len(units) - 1] = [
                Unit(child.name, *_span(child), owner=node.name)
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return units, methods


def _words(names: set[str]) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")


def _closure(candidates: list[Unit], kept: list[Unit]) -> list[Unit]:
    """``kept``, and the candidates that may call a function defined in a kept unit, to a
    fixpoint (callers of callers: whether a function is guarded depends on its callers being
    guarded).

    A call counts as the guard analysis counts it: ``f(...)`` for a
    function ``f`` outside classes; for a function ``f`` in class ``C``, ``C.f(...)`` anywhere
    and ``self.f(...)``/``cls.f(...)`` in ``C``'s methods. A method named like a common word
    (``forward``) then keeps its own class's callers, not every unit that says ``forward``.
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
            names = unit.defined_names()
            if unit.owner is None:
                anywhere |= names
            else:
                anywhere |= {f"{unit.owner}.{name}" for name in names}
                in_class.setdefault(unit.owner, set()).update(names)
        calls = _words(anywhere)
        own = {
            owner: re.compile(r"\b(?:self|cls)\.(?:" + "|".join(map(re.escape, sorted(n))) + r")\b")
            for owner, n in in_class.items()
        }
        kept_ids = {id(u) for u in kept}
        kept += [
            u
            for u in candidates
            if id(u) not in kept_ids
            and (calls.search(u.text) or (u.owner in own and own[u.owner].search(u.text)))
        ]


def _aliases(tree: ast.Module, lines: list[str], triggers: tuple[str, ...]) -> re.Pattern | None:
    """Names bound at module level by a statement that mentions a trigger (``from torch.cuda
    import nvtx`` binds ``nvtx``): a unit that uses one of them concerns a rule too."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a unit: kept on its own merits
        start, end = _span(node)
        if not any(t in "".join(lines[start - 1 : end]) for t in triggers):
            continue
        for child in ast.walk(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in child.names}
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)
    if not names:
        return None
    return _words(names)


def parse_ast(source: str) -> ast.Module | None:
    """Python's own parse of ``source``, or None where it fails."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass
class Slice:
    text: str  # the source with the dropped units blanked out
    statements: list[ast.stmt]  # the top-level statements still in it (a blanked unit is gone)


def _mentions(text: str, triggers: tuple[str, ...], aliases: re.Pattern | None) -> bool:
    return any(t in text for t in triggers) or bool(aliases and aliases.search(text))


def _launchers(candidates: list[Unit], kept: list[Unit]) -> list[Unit]:
    """The candidates that may launch a Triton kernel a kept unit defines (``kernel[grid](...)``,
    the launch PORT202 checks); one call away, as PORT202 looks no further."""
    names = {name for unit in kept for name in unit.defined_names()}
    if not names:
        return []
    launch = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\s*\[")
    return [unit for unit in candidates if unit not in kept and launch.search(unit.text)]


def slice_source(
    source: str,
    tree: ast.Module,
    triggers: tuple[str, ...],
    followed: tuple[str, ...] | None = None,
) -> Slice | None:
    """``source`` (parsed as ``tree``) with the units no trigger concerns blanked out, or None:
    parse it whole. ``followed``: the triggers of the rules whose findings depend on callers (the
    guardable ones); by default all of them."""
    followed = triggers if followed is None else followed
    lines = split_lines(source)
    units, methods = _units(tree, lines)
    leaves = [unit for index, unit in enumerate(units) if index not in methods] + [
        method for group in methods.values() for method in group
    ]
    for unit in leaves:
        unit.text = "".join(lines[unit.start - 1 : unit.end])
        if unit.body_start:
            unit.body = "".join(lines[unit.body_start - 1 : unit.end])
    spans = sorted((u.start, u.end) for u in leaves)
    if any(a_end >= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False)):
        return None
    aliases = _aliases(tree, lines, triggers)
    followed_aliases = aliases if followed == triggers else _aliases(tree, lines, followed)
    hits = [u for u in leaves if _mentions(u.text, triggers, aliases)]
    seeds = [u for u in hits if _mentions(u.text, followed, followed_aliases)]
    kept = _closure(leaves, seeds)
    kept += _launchers(leaves, hits)
    headers = [
        u
        for u in hits
        if u not in kept and u.body_start and not _mentions(u.body, triggers, aliases)
    ]
    kept += [u for u in hits if u not in kept and u not in headers]
    for group in methods.values():  # where a guardable finding's fix may use `self.device`
        if any(m in seeds for m in group):
            kept += [m for m in group if m.name == "__init__" and m not in kept]
    dropped = [u for u in leaves if u not in kept and u not in headers]
    blanked = {unit.start for unit in dropped if not unit.method}
    for unit in dropped:
        _blank(lines, unit.start, unit.end, keep_pass=unit.method)
    for unit in headers:
        _blank(lines, unit.body_start, unit.end, keep_pass=True)
    emptied = {units[i].start for i, group in methods.items() if all(m in dropped for m in group)}
    for start, end in _unneeded_statements(tree, lines, emptied, triggers, aliases):
        _blank(lines, start, end, keep_pass=False)
        blanked.add(start)
    if not blanked and not headers and not dropped:
        return None
    statements = [node for node in tree.body if _span(node)[0] not in blanked]
    return Slice("".join(lines), statements)


SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
WORD = re.compile(r"\w+")


def _unneeded_statements(
    tree: ast.Module,
    lines: list[str],
    emptied: set[int],
    triggers: tuple[str, ...],
    aliases: re.Pattern | None,
) -> list[tuple[int, int]]:
    """The spans of the module-level assignments, expressions and classes whose methods are all
    dropped (``emptied``: their first lines) that nothing kept can need, to a fixpoint: they
    mention no trigger, bind no name that kept code mentions (so no name resolves otherwise), and
    mention no function that kept code defines (so no caller the guard analysis counts, and no
    kernel launch, is lost). A statement that shares a line with another stays. ``lines`` are
    those of the cut so far.

    Where a module-level statement other than an import or a definition mentions a trigger, a
    rule looks at the module's own code in order (a capture's warm-up calls, say): none goes."""
    spans = [_span(node) for node in tree.body]
    texts = ["".join(lines[start - 1 : end]) for start, end in spans]
    definitions = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    if any(
        _mentions(text, triggers, aliases)
        for node, text in zip(tree.body, texts, strict=True)
        if not isinstance(node, definitions)
    ):
        return []
    shared = {
        index
        for index, ((_, a_end), (b_start, _)) in enumerate(zip(spans, spans[1:], strict=False))
        if a_end >= b_start
    }
    shared |= {index + 1 for index in shared}
    candidates: dict[tuple[int, int], tuple[set[str], set[str], str]] = {}
    needed: list[str] = []
    for index, (node, span, text) in enumerate(zip(tree.body, spans, texts, strict=True)):
        if index not in shared and (
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
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _blank(lines: list[str], start: int, end: int, keep_pass: bool) -> None:
    """Lines ``start`` to ``end`` made blank; the first one ``pass`` (as indented) if
    ``keep_pass``, so that the block around it still has a body."""
    for number in range(start - 1, end):
        line = lines[number]
        ending = line[len(line.rstrip("\r\n")) :]  # its own: "\n", "\r\n" or a lone "\r"
        if number == start - 1 and keep_pass:
            lines[number] = f"{line[: len(line) - len(line.lstrip())]}pass{ending}"
        else:
            lines[number] = ending
