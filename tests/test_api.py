"""The Python API (portlint.api): results returned, nothing printed, settings as the CLI's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from portlint import api
from portlint.config import ConfigError, Configurations, Overrides

BUGGY = 'import torch\nd = torch.device("cuda")\ny = x.cuda()\n'


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def found(violations) -> list[tuple[str, int, int, str | None]]:
    return [(Path(v.path).name, v.line, v.col, v.code) for v in violations]


def test_lint_text_returns_findings_and_prints_nothing(capsys):
    violations = api.lint_text(BUGGY)
    assert found(violations) == [("<string>", 2, 5, "PORT101"), ("<string>", 3, 7, "PORT102")]
    assert violations[0].fix is not None and violations[0].fix.applicability == "unsafe"
    assert capsys.readouterr() == ("", "")


def test_lint_text_with_settings_and_a_path_for_per_file_rules(tmp_path):
    settings = api.make_settings(select=["PORT1"], ignore=["PORT102"])
    assert found(api.lint_text(BUGGY, settings=settings)) == [("<string>", 2, 5, "PORT101")]
    write(tmp_path, "pyproject.toml", '[tool.portlint]\ncuda-only-paths = ["kernels/*"]\n')
    configured = api.make_settings(tmp_path / "pyproject.toml")
    assert api.lint_text(BUGGY, str(tmp_path / "kernels" / "k.py"), configured) == []
    assert len(api.lint_text(BUGGY, str(tmp_path / "model.py"), configured)) == 2


def test_a_source_that_does_not_parse_is_one_finding_without_a_code():
    (violation,) = api.lint_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    assert (violation.line, violation.code) == (2, None)
    assert violation.message.startswith("SyntaxError")


def test_fix_text_applies_safe_fixes_and_unsafe_ones_only_when_asked():
    source = "import torch\ntorch.cuda.synchronize()\nd = torch.device('cuda')\n"
    safe = api.fix_text(source)
    assert safe.source == source.replace("torch.cuda.synchronize", "torch.accelerator.synchronize")
    assert dict(safe.applied) == {"PORT401": 1}
    assert [v.code for v in safe.violations] == ["PORT101"]
    unsafe = api.fix_text(source, unsafe=True)
    assert "torch.device('cuda')" not in unsafe.source and unsafe.violations == []


def test_lint_paths_gives_each_file_its_closest_configuration(tmp_path, capsys):
    write(tmp_path, "pyproject.toml", '[tool.portlint]\nselect = ["PORT101"]\n')
    write(tmp_path, "a.py", BUGGY)
    write(tmp_path, "sub/pyproject.toml", '[tool.portlint]\nselect = ["PORT102"]\n')
    write(tmp_path, "sub/b.py", BUGGY)
    result = api.lint_paths(["."], cwd=tmp_path)
    assert found(result.violations) == [("a.py", 2, 5, "PORT101"), ("b.py", 3, 7, "PORT102")]
    assert (result.files, result.missing, result.errors) == (2, [], [])
    everything = api.lint_paths(["a.py", "missing.py"], api.make_settings(), cwd=tmp_path)
    assert [v.code for v in everything.violations] == ["PORT101", "PORT102"]
    assert everything.missing == [tmp_path / "missing.py"]
    assert capsys.readouterr() == ("", "")
    assert not (tmp_path / ".portlint_cache").exists()


def test_a_bad_configuration_raises_config_error(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.portlint]\nselect = 1\n")
    write(tmp_path, "a.py", BUGGY)
    with pytest.raises(ConfigError, match="select must be a list of strings"):
        api.lint_paths(["a.py"], cwd=tmp_path)
    with pytest.raises(ConfigError, match="unknown rule selector 'PORT9'"):
        api.make_settings(select=["PORT9"])


def test_progress_counts_on_across_configurations(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.portlint]\n")
    write(tmp_path, "sub/pyproject.toml", '[tool.portlint]\nselect = ["PORT1"]\n')
    for name in ("a.py", "b.py", "sub/c.py", "sub/d.py", "sub/e.py"):
        write(tmp_path, name, BUGGY)
    configurations = Configurations(Overrides(), tmp_path)
    groups, _ = api.files_by_settings([tmp_path], configurations)
    assert sorted(len(files) for files in groups.values()) == [2, 3]
    calls: list[tuple[int, int]] = []
    api.lint_groups(groups, jobs=1, progress=lambda done, total: calls.append((done, total)))
    assert [done for done, _ in calls] == [1, 2, 3, 4, 5]
    assert calls[-1] == (5, 5)
