"""One line model everywhere: lines end at \\n, \\r\\n or a lone \\r, as Python counts them, never at a
form feed or another separator that `str.splitlines` splits on."""

from __future__ import annotations

from portlint.engine import lint_source
from portlint.settings import Settings
from tests.helpers import cut as cut_of


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
    cut = cut_of(source, "PORT101")
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


def test_a_fix_edits_its_own_line_after_old_mac_line_endings():
    """Fix edits count lines as the findings do: a lone ``\\r`` ends a line."""
    from portlint.fix_rounds import fix_source

    source = "x = 1\ry = 2  # noqa: PORT102\rz = 3\r"
    result = fix_source("m.py", source, Settings(select=frozenset({"PORT001", "PORT102"})))
    assert result.source == "x = 1\ry = 2\rz = 3\r"
    assert result.applied["PORT001"] == 1


FORM_FEED = "import torch\n# part one\f part two\nd = torch.device('cuda')\n"


def test_a_form_feed_file_reports_quotes_and_fingerprints_the_right_line(tmp_path):
    """A form feed inside a line ends no line: the finding is on line 3, `full` quotes line 3
    (not the text after the form feed), and the baseline fingerprints line 3, so the baselined
    finding still matches after the file changes elsewhere."""
    import json

    from tests.helpers import run_cli

    (tmp_path / "m.py").write_text(FORM_FEED)
    full = run_cli("check", "m.py", "--no-cache", "--output-format", "full", cwd=tmp_path)
    assert full.stdout.splitlines()[:4] == [
        "m.py:3:5: PORT101 `torch.device` hardcodes CUDA; use `torch.accelerator.current_accelerator()`",
        "  |",
        "3 | d = torch.device('cuda')",
        "  |     ^^^^^^^^^^^^^^^^^^^^",
    ]
    written = run_cli("check", "m.py", "--no-cache", "--write-baseline", "b.json", cwd=tmp_path)
    assert written.returncode == 0
    (entry,) = json.loads((tmp_path / "b.json").read_text())["findings"]
    from portlint.baseline import fingerprint
    from portlint.findings import Violation

    on_line_3 = Violation("m.py", 3, 5, "PORT101", "", 3, 25)
    assert entry["fingerprint"] == fingerprint(on_line_3, ["", "", "d = torch.device('cuda')\n"])
    (tmp_path / "m.py").write_text("import os\n" + FORM_FEED.replace("part two", "part 2"))
    again = run_cli("check", "m.py", "--no-cache", "--baseline", "b.json", "-q", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
