"""Which files a run lints: default excludes, suffixes, .gitignore, exclude settings; and the
selectors the configuration takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from portlint.config import Overrides, load_settings
from portlint.discovery import discover
from tests.helpers import settings_for, tree


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


@pytest.mark.parametrize("selector", ["PORT", "port1", "PORT10", "ALL"])
def test_prefix_selectors(tmp_path, selector):
    settings = load_settings(None, Overrides(select=[selector]), tmp_path)
    assert settings.select and all(
        code.startswith(selector.upper().replace("ALL", "PORT")) for code in settings.select
    )
