"""portlint's own name resolution, parent map and positions give LibCST's answers, node for node.

``NameProvider``, ``ParentProvider`` and ``PositionProvider`` replace LibCST's
``QualifiedNameProvider``, ``ParentNodeProvider`` and ``PositionProvider`` because they cost most
of a file's analysis; they are only right if every answer is the same (trivia aside: no rule asks
where a comma is). Checked on every Python file of this repository (the linter, its tests and
fixtures, the reference implementation: a seeded fifth of them in the default run, all of them
with ``-m slow``) and on cases chosen for LibCST's corners.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest
from libcst import metadata as libcst_metadata
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, ParentNodeProvider, QualifiedNameProvider

from portlint.analysis.parents import ParentProvider
from portlint.analysis.positions import PositionProvider, Positions
from portlint.analysis.scope_visit import NAMED
from portlint.analysis.scopes import NameProvider
from portlint.analysis.walk import TRIVIA_TYPES
from portlint.evidence import Entry, Evidence
from portlint.speed.cut import parse_ast, slice_source
from tests.helpers import sample

REPO = Path(__file__).resolve().parent.parent
# A further tree (vLLM's, say) to compare on; the comparison is too slow for every run.
COMPARE_TREE = os.environ.get("PORTLINT_COMPARE_TREE")
FILES = sorted(
    path
    for folder in ("portlint", "tests", "reference_impl", "bench")
    for path in (REPO / folder).rglob("*.py")
)

CORNERS = [
    # aliases, dotted imports, relative imports, from-imports of submodules
    "import torch as t\nimport torch.cuda\nfrom torch import cuda as c, device\n"
    "from . import utils\nfrom .. import x as y\n"
    "t.cuda.synchronize(); torch.cuda.Stream(); c.graph; device('cuda'); utils.f; y.z\n",
    # a local that shadows an import, before and after the access
    "import torch\ndef f(torch):\n    return torch.cuda\ndef g():\n    torch.cuda.synchronize()\n"
    "    torch = None\n",
    # class scopes are invisible to methods; the first iterable is evaluated outside
    "import torch\nclass A:\n    torch = 1\n    def m(self):\n        return torch.device\n"
    "    xs = [torch for torch in range(3)]\n    ys = [x for x in torch]\n",
    # global and nonlocal
    "def f():\n    global torch\n    import torch\ndef g():\n    s = 1\n    def h():\n"
    "        nonlocal s\n        s = torch.cuda\n",
    # walrus, with, except, for, del, lambda, decorators, defaults, annotations, star targets
    "import torch as tt\n@tt.compile\ndef f(x: tt.Tensor = tt.zeros(1), *a, **k) -> tt.Tensor:\n"
    "    with tt.cuda.stream(s) as (a, b):\n        pass\n    try:\n        pass\n"
    "    except tt.OutOfMemoryError as e:\n        del e\n    for i, *j in tt.arange(3):\n"
    "        (n := tt.cuda)\n    return lambda q=tt.int64: q + tt.x\n",
    # chains through calls and subscripts; builtins and unbound names
    "import torch\ntorch.cuda.current_stream().synchronize()\ntorch.x[0].y\nlen(x)\n"
    "'a'.join([])\n(a + b).c\nunbound.attr\n",
    # comprehensions of every kind, nested
    "import torch as t\n{k: t.v for k in t.ks if t.ok(k)}\n{t.s for _ in t.r}\n"
    "(t.g for a in t.b for c in a)\n[[t.m for m in n] for n in t.ns]\n",
    # PEP 695: type parameters and aliases have a scope of their own; a class's names are seen
    # from its methods' type parameters, not from the methods' bodies
    "import torch as T\nfrom torch import Tensor as X\ntype Alias[X: T.Tensor] = list[X]\n"
    "def f[T, *Ts, **P](x: T, y: X) -> T:\n    return T.cuda\n"
    "class C[T](T.Base):\n    X = int\n    def m[U: X](self, u: U) -> X:\n        return X\n"
    "    type Inner = X\n",
]


def _answers(module: cst.Module) -> list[tuple[str, str, set, set]]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(QualifiedNameProvider)
    ours = wrapper.resolve(NameProvider)
    differences = []
    for node, value in expected.items():
        if not isinstance(node, NAMED):
            continue
        want = set(value() if callable(value) else value)
        names = ours.get(node)
        got = names.qualified(node) if names is not None else set()
        if want != got:
            code = cst.Module([]).code_for_node(node)
            differences.append((type(node).__name__, code, want, got))
    return differences


def _parents_differ(module: cst.Module) -> bool:
    """Parents differ, for the nodes that are not trivia (which portlint leaves out)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = {
        node: parent
        for node, parent in wrapper.resolve(ParentNodeProvider).items()
        if type(node) not in TRIVIA_TYPES
    }
    return expected != dict(wrapper.resolve(ParentProvider))


def _positions_differ(
    module: cst.Module,
    source: str | None = None,
    statements: list[ast.stmt] | None = None,
    fallback_expected: bool = False,
    lines: list[int] | None = None,
) -> bool:
    """Positions differ, for the nodes that are not trivia (which portlint leaves out): those
    of the whole module at once, and, given the ``source`` it was parsed from (and, where it is
    a cut, its ``statements`` and the ``lines`` of the file its lines are), those computed anchor
    by anchor as each node is asked about (from the end of the file back), which are the file's:
    LibCST's in the cut, moved to the lines they are in the file."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected, whole = (
        {node: at for node, at in positions.items() if type(node) not in TRIVIA_TYPES}
        for positions in (
            wrapper.resolve(libcst_metadata.PositionProvider),
            wrapper.resolve(PositionProvider),
        )
    )
    if expected != whole:
        return True
    if source is None:
        return False
    if statements is None:
        statements = ast.parse(source).body
    lazy = Positions(module, wrapper.resolve(ParentProvider), source, statements, lines)
    if lines is not None:
        expected = {n: _in_file(at, lines) for n, at in expected.items() if n is not module}
    if any(lazy[node] != at for node, at in reversed(expected.items()) if node is not module):
        return True
    return lazy._whole and not fallback_expected  # a real file is made anchor by anchor


def _in_file(at: CodeRange, lines: list[int]) -> CodeRange:
    return CodeRange(
        CodePosition(lines[at.start.line - 1], at.start.column),
        CodePosition(lines[at.end.line - 1], at.end.column),
    )


def test_positions_are_computed_only_for_the_statement_asked_about() -> None:
    source = (
        "import torch\n\n\n@torch.compile\ndef f():\n    return torch.zeros(1)\n\n\n"
        "class A:\n    # a comment\n    x = 1; y = 2\n\n    def m(self):\n"
        "        if self:\n            # a comment\n            return 'cuda'\n"
    )
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    lazy = Positions(module, wrapper.resolve(ParentProvider), source, ast.parse(source).body)
    method = module.body[2].body.body[1]
    inner = method.body.body[0].body.body[0]  # `return 'cuda'`, in the `if`, in the method
    string = inner.body[0].value
    assert (lazy[string].start.line, lazy[string].start.column) == (16, 19)
    assert set(lazy._computed) <= _nodes_under(inner)  # only that statement was generated
    zeros = module.body[1].body.body[0].body[0].value
    assert (lazy[zeros].start.line, lazy[zeros].start.column) == (6, 11)
    assert not lazy._whole
    assert not _positions_differ(module, source)
    assert lazy[module].start.line == 1 and lazy._whole  # the module itself: all of it


def _nodes_under(node: cst.CSTNode) -> set[cst.CSTNode]:
    found, pending = set(), [node]
    while pending:
        found.add(current := pending.pop())
        pending.extend(current.children)
    return found


@pytest.mark.parametrize(
    "source",
    [
        "@(\n    d)\ndef f():\n    return 1\n",  # a decorator's first line is not its `@`'s
        "x = 1\n\f\ndef f():\n    return 'cuda'\n",  # a form feed
        "if True:\n    x = (\n1)\nclass A: y = 2\n",
    ],
)
def test_lazy_positions_where_the_parses_do_not_line_up_simply(source: str) -> None:
    assert not _positions_differ(cst.parse_module(source), source, fallback_expected=True)


@pytest.mark.parametrize("source", CORNERS)
def test_names_match_libcst_on_corner_cases(source: str) -> None:
    module = cst.parse_module(source)
    assert _answers(module) == []
    assert not _parents_differ(module)
    if parse_ast(source) is not None:  # (PEP 695 syntax: Python 3.12 and later)
        assert not _positions_differ(module, source, fallback_expected=True)


def parsed(files: list[Path]) -> Iterator[tuple[Path, str, cst.Module]]:
    """Each file that LibCST parses (fixtures of syntax errors are left out), with its text and
    module."""
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
            yield path, source, cst.parse_module(source)
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue


CUT_WIDE = (
    Entry("", "any-cuda", ("cuda",), guardable=True),
    Entry("", "launches", ("triton.jit",), evidence=(Evidence("."),), at_launches=True),
)


def _differences(files: list[Path]) -> dict[str, object]:
    differences = {}
    for path, source, module in parsed(files):
        found = _answers(module)
        if found or _parents_differ(module) or _positions_differ(module, source):
            differences[str(path)] = found[:3] or "parents or positions"
        tree = parse_ast(source)
        # Cut wide: every unit that mentions "cuda" with its callers, and the launches of
        # kernels, which are cut down to their headers.
        cut = tree and slice_source(source, tree, CUT_WIDE)
        if (
            cut
            and cut.text
            and _positions_differ(
                cst.parse_module(cut.text), cut.text, cut.statements, lines=cut.lines
            )
        ):
            differences[str(path)] = "positions in the cut file"
    return differences


def test_names_parents_and_positions_match_libcst_on_a_sample_of_the_repository() -> None:
    assert len(FILES) > 50
    assert _differences(sample(FILES, 0.2)) == {}


@pytest.mark.slow
@pytest.mark.parametrize("part", [0, 1])  # (two halves, for the test workers)
def test_names_parents_and_positions_match_libcst_on_every_file_of_the_repository(part) -> None:
    assert _differences(FILES[part::2]) == {}


@pytest.mark.skipif(not COMPARE_TREE, reason="PORTLINT_COMPARE_TREE names no tree to compare on")
def test_names_parents_and_positions_match_libcst_on_a_given_tree() -> None:
    """``PORTLINT_COMPARE_TREE=$(bash ../shared/corpus/fetch_vllm.sh) pytest tests/test_names.py``
    (about ten minutes for vLLM: LibCST's own providers are the slow side)."""
    assert _differences(sorted(Path(COMPARE_TREE).rglob("*.py"))) == {}


def test_known_answers() -> None:
    """The answers themselves, stated: an alias, a shadowing parameter, a builtin, a chain."""
    module = cst.parse_module(
        "import torch as t\nt.cuda.synchronize()\ndef f(t):\n    t.cuda\nlen\nt.x().y\n"
    )
    names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(NameProvider)
    by_code = {
        cst.Module([]).code_for_node(node): {q.name for q in value.qualified(node)}
        for node, value in names.items()
        if isinstance(node, (cst.Attribute, cst.Name))
    }
    assert by_code["t.cuda.synchronize"] == {"torch.cuda.synchronize"}
    assert by_code["t.cuda"] == {"f.<locals>.t.cuda"}  # the parameter, not the import
    assert by_code["len"] == {"builtins.len"}
    assert by_code["t.x().y"] == {"torch.x.y"}


def test_the_names_imports_bind_to_what_a_fragment_is_part_of() -> None:
    """Anywhere in the module, before or after their use: what lets the CUDA references skip
    resolving the names that cannot be under ``torch.cuda``."""
    module = cst.parse_module(
        "import torch\nimport torch.cuda as tc\nfrom torch import cuda as c, nn\n"
        "def f():\n    from torch.cuda import nvtx\n    return later.x\n"
        "from torch.cuda.memory import empty_cache as later\nimport os\n"
    )
    names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(NameProvider)
    (found,) = {id(n): n for n in names.values()}.values()
    assert found.names_imported_from("cuda") == {"tc", "c", "nvtx", "later"}
