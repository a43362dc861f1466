"""The editor's reuse: a text parsed in parts, those of the last version reused, is parsed
exactly as from nothing (LibCST's tree node for node, Python's verdict), and only what changed
is parsed, walked and compiled again."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from portlint.bounds import Known, python_verdict
from portlint.engine import lint_source
from portlint.registry import all_rules
from portlint.settings import Settings
from portlint.speed.reuse import MIN_LINES, Parts
from tests.helpers import OWN_CODE, REPO
from tests.reuse_checks import differences, same_tree, verdict_differences


@pytest.mark.parametrize("path", OWN_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_parsing_in_parts_gives_the_whole_parse_and_verdict(path):
    found, _ = differences(path.read_text())
    assert found == []


def test_most_of_the_repository_is_parsed_in_parts():
    parted = [differences(path.read_text())[1] for path in OWN_CODE]
    assert sum(parted) > 0.8 * len(parted)


def _class_of(methods: int) -> str:
    """A module of a class of ``methods`` methods, each long enough to be a part of its own."""
    steps = "".join(f"        x = x + {i}\n" for i in range(MIN_LINES))
    body = "".join(
        f"\n    def m{i}(self, x):\n        # step {i}\n{steps}"
        "        return torch.zeros(x, device='cuda')\n"
        for i in range(methods)
    )
    return f"import torch\n\n\nclass Runner:\n    '''A runner.'''\n{body}"


def test_typing_into_one_method_parses_that_method_again_and_finds_the_same():
    source = _class_of(20)
    settings = Settings(select=frozenset(all_rules()))
    parts = Parts()
    before = lint_source("m.py", source, settings, fix_edits=False, parts=parts)
    # the import; the class with its docstring and first method; each of the 19 others
    assert parts.in_parts and parts.parsed == 21
    edited = source.replace("        # step 7\n", "        # step 7\n        x = x + 1\n")
    after = lint_source("m.py", edited, settings, fix_edits=False, parts=parts)
    assert parts.in_parts and parts.parsed == 1
    assert parts.known.fresh == 1  # Python's verdict walked and compiled that method only
    assert after == lint_source("m.py", edited, settings, fix_edits=False)
    typed_at = source.splitlines().index("        # step 7") + 1
    moved = [(v.code, v.line + 1 if v.line > typed_at else v.line, v.col) for v in before]
    assert [(v.code, v.line, v.col) for v in after] == moved and len(after) == 20


def test_a_comment_indented_deeper_than_the_next_statement_keeps_both_in_one_part():
    # (LibCST gives `# end of f` to the block of `f`, `# about y` to `y`)
    source = (
        "def f():\n    pass\n    # end of f\n\n# about y\ny = 2\n\nz = 3; w = 4\n\n"
        "# about v\nv = 5\n"
    )
    parts = Parts(min_lines=1)  # (every statement a part where it can be)
    module = parts.parse(cst.parse_module, source, ast.parse(source).body, None)
    assert same_tree(module, cst.parse_module(source))
    assert parts.in_parts and parts.parsed == 3  # `f` and `y` together; `z; w`; `v`


@pytest.mark.parametrize(
    "good, bad, error",
    [
        # a statement Python's compiler refuses, typed into a class (its own part)
        (_class_of(3), _class_of(3) + "    return 1\n", "'return' outside function"),
        # a future feature typed at the top: a part that compiled may not compile with it
        (
            '"""Doc."""\ndef f(x: (y := 1)):\n    pass\n',
            '"""Doc."""\nfrom __future__ import annotations\ndef f(x: (y := 1)):\n    pass\n',
            "'named expression' can not be used within an annotation",
        ),
        # a future import that comes too late: a matter of the statements around it
        ("import os\nx = 1\n", "import os\nfrom __future__ import annotations\nx = 1\n",
         "from __future__ imports must occur at the beginning of the file"),
        # `global` after an assignment, each in parts of their own
        ("x = 1\n\n\ny = 2\n", "x = 1\n\n\nglobal x\n",
         "name 'x' is assigned to before global declaration"),
        ("class A:\n    x = 1\n\n    def f(self):\n        pass\n",
         "class A:\n    x = 1\n\n    global x\n\n    def f(self):\n        pass\n",
         "name 'x' is assigned to before global declaration"),
    ],
)  # fmt: skip
def test_a_compile_error_in_a_new_part_is_pythons_and_fixing_it_is_seen(good, bad, error):
    assert verdict_differences([good, bad, good, bad]) == []
    known = Known()
    python_verdict("m.py", good, known)
    found = python_verdict("m.py", bad, known)
    assert not isinstance(found, ast.Module) and found.message == f"SyntaxError: {error}"
    assert isinstance(python_verdict("m.py", good, known), ast.Module)


def test_a_part_the_text_repeats_is_a_node_of_its_own_at_each_place():
    # (found by the fuzz test: one node at two places took the positions of one of them)
    source = "import torch\n\ny = x.cuda()\n\ny = x.cuda()\n"
    settings = Settings(select=frozenset(all_rules()))
    parts = Parts()
    lint_source("m.py", source.replace("\ny = x.cuda()\n", "", 1), settings, parts=parts)
    found = lint_source("m.py", source, settings, fix_edits=False, parts=parts)
    assert [(v.code, v.line) for v in found] == [("PORT102", 3), ("PORT102", 5)]
    module = parts.parse(cst.parse_module, source, ast.parse(source).body, None)
    assert module.body[1] is not module.body[2]


VARIANTS = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "cr": lambda text: text.replace("\n", "\r"),
    "tabs": lambda text: text.replace("    ", "\t"),
    "bom": lambda text: "\ufeff" + text,
    "no final newline": lambda text: text.rstrip("\n"),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_other_newlines_indentation_and_endings_are_parsed_as_whole(variant):
    for path in OWN_CODE[::7]:
        found, _ = differences(VARIANTS[variant](path.read_text()))
        assert found == [], path


def test_a_part_that_a_bound_kept_from_the_compiler_is_compiled_once_within_it():
    # (the first verdict stops at the nesting bound, before compile() sees `return`)
    deep = "x = " + "[" * 60 + "]" * 60 + "\n\n\nreturn 1\n"
    within = "x = 1\n\n\nreturn 1\n"
    assert verdict_differences([deep, within]) == []
    known = Known()
    assert python_verdict("m.py", deep, known).message.startswith("too deeply nested")
    found = python_verdict("m.py", within, known)
    assert found.message == "SyntaxError: 'return' outside function"
