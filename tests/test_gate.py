"""The text gate: a file is parsed only for the rules whose triggers it holds and whose evidence
its code shows (comments, docstrings and Triton's `tl.` makers are no evidence)."""

from __future__ import annotations

from pathlib import Path

from portlint.catalog import CATALOG
from portlint.discovery import discover
from portlint.engine import lint_source
from portlint.run import lint_files
from portlint.settings import Settings
from portlint.speed.cut import NOTHING
from portlint.speed.gate import codes_with_triggers_in, shows_evidence
from tests.helpers import BUGGY, CUDA_API, settings_for, tree
from tests.helpers import cut as cut_of


def test_text_gate_skips_files_without_trigger_strings(tmp_path):
    tree(tmp_path, {"plain.py": "x = 1\n", "broken_but_plain.py": "def (:\n", "buggy.py": BUGGY})
    settings = settings_for(tmp_path)
    files, _ = discover([tmp_path], settings)
    result = lint_files(files, settings, jobs=1)
    assert result.files_checked == 3 and result.files_parsed == 1
    assert [(Path(v.path).name, v.code) for v in result.violations] == [("buggy.py", "PORT101")]


def test_text_gate_selects_rules_per_file():
    codes = frozenset(CATALOG)
    assert codes_with_triggers_in("x.cuda()", codes) == ["PORT102"]
    assert codes_with_triggers_in("y = x.new_zeros(3)", codes) == ["PORT201"]
    assert codes_with_triggers_in("import torch", codes) == []
    assert codes_with_triggers_in('torch.device("cuda")', frozenset({"PORT102"})) == []


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


def test_every_trigger_is_looked_for_under_a_needle():
    """A trigger that contains none of the common needles is a needle of its own: every trigger
    of every rule is found by the gate (a rule whose trigger were under no needle would never
    run)."""
    from portlint.speed.gate import _by_needle

    under = {trigger for by in _by_needle().values() for trigger, _ in by}
    assert under == {t for entry in CATALOG.values() for t in entry.triggers}
    for code, entry in CATALOG.items():
        for trigger in entry.triggers:
            text = "x = 1  # " + trigger + "\n"
            assert code in codes_with_triggers_in(text, frozenset(CATALOG)), (code, trigger)


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
    cuda_api = sorted(CUDA_API)
    assert cut_of(source, *cuda_api) is NOTHING
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


TRITON_FILE = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n"
    "@triton.jit\ndef k(x_ptr, n):\n    i = tl.arange(0, 4)\n    s = tl.sum(i)\n"
    "    tl.store(x_ptr, s.to(tl.int64))\n\n\n"
    "def launch(n):\n    x = torch.empty(n)\n    k[(1,)](x, n)\n"
)


def test_tritons_tl_makers_are_no_int64_evidence_where_tl_can_only_be_triton():
    """``tl.arange``, ``tl.sum``, ``tl.int64`` are Triton's: a file whose only int64 evidence they
    are is not parsed for PORT201/PORT202, unless ``tl`` may be something else there."""
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


def test_where_tl_is_torch_its_makers_are_found_with_partial_parsing_as_without():
    source = (
        TRITON_FILE.replace("import triton.language as tl", "import torch as tl")
        .replace("x = torch.empty(n)", "x = tl.arange(n)")
        .replace(  # a kernel that needs int32 for `x_ptr`
            "    tl.store(x_ptr, s.to(tl.int64))\n",
            "    j = tl.load(x_ptr)\n    if n > 0:\n        j = n\n    tl.store(x_ptr, j)\n",
        )
    )
    select = frozenset({"PORT201", "PORT202"})
    partial = lint_source("m.py", source, Settings(select=select), fix_edits=False)
    whole = lint_source("m.py", source, Settings(select=select, partial_parse=False))
    assert [(v.code, v.line) for v in partial] == [("PORT202", 18)]
    assert [(v.code, v.line) for v in whole] == [("PORT202", 18)]


def test_a_line_of_a_triple_quoted_f_string_that_starts_with_a_hash_is_code():
    """Such a line may hold code (``{...}``): the cut must not take it for a comment."""
    from portlint.speed.gate import _has_triple_quoted_f_string

    quotes = '"' * 3
    source = (
        f"import torch\n\n\ndef report():\n    return f{quotes}\n"
        f"# {{torch.cuda.synchronize()}}\n{quotes}\n"
    )
    select = CUDA_API
    partial = lint_source("m.py", source, Settings(select=select), fix_edits=False)
    whole = lint_source("m.py", source, Settings(select=select, partial_parse=False))
    assert [v.line for v in partial] == [v.line for v in whole] == [6]
    for prefix in ("f", "F", "rf", "Rf", "fr", "FR"):
        for triple in (quotes, "'" * 3):
            assert _has_triple_quoted_f_string(f"x = {prefix}{triple}a\n{triple}\n"), prefix
    assert not _has_triple_quoted_f_string(f"x = {quotes}a\n# f\n{quotes}\ny = r'''b'''\n")
