"""Fixes: what --fix, --unsafe-fixes and --diff do to files, and that nothing is lost on disk."""

from __future__ import annotations

import json
import os
import shutil
import stat

from portlint import fix_rounds
from portlint.findings import UNSAFE, Edit, Fix, Violation
from portlint.fix_rounds import fix_source
from portlint.settings import Settings
from tests.helpers import REPO, run_cli

SOURCE = 'import torch\n\n\ndef warmup(worker):\n    device = torch.device("cuda")\n    return torch.zeros(3, device=device).cuda()\n'
FIXED = "import torch\n\n\ndef warmup(worker):\n    device = worker.device\n    return torch.zeros(3, device=device).to(worker.device)\n"


def test_unsafe_fix_of_the_seed_warmup_uses_the_workers_device(tmp_path):
    seed = tmp_path / "warmup.py"
    shutil.copy(REPO / "tests" / "seeds" / "warmup_buggy.py", seed)
    result = run_cli("check", "warmup.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = seed.read_text().replace("  # error: PORT101", "")  # the seed's annotation stays
    assert "    device = worker.device\n" in fixed
    # The fixed seed is the reference implementation's warmup, line for line.
    expected = (REPO / "reference_impl" / "warmup.py").read_text().split("import torch", 1)[1]
    assert fixed.split("import torch", 1)[1] == expected
    before = seed.read_text()
    again = run_cli("check", "warmup.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert again.returncode == 0 and seed.read_text() == before


def test_fix_without_unsafe_fixes_changes_nothing_and_says_why(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    result = run_cli("check", "a.py", "--fix", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / "a.py").read_text() == SOURCE
    assert "2 unsafe fixes available with `--fix --unsafe-fixes`." in result.stdout


def test_fix_writes_and_show_fixes_lists_them(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    result = run_cli("check", "a.py", "--fix", "--unsafe-fixes", "--show-fixes", cwd=tmp_path)
    assert result.returncode == 0
    assert (tmp_path / "a.py").read_text() == FIXED
    assert "1 × PORT101 (hardcoded-cuda-device)" in result.stdout
    assert "Found 2 errors (2 fixed, 0 remaining)." in result.stdout


def test_overlapping_fixes_are_applied_over_rounds(tmp_path):
    (tmp_path / "a.py").write_text('import torch\ny = torch.zeros(3, device="cuda").cuda()\n')
    run_cli("check", "a.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    expected = "import torch\ny = torch.zeros(3, device=torch.accelerator.current_accelerator()).to(torch.accelerator.current_accelerator())\n"
    assert (tmp_path / "a.py").read_text() == expected


def test_diff_prints_the_change_and_writes_nothing(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    result = run_cli("check", "a.py", "--diff", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 1
    assert '-    device = torch.device("cuda")\n' in result.stdout
    assert "+    device = worker.device\n" in result.stdout
    assert (tmp_path / "a.py").read_text() == SOURCE
    (tmp_path / "b.py").write_text("x = 1\n")
    assert run_cli("check", "b.py", "--diff", "--unsafe-fixes", cwd=tmp_path).returncode == 0


def test_crlf_bom_encoding_and_permissions_are_kept(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(SOURCE.replace("\n", "\r\n").encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + SOURCE.encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + SOURCE.encode())
    os.chmod(crlf, 0o640)
    result = run_cli("check", ".", "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert crlf.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert bom.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()
    assert latin.read_bytes() == b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + FIXED.encode()
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bom.py", "crlf.py", "latin.py"]


def test_read_only_file_is_not_touched(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(SOURCE)
    os.chmod(path, 0o444)
    result = run_cli("check", "a.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 2
    assert "a.py: file is read-only; not fixed" in result.stderr
    assert path.read_text() == SOURCE
    assert "Traceback" not in result.stderr


def test_fix_through_a_symlink_writes_the_target(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(SOURCE)
    (tmp_path / "link.py").symlink_to(target)
    run_cli("check", "link.py", "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert (tmp_path / "link.py").is_symlink() and target.read_text() == FIXED


def test_json_fix_field_has_ruffs_shape(tmp_path):
    (tmp_path / "a.py").write_text(SOURCE)
    items = json.loads(run_cli("check", "a.py", "--output-format", "json", cwd=tmp_path).stdout)
    fix = items[0]["fix"]
    assert fix == {
        "applicability": "unsafe",
        "message": "Use `worker.device`",
        "edits": [
            {
                "content": "    device = worker.device\n",
                "location": {"row": 5, "column": 1},
                "end_location": {"row": 6, "column": 1},
            }
        ],
    }


def test_a_fix_that_would_not_parse_is_dropped_and_reported(monkeypatch):
    broken = Fix(UNSAFE, "break it", (Edit(1, 1, 2, 1, "def (:\n"),))
    finding = Violation("a.py", 1, 1, "PORT101", "m", fix=broken)
    monkeypatch.setattr(fix_rounds, "lint_source", lambda path, source, settings, **_: [finding])
    result = fix_source("a.py", "x = 1\n", Settings(), unsafe=True)
    assert result.source == "x = 1\n"
    assert result.dropped == ["a.py:1: PORT101: the fixed code would not parse"]
    assert not result.applied
