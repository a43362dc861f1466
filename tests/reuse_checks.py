"""What the editor's reuse (portlint.speed.reuse, portlint.bounds.Known) must keep: the tree and
the verdict of a text are those of a parse of it from nothing, whatever was parsed before.
Checked by tests/test_reuse.py on the repository's files and by scripts/check_reuse.py on
whole releases."""

from __future__ import annotations

import ast
import functools
import warnings

import libcst as cst

from portlint.bounds import Known, python_verdict
from portlint.findings import split_lines
from portlint.registry import all_rules
from portlint.speed.cut import NOTHING, slice_source
from portlint.speed.reuse import Parts

SETTINGS = ("default_indent", "default_newline", "has_trailing_newline", "encoding")


def same_tree(left: cst.Module, right: cst.Module) -> bool:
    """Node for node, with the module's settings (which decide how new code is written)."""
    return (
        left.deep_equals(right)
        and left.code == right.code
        and all(getattr(left, name) == getattr(right, name) for name in SETTINGS)
    )


def typed(source: str) -> str:
    """``source`` with a comment line typed before its middle line, indented as that line."""
    lines = split_lines(source)
    middle = len(lines) // 2
    line = lines[middle] if lines else ""
    indent = line[: len(line) - len(line.lstrip())] if line.strip() else ""
    return "".join([*lines[:middle], f"{indent}# typed\n", *lines[middle:]])


def _ast(source: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


@functools.cache  # (each file's test and the repository-wide count ask for the same text)
def differences(source: str) -> tuple[list[str], bool]:
    """How parsing ``source`` in parts differs from parsing it whole: its text and its cut (every
    rule's), each parsed in parts from nothing (each statement a part where it can be), and the text with a line typed into it, parsed
    after the text (its parts reused), with Python's verdict on it likewise. Returns what
    differs, and whether any text was parsed in parts at all."""
    tree = _ast(source)
    if tree is None:
        return [], False
    texts = [("file", source, tree.body, None)]
    cut = slice_source(source, tree, [rule.entry() for rule in all_rules().values()])
    if cut is not None and cut is not NOTHING:
        texts.append(("cut", cut.text, cut.statements, cut.lines))
    found, in_parts = [], False
    for name, text, statements, lines in texts:
        try:
            whole = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        parts = Parts(min_lines=1)  # (every statement a part where it can be)
        if not same_tree(whole, parts.parse(cst.parse_module, text, statements, lines)):
            found.append(name)
        in_parts |= parts.in_parts
    edited = typed(source)
    edited_tree = _ast(edited)
    if edited_tree is None:
        return found, in_parts
    parts = Parts()
    try:
        parts.parse(cst.parse_module, source, tree.body, None)
        whole = cst.parse_module(edited)
    except cst.ParserSyntaxError:  # (LibCST refuses the text: the lint parses it trimmed)
        return found, in_parts
    if not same_tree(whole, parts.parse(cst.parse_module, edited, edited_tree.body, None)):
        found.append("typed into")
    found += verdict_differences([source, edited])
    return found, in_parts


def verdict_differences(texts: list[str], path: str = "m.py") -> list[str]:
    """Where Python's verdict on each of ``texts`` in turn, with what the verdicts before it
    found (:class:`~portlint.bounds.Known`), differs from the verdict on it alone."""
    known = Known()
    found = []
    for number, text in enumerate(texts):
        alone, reusing = python_verdict(path, text), python_verdict(path, text, known)
        if isinstance(alone, ast.Module):
            if not isinstance(reusing, ast.Module):
                found.append(f"verdict on text {number}: {reusing.message}, alone none")
        elif reusing != alone:
            found.append(f"verdict on text {number}: {reusing}, alone {alone}")
    return found
