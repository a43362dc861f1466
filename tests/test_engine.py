"""The engine through its API: discovery, the text gate, parallel runs, crash containment."""

from __future__ import annotations

from pathlib import Path

import pytest

from portlint import engine
from portlint.config import Overrides, load_settings
from portlint.discovery import discover
from portlint.catalog import CATALOG, codes_with_triggers_in
from portlint.engine import lint_files, lint_source
from portlint.partial import NOTHING, parse_ast, slice_source
from portlint.settings import Settings
from tests.helpers import REPO
from portlint.registry import all_rules

BUGGY = 'import torch\nd = torch.device("cuda")\n'


def settings_for(root: Path, config: str | None = None):
    if config is not None:
        (root / "pyproject.toml").write_text(config)
        return load_settings(root / "pyproject.toml", Overrides(), root)
    return load_settings(None, Overrides(), root)


def tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def found(root: Path, settings) -> list[str]:
    files, _ = discover([root], settings)
    return sorted(p.relative_to(root).as_posix() for p in files)


def test_discovery_applies_default_excludes_and_suffixes(tmp_path):
    tree(
        tmp_path,
        {
            "a.py": "",
            "b.pyi": "",
            "notes.txt": "",
            "pkg/c.py": "",
            ".venv/lib/d.py": "",
            "venv/e.py": "",
            "build/f.py": "",
            "dist/g.py": "",
            "x/site-packages/h.py": "",
            "pkg/__pycache__/i.py": "",
            "node_modules/j.py": "",
            ".git/k.py": "",
        },
    )
    assert found(tmp_path, settings_for(tmp_path)) == ["a.py", "b.pyi", "pkg/c.py"]


def test_discovery_respects_gitignore_files(tmp_path):
    (tmp_path / ".git").mkdir()
    tree(
        tmp_path,
        {
            ".gitignore": "generated/\n*_pb2.py\n/top_only.py\n!keep_pb2.py\n",
            "src/.gitignore": "local.py\n",
            "generated/a.py": "",
            "src/msg_pb2.py": "",
            "src/keep_pb2.py": "",
            "top_only.py": "",
            "src/top_only.py": "",
            "src/local.py": "",
            "src/ok.py": "",
        },
    )
    assert found(tmp_path, settings_for(tmp_path)) == [
        "src/keep_pb2.py",
        "src/ok.py",
        "src/top_only.py",
    ]
    # The root .gitignore applies when linting a subfolder too.
    files, _ = discover([tmp_path / "src"], settings_for(tmp_path))
    assert sorted(p.name for p in files) == ["keep_pb2.py", "ok.py", "top_only.py"]


def test_gitignore_can_be_turned_off(tmp_path):
    (tmp_path / ".git").mkdir()
    tree(tmp_path, {".gitignore": "*.py\n", "a.py": ""})
    assert found(tmp_path, settings_for(tmp_path)) == []
    assert found(
        tmp_path, settings_for(tmp_path, "[tool.portlint]\nrespect-gitignore = false\n")
    ) == ["a.py"]


def test_config_exclude_replaces_defaults_and_extend_exclude_adds(tmp_path):
    tree(tmp_path, {"build/a.py": "", "gen/b.py": "", "c.py": ""})
    assert found(tmp_path, settings_for(tmp_path, '[tool.portlint]\nexclude = ["gen"]\n')) == [
        "build/a.py",
        "c.py",
    ]
    assert found(
        tmp_path, settings_for(tmp_path, '[tool.portlint]\nextend-exclude = ["gen"]\n')
    ) == ["c.py"]


def test_text_gate_skips_files_without_trigger_strings(tmp_path):
    tree(tmp_path, {"plain.py": "x = 1\n", "broken_but_plain.py": "def (:\n", "buggy.py": BUGGY})
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    result = lint_files(files, settings, jobs=1)
    assert result.files_checked == 3 and result.files_parsed == 1
    assert [(Path(v.path).name, v.code) for v in result.violations] == [("buggy.py", "PORT101")]


def test_text_gate_selects_rules_per_file():
    codes = frozenset(all_rules())
    assert codes_with_triggers_in("x.cuda()", codes) == ["PORT102"]
    assert codes_with_triggers_in("y = x.new_zeros(3)", codes) == ["PORT201"]
    assert codes_with_triggers_in("import torch", codes) == []
    assert codes_with_triggers_in('torch.device("cuda")', frozenset({"PORT102"})) == []


def test_the_catalog_and_the_rules_agree():
    """Every rule module has a catalog entry and every entry a rule, with that name."""
    assert {code: rule.name for code, rule in all_rules().items()} == {
        code: entry.name for code, entry in CATALOG.items()
    }


def test_a_run_that_parses_nothing_does_not_import_libcst(tmp_path):
    (tmp_path / "plain.py").write_text("x = 1\n")
    script = (
        "import sys; from portlint.cli import main\n"
        "try:\n    main(['check', 'plain.py'])\n"
        "except SystemExit as exit:\n    print(exit.code, 'libcst' in sys.modules)\n"
    )
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.stdout.splitlines()[-1] == "0 False"


def test_parallel_run_finds_the_same_as_a_serial_one(tmp_path):
    sources = [BUGGY, "y = x.cuda()\n", "import torch\ns = torch.arange(3)\nn = s.new_empty(3)\n"]
    tree(tmp_path, {f"m{i}.py": sources[i % 3] for i in range(60)})
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    serial = lint_files(files, settings, jobs=1)
    parallel = lint_files(files, settings, jobs=2)
    assert len(serial.violations) == 60
    assert parallel.violations == serial.violations


def test_a_crash_on_one_file_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    tree(tmp_path, {"a.py": BUGGY, "b.py": BUGGY})
    real = engine.lint_source

    def flaky(path, source, settings, **options):
        if path.endswith("a.py"):
            raise RecursionError("too deep")
        return real(path, source, settings, **options)

    monkeypatch.setattr(engine, "lint_source", flaky)
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    result = lint_files(files, settings, jobs=1)
    assert [Path(v.path).name for v in result.violations] == ["b.py"]
    assert len(result.internal_errors) == 1
    assert "a.py: internal error: RecursionError: too deep" in result.internal_errors[0]


@pytest.mark.parametrize("selector", ["PORT", "port1", "PORT10", "ALL"])
def test_prefix_selectors(tmp_path, selector):
    settings = load_settings(None, Overrides(select=[selector]), tmp_path)
    assert settings.select and all(
        code.startswith(selector.upper().replace("ALL", "PORT")) for code in settings.select
    )


PARTIAL_CORPUS = sorted(
    path
    for folder in ("tests/fixtures", "tests/seeds", "reference_impl", "portlint")
    for path in (REPO / folder).rglob("*.py")
)


@pytest.mark.parametrize("path", PARTIAL_CORPUS, ids=lambda p: str(p.relative_to(REPO)))
def test_partial_parsing_finds_exactly_what_whole_files_find(path):
    source = path.read_text()
    codes = frozenset(all_rules())
    whole = lint_source(str(path), source, Settings(select=codes, partial_parse=False),
                        fix_edits=False)  # fmt: skip
    partial = lint_source(str(path), source, Settings(select=codes), fix_edits=False)
    assert partial == whole


def test_partial_parsing_keeps_callers_positions_and_drops_the_rest():
    body = "".join(f"    x = x + {i}\n" for i in range(12))
    source = (
        "import torch\n\n\ndef unrelated(x):\n" + body + "    return x\n\n\n"
        "class Runner:\n"
        "    def __init__(self):\n        self.device = None\n\n"
        "    def helper(self):\n" + body.replace("    ", "        ") + "        return 2\n\n"
        "    @staticmethod\n    def warm():\n        return torch.zeros(2, device='cuda')\n\n"
        "    def run(self):\n        return self.warm()\n"
    )
    cut = _slice(source, "PORT101")
    assert cut is not None
    # the statements still there: the import and the class (``unrelated`` is gone)
    assert [type(s).__name__ for s in cut.statements] == ["Import", "ClassDef"]
    sliced = cut.text
    assert _in_place(cut, source)
    assert [line for line in sliced.splitlines() if line.strip()] == [
        "import torch",
        "class Runner:",
        "    def __init__(self):",
        "        self.device = None",
        "    pass",
        "    @staticmethod",
        "    def warm():",
        "        return torch.zeros(2, device='cuda')",
        "    def run(self):",
        "        return self.warm()",
    ]
    assert parse_ast("def f(:\n") is None  # does not parse: the whole file, to LibCST
    # cut even when most of the file is kept; nothing to drop: the whole file
    mostly_kept = "def a(x):\n" + body + "    return x.to('cuda')\n\n\ndef b():\n    pass\n"
    cut = _slice(mostly_kept, "PORT101")
    assert cut.text == mostly_kept.replace("def b():\n    pass\n", "")
    assert cut.lines == list(range(1, len(mostly_kept.splitlines()) - 1))
    assert _slice("def a(x):\n    return x.to('cuda')\n", "PORT101") is None
    # nowhere a rule can report: nothing to parse
    assert _slice("def a():\n    return 'cuda'\n", "PORT101") is NOTHING


def test_partial_parsing_counts_lines_as_python_does():
    """A form feed ends no line for Python (``str.splitlines`` says it does): the cut must
    drop the unit's own lines, and the finding stays where it is."""
    source = "import torch\n\f\ndef a():\n    return 1\n\n\ndef b(x):\n    return x.to('cuda')\n"
    cut = _slice(source, "PORT101")
    # (`import torch` goes too: nothing kept uses it)
    assert cut.text == "\f\n\n\ndef b(x):\n    return x.to('cuda')\n"
    assert cut.lines == [2, 5, 6, 7, 8]
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(8, 17)]


def _slice(source: str, *codes: str):
    return slice_source(source, parse_ast(source), [CATALOG[code] for code in codes])


def _in_place(cut, source: str) -> bool:
    """Every line of the cut is the line of the source it says it is (or a ``pass`` put where
    a dropped block started), in order."""
    lines = source.splitlines()
    return cut.lines == sorted(set(cut.lines)) and all(
        text == lines[number - 1] or text.strip() == "pass"
        for text, number in zip(cut.text.splitlines(), cut.lines, strict=True)
    )


def test_partial_parsing_keeps_the_units_that_use_a_triggering_import():
    filler = "".join(f"    y = y + {i}\n" for i in range(20))
    source = (
        "from torch.cuda import nvtx\n\n\ndef other(y):\n" + filler + "    return y\n\n\n"
        "def push(name):\n    nvtx.range_push(name)\n"
    )
    sliced = _slice(source, "PORT408").text
    assert "    nvtx.range_push(name)" in sliced and "y + 3" not in sliced
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT408"})), fix_edits=False)
    assert [(v.line, v.code) for v in found] == [(len(source.splitlines()), "PORT408")]


def test_every_trigger_contains_a_needle_of_the_prefilter():
    from portlint.catalog import NEEDLES

    for code, entry in CATALOG.items():
        for trigger in entry.triggers:
            assert any(needle in trigger for needle in NEEDLES), (code, trigger)


def test_noqa_lines_are_counted_as_python_counts_lines():
    from portlint.suppression import noqa_lines

    assert noqa_lines("a\rb  # noqa\r\nc\nd  # NOQA: PORT101\n'noqa'") == {2, 4, 5}
    assert noqa_lines("x = 1\n") == set()


def test_a_noqa_suppresses_after_old_mac_line_endings():
    """The quick check for "noqa" on a finding's line counts a lone ``\\r`` as a line end."""
    source = "import torch\rx = 1\rd = torch.device('cuda')  # noqa: PORT101\r"
    settings = Settings(select=frozenset({"PORT101", "PORT001"}))
    assert lint_source("m.py", source, settings, fix_edits=False) == []
    unsuppressed = lint_source("m.py", source.replace("  # noqa: PORT101", ""), settings)
    assert [(v.line, v.code) for v in unsuppressed] == [(3, "PORT101")]


def test_the_cut_keeps_old_mac_line_endings():
    """A lone ``\\r`` ends a line for the cut as for Python: the kept lines are numbered by it,
    and the finding below the dropped function stays on its line."""
    filler = "".join(f"    y = {i}\r" for i in range(5))
    source = (
        "import torch\rdef a():\r"
        + filler
        + "    return 1\rdef b():\r    return torch.device('cuda')\r"
    )
    cut = _slice(source, "PORT101")
    assert cut.text == "import torch\rdef b():\r    return torch.device('cuda')\r"
    assert cut.lines == [1, 9, 10]
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(10, 12)]


def test_add_noqa_counts_lines_as_python_does():
    from portlint.suppression import add_noqa

    source = "import torch\rx = 1\f\r\nd = torch.device('cuda')\r"
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [v.line for v in found] == [3]
    fixed, changed, skipped = add_noqa(source, found)
    assert (fixed, changed, skipped) == (
        "import torch\rx = 1\f\r\nd = torch.device('cuda')  # noqa: PORT101\r",
        1,
        [],
    )


def test_partial_parsing_keeps_the_callers_the_guard_analysis_counts():
    """A kept method's callers are ``self.m``/``cls.m`` in its class and ``C.m`` anywhere (as the
    guard analysis counts them); another class's ``x.forward()`` is no caller of ``A.forward``."""
    filler = "".join(f"        y = y + {i}\n" for i in range(5))
    source = (
        "import torch\n\n\nclass A:\n"
        "    def forward(self):\n        torch.cuda.synchronize()\n\n"
        "    def run(self, y):\n" + filler + "        return self.forward()\n\n\n"
        "class B:\n"
        "    def step(self, x, y):\n" + filler + "        return x.forward()\n\n"
        "    def call(self, y):\n" + filler + "        return A.forward(y)\n"
    )
    kept = [line.strip() for line in _slice(source, "PORT401").text.splitlines()]
    assert "return self.forward()" in kept and "return A.forward(y)" in kept
    assert "return x.forward()" not in kept
    # Guarded only through its callers: all of them must be in the cut, and are.
    guarded = source.replace(
        "        return self.forward()", "        if current_platform.is_cuda():\n"
        "            return self.forward()"
    ).replace("        return A.forward(y)", "        assert current_platform.is_cuda()\n"
              "        return A.forward(y)")  # fmt: skip
    cuda_api = frozenset(f"PORT40{n}" for n in range(1, 10))
    settings = Settings(select=cuda_api)
    whole = Settings(select=cuda_api, partial_parse=False)
    assert lint_source("m.py", guarded, settings, fix_edits=False) == []
    assert lint_source("m.py", guarded, whole, fix_edits=False) == []
    assert [v.line for v in lint_source("m.py", source, settings, fix_edits=False)] == [6]
    # One caller guarded, `A.forward(y)` not: still reported, which needs that caller in the cut.
    half = source.replace(
        "        return self.forward()",
        "        if current_platform.is_cuda():\n            return self.forward()",
    )
    assert [v.line for v in lint_source("m.py", half, settings, fix_edits=False)] == [6]
    assert [v.line for v in lint_source("m.py", half, whole, fix_edits=False)] == [6]


def test_partial_parsing_keeps_a_kernels_header_and_launches_and_no_needless_callers():
    """A Triton kernel's body is Triton code, which no rule reads: only its decorators and
    signature are kept, and the functions that launch it (``kernel[grid](...)``, what PORT202
    checks). Callers are kept only for the guardable rules (whose findings depend on them):
    ``caller`` and ``uses_grow`` go."""
    source = (
        "import torch\nimport triton\n\n\n"
        "@triton.jit\ndef helper(x):\n    return x + 1\n\n\n"
        "@triton.jit\ndef kernel(x_ptr, n):\n    y = helper(n)\n    tl.store(x_ptr, y)\n\n\n"
        "def launch(n):\n    x = torch.arange(n)\n    kernel[(1,)](x, n)\n\n\n"
        "def caller(n):\n    return launch(n)\n\n\n"
        "def grow(n):\n    return torch.arange(n).new_empty(3)\n\n\n"
        "def uses_grow(t):\n    return grow(t)\n"
    )
    cut = _slice(source, "PORT201", "PORT202")
    assert _in_place(cut, source)
    assert [line for line in cut.text.splitlines() if line.strip()] == [
        "import torch",
        "import triton",
        "@triton.jit",
        "def helper(x):",
        "    pass",
        "@triton.jit",
        "def kernel(x_ptr, n):",
        "    pass",
        "def launch(n):",
        "    x = torch.arange(n)",
        "    kernel[(1,)](x, n)",
        "def grow(n):",
        "    return torch.arange(n).new_empty(3)",
    ]
    codes = frozenset({"PORT201", "PORT202"})
    found = lint_source("m.py", source, Settings(select=codes), fix_edits=False)
    assert [(v.line, v.col, v.code) for v in found] == [(18, 18, "PORT202")]
    whole = Settings(select=codes, partial_parse=False)
    assert lint_source("m.py", source, whole, fix_edits=False) == found
    # A body that mentions a trigger is kept whole (a factory that defines a kernel, say).
    factory = source.replace("    y = helper(n)\n", "    y = helper(n)  # not triton.jit\n")
    cut = _slice(factory, "PORT201", "PORT202")
    assert "    y = helper(n)  # not triton.jit" in cut.text
    # With a guardable rule, the callers of a unit it concerns stay (to a fixpoint).
    guarded = source.replace("x = torch.arange(n)", "x = torch.arange(n, device='cuda')")
    kept = _slice(guarded, "PORT101", "PORT201", "PORT202").text
    assert "    return launch(n)" in kept and "    return grow(n)" not in kept


def test_partial_parsing_drops_the_module_level_code_nothing_kept_needs():
    """An import that defines no name kept code mentions is dropped; so is an assignment,
    expression or class whose methods all go when it mentions no trigger, binds no name kept code
    mentions and mentions no function kept code defines (a caller the guard analysis counts:
    ``warm()``)."""
    source = (
        "import torch\nimport os.path\nfrom torch.cuda import nvtx\n"
        "LIMIT = 8\nUNUSED = compute()\nprint('loaded')\nwarm()\n"
        "class Config:\n    size = 3\n\n    def get(self):\n        return self.size\n"
        "class Used:\n    def get(self):\n        return 1\n"
        "def warm():\n    x = Used()\n    return torch.zeros(LIMIT, device='cuda')\n"
    )
    cut = _slice(source, "PORT101")
    assert [line for line in cut.text.splitlines() if line.strip()] == [
        "import torch",
        "LIMIT = 8",
        "warm()",
        "class Used:",
        "    pass",
        "def warm():",
        "    x = Used()",
        "    return torch.zeros(LIMIT, device='cuda')",
    ]
    assert [type(s).__name__ for s in cut.statements] == [
        "Import", "Assign", "Expr", "ClassDef", "FunctionDef"
    ]  # fmt: skip
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(18, 38)]
    whole = Settings(select=frozenset(all_rules()), partial_parse=False)
    partial = Settings(select=frozenset(all_rules()))
    assert lint_source("m.py", source, partial, fix_edits=False) == lint_source(
        "m.py", source, whole, fix_edits=False
    )


def test_a_guarded_function_covers_its_body_not_its_decorators():
    """Only called under a CUDA guard: its body runs on CUDA only; its decorators run where it
    is defined."""
    source = (
        "import torch\n\n\n"
        "@register(torch.cuda.current_device())\n"
        "def warm():\n    torch.cuda.synchronize()\n\n\n"
        "def run():\n    if torch.version.cuda is not None:\n        warm()\n"
    )
    settings = Settings(select=frozenset(f"PORT40{n}" for n in range(1, 10)))
    found = lint_source("m.py", source, settings, fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(4, 11)]


def test_the_pool_is_no_larger_than_the_files_can_keep_busy():
    from portlint.engine import MIN_FILES_PER_WORKER, _Runner

    assert _Runner(16, 20).workers == 20 // MIN_FILES_PER_WORKER  # 2, not 16, for 20 files
    assert _Runner(2, 3000).workers == 2
    with _Runner(16, 10) as runner:  # too few files for a pool: run here
        for n in range(10):
            runner.submit((f"m{n}.py", "x = 1\n", Settings(), False, ["PORT101"]))
        assert runner.pool is None
        assert [path for path, _, _ in runner.results(None)] == [f"m{n}.py" for n in range(10)]


def test_a_fix_edits_its_own_line_after_old_mac_line_endings():
    """Fix edits count lines as the findings do: a lone ``\\r`` ends a line."""
    from portlint.engine import fix_source

    source = "x = 1\ry = 2  # noqa: PORT102\rz = 3\r"
    result = fix_source("m.py", source, Settings(select=frozenset({"PORT001", "PORT102"})))
    assert result.source == "x = 1\ry = 2\rz = 3\r"
    assert result.applied["PORT001"] == 1


def test_code_that_only_mentions_a_rule_in_comments_docstrings_or_triton_is_not_parsed(
    monkeypatch,
):
    """Evidence is sought in code: a unit whose only mention of ``torch.cuda`` is in its
    docstring, a comment or Triton's ``tl.extra.cuda`` is dropped; where no unit is left and no
    other code shows any evidence, LibCST parses nothing (and where only comments mention it,
    neither does ``ast``)."""
    import portlint.visit as visit

    filler = "".join(f"    y = y + {i}\n" for i in range(3))
    source = (
        "import torch\nimport triton\nimport triton.language as tl\n\n\n"
        'def documented(y):\n    """Like torch.cuda.synchronize()."""\n'
        + filler
        + "    return y\n\n\n"
        "def commented(y):\n    # torch.cuda.synchronize() was here\n"
        + filler
        + "    return y\n\n\n"
        "@triton.jit\ndef kernel(x):\n    tl.extra.cuda.gdc_wait()\n"
    )
    cuda_api = [f"PORT40{n}" for n in range(1, 10)]
    assert _slice(source, *cuda_api) is NOTHING
    settings = Settings(select=frozenset(cuda_api))
    whole = Settings(select=frozenset(cuda_api), partial_parse=False)
    assert lint_source("m.py", source, whole, fix_edits=False) == []

    def parse(*_):
        raise AssertionError("parsed")

    monkeypatch.setattr(visit.cst, "parse_module", parse)
    assert lint_source("m.py", source, settings, fix_edits=False) == []
    monkeypatch.setattr(visit, "parse_ast", parse)
    no_code = source.replace("    tl.extra.cuda.gdc_wait()", "    pass").replace(
        "torch.cuda.synchronize().", "CUDA's."
    )  # only a comment mentions it
    assert lint_source("m.py", no_code, settings, fix_edits=False) == []
    # the same file with one real use is parsed, and the use is reported
    monkeypatch.undo()
    used = source.replace("    return y\n", "    return torch.cuda.synchronize()\n", 1)
    found = lint_source("m.py", used, settings, fix_edits=False)
    assert [(v.line, v.code) for v in found] == [(11, "PORT401")]
    assert found == lint_source("m.py", used, whole, fix_edits=False)


def test_a_parse_without_validation_builds_the_same_tree_and_validates_again_after():
    import libcst as cst

    from portlint.visit import parse_unvalidated

    for path in sorted((REPO / "portlint").rglob("*.py"))[:20]:
        source = path.read_text()
        assert parse_unvalidated(source).deep_equals(cst.parse_module(source)), path
    with pytest.raises(cst.ParserSyntaxError):
        parse_unvalidated("def f(:\n")
    # LibCST's checks of hand-made nodes are on again, after a parse that failed too.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_a_syntax_error_in_a_cut_is_reported_on_the_files_line():
    """Where LibCST refuses a cut that Python accepted, the line of its error is the file's."""
    import libcst as cst

    from portlint.visit import _syntax_error

    with pytest.raises(cst.ParserSyntaxError) as refused:
        cst.parse_module("x = 1\ny = (\n")
    error = refused.value
    assert error.editor_line == 2
    # A file that Python parses (so LibCST's account is the one given), cut to lines 1 and 7.
    violation = _syntax_error("m.py", "x = 1\n" + "\n" * 5 + "y = (2)\n", error, [1, 7])
    assert (violation.line, violation.message.startswith("SyntaxError: ")) == (7, True)
    assert _syntax_error("m.py", "x = 1\n", error, None).line == 2


TRITON_FILE = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef k(x_ptr, n):\n    i = tl.arange(0, 4)\n    s = tl.sum(i)\n"
    "    tl.store(x_ptr, s.to(tl.int64))\n\n\n"
    "def launch(n):\n    x = torch.empty(n)\n    k[(1,)](x, n)\n"
)


def test_tritons_tl_makers_are_no_int64_evidence_where_tl_can_only_be_triton():
    """``tl.arange``, ``tl.sum``, ``tl.int64`` are Triton's: a file whose only int64 evidence they
    are is not parsed for PORT201/PORT202, unless ``tl`` may be something else there."""
    from portlint.partial import shows_evidence

    evidence = CATALOG["PORT202"].evidence
    assert not shows_evidence(TRITON_FILE, evidence)
    assert not shows_evidence(TRITON_FILE.replace("import triton.language as tl",
                                                  "from vllm.triton_utils import tl"), evidence)  # fmt: skip
    for other in (
        "import torch as tl\n",
        "tl = torch\n",
        "def g(tl):\n    pass\n",
        "import triton.language as tl; tl = x.int()\n",
        "note = 'tl'\n",
    ):
        assert shows_evidence(other + TRITON_FILE, evidence), other
    # A method that makes int64 whatever it is called on counts after `tl.` too.
    assert shows_evidence(TRITON_FILE.replace("tl.sum(i)", "tl.argmax(i, 0)"), evidence)


def test_the_makers_left_out_after_tl_are_not_those_the_dtype_flow_knows_by_their_method():
    from portlint.analysis.dtypes import INT64_METHODS
    from portlint.catalog import INT64_BY_NAME_OR_RECEIVER

    assert not (INT64_METHODS | {"long"}) & set(INT64_BY_NAME_OR_RECEIVER)


def test_where_tl_is_torch_its_makers_are_found_with_partial_parsing_as_without():
    source = TRITON_FILE.replace("import triton.language as tl", "import torch as tl").replace(
        "x = torch.empty(n)", "x = tl.arange(n)"
    )
    select = frozenset({"PORT201", "PORT202"})
    partial = lint_source("m.py", source, Settings(select=select), fix_edits=False)
    whole = lint_source("m.py", source, Settings(select=select, partial_parse=False))
    assert [(v.code, v.line) for v in partial] == [("PORT202", 15)]
    assert [(v.code, v.line) for v in whole] == [("PORT202", 15)]


def test_a_line_of_a_triple_quoted_f_string_that_starts_with_a_hash_is_code():
    """Such a line may hold code (``{...}``): the cut must not take it for a comment."""
    from portlint.partial import _has_triple_quoted_f_string

    quotes = '"' * 3
    source = (
        f"import torch\n\n\ndef report():\n    return f{quotes}\n"
        f"# {{torch.cuda.synchronize()}}\n{quotes}\n"
    )
    select = frozenset(f"PORT40{n}" for n in range(1, 10))
    partial = lint_source("m.py", source, Settings(select=select), fix_edits=False)
    whole = lint_source("m.py", source, Settings(select=select, partial_parse=False))
    assert [v.line for v in partial] == [v.line for v in whole] == [6]
    for prefix in ("f", "F", "rf", "Rf", "fr", "FR"):
        for triple in (quotes, "'" * 3):
            assert _has_triple_quoted_f_string(f"x = {prefix}{triple}a\n{triple}\n"), prefix
    assert not _has_triple_quoted_f_string(f"x = {quotes}a\n# f\n{quotes}\ny = r'''b'''\n")


def test_the_cycle_collector_is_on_again_after_a_file_and_left_off_where_it_was_off(monkeypatch):
    import gc

    from portlint import visit

    select = Settings(select=frozenset({"PORT101"}))
    assert gc.isenabled()
    assert [v.code for v in lint_source("m.py", BUGGY, select, fix_edits=False)] == ["PORT101"]
    assert gc.isenabled()

    def crash(*args):
        assert not gc.isenabled()  # off while the file is parsed
        raise RuntimeError("boom")

    monkeypatch.setattr(visit, "parse_unvalidated", crash)
    with pytest.raises(RuntimeError):
        lint_source("m.py", BUGGY, select, fix_edits=False)
    assert gc.isenabled()
    monkeypatch.undo()
    gc.disable()
    try:
        lint_source("m.py", BUGGY, select, fix_edits=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
