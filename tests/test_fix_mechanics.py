"""How fixes are made and applied: edits at the positions of the nodes they change (the same as a
regeneration of the module would give), imports that follow the module's own, rounds that cost a
lint and a parse each, and as many fixes applied as the check listed."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
from pathlib import Path

import libcst as cst
import libcst.matchers as m
import pytest

from portlint import fix, fix_rounds, visit
from portlint.analysis.parents import ParentProvider
from portlint.analysis.positions import PositionProvider
from portlint.catalog import CATALOG
from portlint.engine import lint_source
from portlint.findings import UNSAFE, Edit, Fix, Violation, line_edits
from portlint.fix_rounds import fix_source
from portlint.registry import all_rules
from portlint.settings import Settings
from tests.helpers import REPO, run_cli

EVERY_RULE = Settings(select=frozenset(CATALOG), partial_parse=False)
FILES = sorted(
    [*(REPO / "tests" / "fixtures").glob("*.py"), *(REPO / "tests" / "seeds").glob("*.py")]
)


class _Regenerated(cst.CSTTransformer):
    """The module rewritten and generated again whole: how fixes were made before (the oracle)."""

    def __init__(self, rewrite: fix.Rewrite) -> None:
        super().__init__()
        self.rewrite = rewrite

    def on_leave(self, original_node, updated_node):
        updated = super().on_leave(original_node, updated_node)
        return self.rewrite.replace.get(id(original_node), updated)

    def _body(self, original, updated):
        body, wrapping = [], None
        first, last, item = self.rewrite.wrap or (None, None, None)
        for old, new in zip(original, updated, strict=True):
            body.extend(self.rewrite.insert_before.get(id(old), []))
            if id(old) == first:
                wrapping = []
            if wrapping is None:
                body.append(new)
                continue
            wrapping.append(new)
            if id(old) == last:
                with_ = cst.With(items=[cst.WithItem(item)], body=cst.IndentedBlock(wrapping))
                body.append(with_)
                wrapping = None
        return body

    def leave_IndentedBlock(self, original_node, updated_node):
        return updated_node.with_changes(body=self._body(original_node.body, updated_node.body))

    def leave_Module(self, original_node, updated_node):
        return updated_node.with_changes(body=self._body(original_node.body, updated_node.body))


def _sources() -> list[tuple[str, str]]:
    cases = [(file.name, file.read_text()) for file in FILES]
    for code, rule in all_rules().items():
        cases += [(f"{code}-{i}", case.source) for i, case in enumerate(rule.INVALID)]
    return cases


def test_edits_made_at_the_nodes_are_those_of_a_regenerated_module(monkeypatch):
    """Every fix of the fixtures, the seeds and the rules' cases (imports aside: they have their
    own tests below), made at its nodes' positions, against the whole module rewritten."""
    made = fix.FixMaker.fix
    compared = kinds = 0
    shapes: set[str] = set()

    def checked(maker: fix.FixMaker, pending: fix.PendingFix) -> Fix | None:
        nonlocal compared
        rewrite = dataclasses.replace(pending.rewrite, imports=set())
        module = maker.module
        expected = line_edits(module.code, module.visit(_Regenerated(rewrite)).code)
        got = made(maker, dataclasses.replace(pending, rewrite=rewrite))
        assert (got.edits if got else ()) == expected
        compared += 1
        shapes.update(name for name in ("replace", "insert_before") if getattr(rewrite, name))
        shapes.update(["wrap"] if rewrite.wrap else [])
        return made(maker, pending)

    monkeypatch.setattr(fix.FixMaker, "fix", checked)
    for name, source in _sources():
        lint_source(name, source, EVERY_RULE)
    kinds = len(shapes)
    assert compared >= 100 and kinds == 3  # (every shape of rewrite, many times)


def _maker(source: str) -> fix.FixMaker:
    module = cst.parse_module(source)
    tree = ast.parse(source)
    wrapper = visit._Wrapper(module, source, tree.body, None)
    parents, positions = wrapper.resolve(ParentProvider), wrapper.resolve(PositionProvider)
    return fix.FixMaker(module, parents, positions, source, tree)


def _rewrite(module: cst.Module, shape: str) -> fix.Rewrite:
    """A rewrite of ``shape`` for the module of HANDMADE (by the nodes it finds there)."""
    (call,) = [c for c in m.findall(module, m.Call(func=m.Name("make")))]
    (arg,) = m.findall(module, m.Arg(keyword=m.Name("device")))
    (line,) = m.findall(module, m.SimpleStatementLine(body=[m.Expr(m.Call(func=m.Name("log")))]))
    (decorated,) = m.findall(module, m.FunctionDef(name=m.Name("step")))
    first, *_, last = [s for s in module.body if m.matches(s, m.SimpleStatementLine())][1:4]
    new = cst.parse_statement("import os  # new\n")
    return {
        "parenthesized": fix.Rewrite(replace={id(call): cst.parse_expression("made(\n  1)")}),
        "indented call": fix.Rewrite(replace={id(call): call.with_changes(func=cst.Name("mk"))}),
        "argument": fix.Rewrite(replace={id(arg): cst.Arg(cst.Name("d"), cst.Name("device"))}),
        "statement and before it": fix.Rewrite(
            replace={id(line): cst.parse_statement("log(2)\n")}, insert_before={id(line): [new]}
        ),
        "before a decorated function": fix.Rewrite(insert_before={id(decorated): [new]}),
        "wrap at module level": fix.Rewrite(
            wrap=(id(first), id(last), cst.parse_expression("stream(s)")),
            insert_before={id(first): [new]},
        ),
    }[shape]


HANDMADE = """import torch
a = 1
# a comment in the run
b = 2
c = 3


def f():
    if a:
        y = (make(
            3,
            device="cuda",
        ))
        log(1)


# leading


@decorator
# between
def step():
    pass
"""


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize(
    "shape",
    ["parenthesized", "indented call", "argument", "statement and before it",
     "before a decorated function", "wrap at module level"],
)  # fmt: skip
def test_rewrites_of_every_shape_are_made_as_a_regenerated_module_would_be(shape, newline):
    source = HANDMADE.replace("\n", newline)
    maker = _maker(source)
    rewrite = _rewrite(maker.module, shape)
    expected = line_edits(source, maker.module.visit(_Regenerated(rewrite)).code)
    made = maker.fix(fix.PendingFix(UNSAFE, "m", (), rewrite))
    assert made is not None and made.edits == expected


def test_fixes_are_made_the_same_in_a_cut_of_the_file_and_in_the_whole_file():
    cut = dataclasses.replace(EVERY_RULE, partial_parse=True)
    fixes = 0
    for name, source in _sources():
        whole = lint_source(name, source, EVERY_RULE)
        assert lint_source(name, source, cut) == whole, name
        fixes += sum(1 for v in whole if v.fix and v.fix.edits)
    assert fixes >= 100


def test_no_module_is_generated_to_make_the_fixes(monkeypatch):
    generated = []
    codegen = cst.Module._codegen_impl
    monkeypatch.setattr(
        cst.Module,
        "_codegen_impl",
        lambda self, state: generated.append(self) or codegen(self, state),
    )
    source = (REPO / "tests" / "fixtures" / "capture_shapes.py").read_text()
    found = lint_source("capture_shapes.py", source, EVERY_RULE)
    assert sum(1 for v in found if v.fix and v.fix.edits) >= 5
    assert generated == []


def test_a_fix_is_made_only_for_a_finding_that_is_reported(monkeypatch):
    """A finding that a guard silences gets no edits made (they cost the rewrite)."""
    made = []
    monkeypatch.setattr(fix.FixMaker, "fix", lambda maker, pending: made.append(pending))
    source = "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"
    assert lint_source("m.py", source, EVERY_RULE) == [] and made == []


# Fix rounds: a lint and a parse each, whatever the number of findings.

MANY = 400


def _count_calls(monkeypatch, module, name: str) -> list:
    calls: list = []
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(a) or original(*a, **k))
    return calls


def test_a_file_of_400_findings_is_fixed_in_one_round_of_one_lint_and_one_parse(monkeypatch):
    """Every fix needs `import torch` (the module has none): they share it."""
    source = "import numpy\n\n" + "".join(f"x{i} = t.cuda()\n" for i in range(MANY))
    lints = _count_calls(monkeypatch, fix_rounds, "lint_source")
    parses = _count_calls(monkeypatch, visit, "parses")
    result = fix_source("m.py", source, EVERY_RULE, unsafe=True)
    assert result.applied == {"PORT102": MANY}
    now = "torch.accelerator.current_accelerator()"
    assert result.source == "import torch\nimport numpy\n\n" + "".join(
        f"x{i} = t.to({now})\n" for i in range(MANY)
    )
    # The round that applies them, then the lint that finds nothing left to fix.
    assert (len(lints), len(parses), result.violations) == (2, 1, [])


def test_fixes_of_one_line_wait_for_the_next_round():
    """The second fix of each line waits for the first (which moves the lines: an import)."""
    source = "from torch import zeros\n" + "y = zeros(3, device='cuda').cuda()\n" * 3
    result = fix_source("m.py", source, EVERY_RULE, unsafe=True)
    now = "torch.accelerator.current_accelerator()"
    expected = f"y = zeros(3, device={now}).to({now})\n" * 3
    assert result.source == "import torch\nfrom torch import zeros\n" + expected
    assert result.applied == {"PORT101": 3, "PORT102": 3}


def test_a_finding_inside_the_code_of_another_fix_waits_and_is_fixed_and_counted():
    """PORT101's fix keeps the device's index (the PORT401 call), which is fixed the round
    after: both as listed."""
    source = "import torch\nd = torch.device('cuda', torch.cuda.current_device())\n"
    result = fix_source("m.py", source, EVERY_RULE, unsafe=True)
    kind = 'getattr(torch.accelerator.current_accelerator(), "type", "cpu")'
    assert result.source == (
        f"import torch\nd = torch.device({kind}, torch.accelerator.current_device_index())\n"
    )
    assert (result.applied, result.violations) == ({"PORT101": 1, "PORT401": 1}, [])


def test_fixes_that_break_the_parse_are_found_by_halves(monkeypatch):
    lines = "".join(f"x{i} = 1\n" for i in range(8))
    findings = [
        Violation(
            "m.py", i + 1, 1, "PORT101", "m", fix=Fix(UNSAFE, "f", (Edit(i + 1, 1, i + 2, 1, new),))
        )
        for i, new in enumerate(f"x{i} = 2\n" if i != 5 else "x5 = (\n" for i in range(8))
    ]
    monkeypatch.setattr(
        fix_rounds,
        "lint_source",
        lambda path, text, settings, **_: findings if text == lines else [],
    )
    parses = _count_calls(monkeypatch, visit, "parses")
    result = fix_source("m.py", lines, Settings(), unsafe=True)
    assert result.source == lines.replace("= 1", "= 2").replace("x5 = 2", "x5 = 1")
    assert result.dropped == ["m.py:6: PORT101: the fixed code would not parse"]
    assert len(parses) <= 1 + 2 * 3  # all; then a half and its halves, down to the one


def test_a_finding_that_a_fix_brings_is_reported_not_fixed():
    """`--fix` applies the fixes the lint listed: here the `import torch` of the first fix makes
    `torch.device` resolve, and its finding is left for the next run."""
    source = "y = x.cuda()\nd = torch.device('cuda')\n"
    result = fix_source("m.py", source, EVERY_RULE, unsafe=True)
    assert result.applied == {"PORT102": 1}
    assert [(v.code, v.line, v.fix is not None) for v in result.violations] == [
        ("PORT101", 3, True)
    ]


# Imports: the module's binding in scope, else where the module imports the library.


def _fixed(tmp_path: Path, source: str, *args: str) -> str:
    (tmp_path / "m.py").write_text(source)
    result = run_cli("check", "m.py", "--fix", "--no-cache", *args, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    return (tmp_path / "m.py").read_text()


TRY_IMPORT = '''"""Environment report (as vLLM's collect_env.py: torch is optional)."""
import os

try:
    import torch

    TORCH_AVAILABLE = True
except (ImportError, NameError, AttributeError, OSError):
    TORCH_AVAILABLE = False


def report():
    if not TORCH_AVAILABLE:
        return os.name
    return str(torch.cuda.device_count())
'''


def test_an_optional_import_stays_optional(tmp_path):
    fixed = _fixed(tmp_path, TRY_IMPORT, "--unsafe-fixes")
    assert fixed == TRY_IMPORT.replace(
        "torch.cuda.device_count()", "torch.accelerator.device_count()"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "import torch as th\n\n\ndef f():\n    return th.cuda.device_count()\n",
            "import torch as th\n\n\ndef f():\n    return th.accelerator.device_count()\n",
            id="the module's alias",
        ),
        pytest.param(
            "def f():\n    import torch\n\n    return torch.cuda.device_count()\n",
            "def f():\n    import torch\n\n    return torch.accelerator.device_count()\n",
            id="a function's own import",
        ),
        pytest.param(
            "import torch\n\n\ndef f():\n    import torch as t\n    return t.cuda.device_count()\n",
            "import torch\n\n\ndef f():\n    import torch as t\n    return t.accelerator.device_count()\n",
            id="the innermost binding",
        ),
        pytest.param(
            "try:\n    from torch import nn\nexcept ImportError:\n    nn = None\n\n\n"
            "def f(x):\n    return x.cuda()\n",
            "try:\n    import torch\n    from torch import nn\nexcept ImportError:\n    nn = None\n\n\n"
            "def f(x):\n    return x.to(torch.accelerator.current_accelerator())\n",
            id="inside the try that imports it",
        ),
        pytest.param(
            "try: from torch import nn\nexcept ImportError: nn = None\nn = x.cuda()\n",
            "try: import torch; from torch import nn\nexcept ImportError: nn = None\n"
            "n = x.to(torch.accelerator.current_accelerator())\n",
            id="a try on one line",
        ),
        pytest.param(
            "def f(x):\n    from torch import nn\n\n    return x.cuda()\n",
            "def f(x):\n    import torch\n    from torch import nn\n\n"
            "    return x.to(torch.accelerator.current_accelerator())\n",
            id="inside the function that imports it",
        ),
        pytest.param(
            'def load():\n    import torch\n\n\ndef f(x):\n    """Doc."""\n    return x.cuda()\n',
            'def load():\n    import torch\n\n\ndef f(x):\n    """Doc."""\n    import torch\n'
            "    return x.to(torch.accelerator.current_accelerator())\n",
            id="a lazy import stays lazy",
        ),
        pytest.param(
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n\n\n"
            "def f(x):\n    return x.cuda()\n",
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import torch\n\n\n"
            "def f(x):\n    import torch\n    return x.to(torch.accelerator.current_accelerator())\n",
            id="a TYPE_CHECKING import binds nothing",
        ),
        pytest.param(
            '"""Doc."""\nfrom __future__ import annotations\n\nimport os\nfrom torch import nn\n'
            "n = x.cuda()\n",
            '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\nimport os\nfrom torch import nn\n'
            "n = x.to(torch.accelerator.current_accelerator())\n",
            id="a mandatory import: at the top",
        ),
    ],
)
def test_imports_follow_the_modules_own(tmp_path, source, expected):
    assert _fixed(tmp_path, source, "--unsafe-fixes") == expected


# The count of fixes: what the check listed is what --fix applies.


def _fixable(output: str) -> int:
    match = re.search(r"^\[\*\] (\d+) fixable with `--fix`", output, re.MULTILINE)
    return int(match.group(1)) if match else 0


@pytest.mark.parametrize("unsafe", [[], ["--unsafe-fixes"]], ids=["safe", "unsafe"])
def test_fix_applies_as_many_fixes_as_the_check_listed_on_the_seeds(tmp_path, unsafe):
    shutil.copytree(REPO / "tests" / "seeds", tmp_path / "seeds")
    listed = run_cli("check", "seeds", "--no-cache", *unsafe, cwd=tmp_path)
    fixed = run_cli("check", "seeds", "--no-cache", "--fix", "--show-fixes", *unsafe, cwd=tmp_path)
    applied = re.search(r"^Fixed (\d+) errors?:", fixed.stdout, re.MULTILINE)
    count = int(applied.group(1)) if applied else 0
    assert count == _fixable(listed.stdout) == (4 if unsafe else 0)
    if count:
        assert f"({count} fixed, " in fixed.stdout


# The summary: what `--fix` with the same options would do, in ruff's words.

SAFE_AND_UNSAFE = "import torch\ntorch.cuda.synchronize()\nd = torch.device('cuda')\n"


@pytest.mark.parametrize(
    ("source", "options", "marked", "last"),
    [
        (SAFE_AND_UNSAFE, [], ["PORT401"],
         "[*] 1 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."),
        (SAFE_AND_UNSAFE, ["--unsafe-fixes"], ["PORT101", "PORT401"], "[*] 2 fixable with `--fix`."),
        ("import torch\nd = torch.device('cuda')\n", [], [],
         "1 unsafe fix available with `--fix --unsafe-fixes`."),
    ],
)  # fmt: skip
def test_the_summary_counts_the_fixes_fix_applies_with_the_same_options(
    tmp_path, source, options, marked, last
):
    (tmp_path / "m.py").write_text(source)
    lines = run_cli("check", "m.py", "--no-cache", *options, cwd=tmp_path).stdout.splitlines()
    assert lines[-1] == last and all("fixable" not in line for line in lines[:-1])
    assert sorted(line.split()[1] for line in lines if " [*] " in line) == marked
    fixed = run_cli("check", "m.py", "--no-cache", "--fix", *options, cwd=tmp_path).stdout
    assert f"({len(marked)} fixed, " in fixed if marked else "fixed" not in fixed


@pytest.mark.parametrize(("count", "baseline", "hint"), [(100, False, True), (99, False, False),
                                                         (100, True, False)])  # fmt: skip
def test_many_findings_without_a_baseline_point_to_write_baseline(tmp_path, count, baseline, hint):
    (tmp_path / "m.py").write_text("import torch\n" + "torch.cuda.synchronize()\n" * count)
    (tmp_path / "clean.py").write_text("x = 1\n")
    run_cli("check", "clean.py", "--no-cache", "--write-baseline", "empty.json", cwd=tmp_path)
    with_baseline = ["--baseline", "empty.json"] if baseline else []  # (every finding new)
    result = run_cli("check", "m.py", "--no-cache", *with_baseline, cwd=tmp_path)
    assert result.stdout.startswith("m.py:2:1: PORT401 [*] ")
    assert ("`--write-baseline FILE`" in result.stdout.splitlines()[-1]) == hint


def test_statistics_in_json_are_ruffs_counts(tmp_path):
    (tmp_path / "m.py").write_text(SAFE_AND_UNSAFE + "x = y.cuda()\n")
    args = ["check", "m.py", "--no-cache", "--statistics", "--output-format", "json"]
    safe = json.loads(run_cli(*args, cwd=tmp_path).stdout)
    assert safe == [
        {"code": code, "name": CATALOG[code].name, "count": 1, "fixable": fixable,
         "fixable_count": int(fixable)}
        for code, fixable in [("PORT101", False), ("PORT102", False), ("PORT401", True)]
    ]  # fmt: skip
    unsafe = json.loads(run_cli(*args, "--unsafe-fixes", cwd=tmp_path).stdout)
    assert [(item["code"], item["fixable_count"]) for item in unsafe] == [
        ("PORT101", 1),
        ("PORT102", 1),
        ("PORT401", 1),
    ]
    text = run_cli("check", "m.py", "--no-cache", "--statistics", cwd=tmp_path).stdout
    assert [line.split()[2] for line in text.splitlines()[:3]] == ["[", "[", "[*]"]
    assert text.splitlines()[3:] == [
        "Found 3 errors.",
        "[*] 1 fixable with `--fix` (2 unsafe fixes available with `--fix --unsafe-fixes`).",
    ]


def test_statistics_in_a_format_that_cannot_show_counts_is_an_error(tmp_path):
    (tmp_path / "m.py").write_text(SAFE_AND_UNSAFE)
    result = run_cli("check", "m.py", "--statistics", "--output-format", "sarif", cwd=tmp_path)
    assert result.returncode == 2
    assert "--statistics works with the output formats concise, text, full, json" in result.stderr
