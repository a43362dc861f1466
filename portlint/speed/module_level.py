"""The module-level code of a file as a cut (:mod:`portlint.speed.cut`) sees it: the names its
imports define, the text outside the units, and the statements that nothing kept can need."""

from __future__ import annotations

import ast
import itertools
import re

from portlint.speed.gate import literally, words_pattern
from portlint.speed.units import DEF, Unit, span_of


class ModuleLevel:
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


def _mentions(text: str, triggers: tuple[str, ...], aliases: re.Pattern | None) -> bool:
    return any(t in text for t in triggers) or bool(aliases and aliases.search(text))


def outside_units(lines: list[str], leaves: list[Unit], tree: ast.Module) -> str:
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
        for line in range(span_of(node)[0], span_of(node)[1] + 1)
    }
    for node in tree.body:
        if isinstance(node, imports):
            start, end = span_of(node)
            for line in range(start, end + 1):
                if line not in others:
                    inside[line - 1] = 1
    return "".join(line for line, within in zip(lines, inside, strict=True) if not within)


SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
WORD = re.compile(r"\w+")


def unneeded_statements(
    tree: ast.Module,
    lines: list[str],
    emptied: set[int],
    triggers: tuple[str, ...],
    module: ModuleLevel,
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
    spans = [span_of(node) for node in tree.body]
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
        return _defined_in(node)
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
