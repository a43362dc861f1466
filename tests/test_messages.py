"""A finding's message is short (the rule's point and the replacement); its detail holds the
reasoning, and every format that has room for it shows it (issue #51)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from portlint.findings import MESSAGE_WIDTH, Violation
from portlint.registry import all_rules
from tests.helpers import REPO, lint, run_cli

FIXTURES = sorted((REPO / "tests" / "fixtures").glob("*.py")) + sorted(
    (REPO / "tests" / "seeds").glob("*.py")
)
# A dotted name not after a dot: `x.device.type`, `torch.get_device_module`, `self`.
CHAIN = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.\w+)*")


def without_user_code(message: str, source: str) -> str:
    """``message`` with what it quotes of ``source`` shortened to `…`: each name in backticks
    whose first part is a name of the source (a parameter, a local, a callee), but `torch`."""
    names = set(re.findall(r"[A-Za-z_]\w*", source)) - {"torch"}

    def shorten(quoted: re.Match) -> str:
        return CHAIN.sub(
            lambda m: "…" if m.group().split(".")[0] in names else m.group(), quoted.group()
        )

    return re.sub(r"`[^`]*`", shorten, message)


def _cases() -> list[tuple[str, str, list[Violation]]]:
    """Each inline case and file fixture, with what portlint finds in it."""
    cases = []
    for code, rule in all_rules().items():
        for number, case in enumerate(rule.INVALID):
            found = lint(case.source, code, *rule.CASES_ALSO_SELECT)
            cases.append((f"{code}-{number}", case.source, found))
    for path in FIXTURES:
        source = path.read_text()
        cases.append((f"{path.parent.name}/{path.name}", source, lint(source, path=str(path))))
    return cases


CASES = _cases()


def test_the_cases_find_something_of_every_rule():
    found = {v.code for _, _, violations in CASES for v in violations}
    assert found >= set(all_rules())


@pytest.mark.parametrize(("case", "source", "found"), CASES, ids=[c[0] for c in CASES])
def test_a_message_is_one_short_line_and_the_reasoning_is_its_detail(case, source, found):
    for violation in found:
        message, detail = violation.message, violation.detail
        assert "\n" not in message and "\n" not in detail
        assert len(without_user_code(message, source)) <= MESSAGE_WIDTH, message
        assert " (torch ≥ " not in message  # (the release the replacement needs: detail)
        if violation.code != "PORT001":  # (an unused `noqa` needs no more than its message)
            assert detail and detail.endswith("."), violation
            assert detail[0].isupper() or detail[0] == "`", detail


def test_user_code_is_what_may_run_over():
    source = "import torch\ndef f(hidden_states):\n    torch.cuda.get_device_properties()\n"
    assert without_user_code("`torch.get_device_module(hidden_states.device)` has it", source) == (
        "`torch.get_device_module(…)` has it"
    )
    assert without_user_code("CUDA-only `torch.cuda.synchronize`", source) == (
        "CUDA-only `torch.cuda.synchronize`"
    )


def test_a_long_replacement_on_the_device_module_is_named_by_its_module():
    """`torch.cuda.X` → `torch.get_device_module(...).X`: past the width, the message names the
    module (its member has the CUDA name), the detail the whole replacement."""
    source = "import torch\ndef f():\n    return torch.cuda.is_current_stream_capturing()\n"
    (finding,) = lint(source, "PORT409")
    assert finding.message == (
        "CUDA-only `torch.cuda.is_current_stream_capturing`; `torch.get_device_module()` has it"
    )
    assert finding.detail.startswith(
        "`torch.get_device_module().is_current_stream_capturing` needs torch ≥ "
    )
    (short,) = lint("import torch\ntorch.cuda.synchronize()\n", "PORT401")
    assert short.message.endswith("use `torch.accelerator.synchronize`")


# --- The formats ------------------------------------------------------------------------------
CAPTURE = (
    "import torch\n\n\ndef f(m, x, g):\n    m(x)\n    with torch.cuda.graph(g):\n        m(x)\n"
)
STREAM = "import torch\n\ns = torch.cuda.current_stream()\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.portlint]\nselect = ["PORT301", "PORT402"]\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "capture.py").write_text(CAPTURE)
    (tmp_path / "src" / "stream.py").write_text(STREAM)
    return tmp_path


def check(project: Path, output_format: str, *args: str) -> str:
    result = run_cli("check", "src", "--output-format", output_format, *args, cwd=project)
    assert result.returncode == 1, result.stderr
    return result.stdout


def test_concise_shows_the_message_and_full_the_detail_under_the_code_frame(project):
    (detail,) = [v.detail for v in lint(STREAM, "PORT402")]
    concise = check(project, "concise", "--no-cache")
    assert detail not in concise
    assert (
        "src/stream.py:3:5: PORT402 CUDA-only `torch.cuda.current_stream`; use "
        "`torch.accelerator.current_stream`\n"
    ) in concise
    full = check(project, "full", "--no-cache")
    frame_then_note = "\n  |     ^^^^^^^^^^^^^^^^^^^^^^^^^\n  = note: " + detail + "\n  = fix"
    assert frame_then_note in full
    assert "  = note: Without `stream=`, PyTorch captures on a private side stream" in full


def test_json_and_json_lines_have_the_detail_beside_ruffs_keys(project):
    items = json.loads(check(project, "json", "--no-cache"))
    assert [(i["code"], bool(i["message"]), bool(i["detail"])) for i in items] == [
        ("PORT301", True, True),
        ("PORT402", True, True),
    ]
    assert items[1]["detail"].startswith("`torch.accelerator.current_stream` needs torch ≥ 2.6.")
    lines = check(project, "json-lines", "--no-cache").splitlines()
    assert [json.loads(line) for line in lines] == items


def test_a_warm_run_keeps_the_detail(project):
    cold = check(project, "json", "--no-cache")
    first, warm = check(project, "json"), check(project, "json")
    assert cold == first == warm
    assert all(item["detail"] for item in json.loads(warm))


def test_a_cache_written_before_details_is_linted_again(project):
    """A table of an older portlint has rows of eight items: they are malformed now, and the
    files are linted again, with their details."""
    cold = check(project, "json", "--no-cache")
    check(project, "json")
    folder = project / ".portlint_cache"
    tables = [p for p in folder.glob("*.json") if not p.name.startswith("index-")]
    for table in tables:
        entries = json.loads(table.read_text())
        for entry in entries.values() if "-run" not in table.name else ():
            entry[2] = [row[:8] for row in entry[2]]
        if "-run" in table.name:
            entries["violations"] = [[path, row[:8]] for path, row in entries["violations"]]
        table.write_text(json.dumps(entries))
    assert check(project, "json") == cold


def test_sarif_has_the_detail_in_its_markdown_and_is_valid(project):
    jsonschema = pytest.importorskip("jsonschema")
    document = json.loads(check(project, "sarif", "--no-cache"))
    schema = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema).validate(document)
    items = json.loads(check(project, "json", "--no-cache"))
    messages = [r["message"] for r in document["runs"][0]["results"]]
    assert messages == [
        {"text": i["message"], "markdown": f"{i['message']}\n\n{i['detail']}"} for i in items
    ]


def test_github_annotations_and_junit_give_the_detail_after_the_message(project):
    items = json.loads(check(project, "json", "--no-cache"))
    github = check(project, "github", "--no-cache").splitlines()
    assert [line.rsplit("::", 1)[1].split("%0A") for line in github] == [
        [f"src/{name}: {i['code']} {i['message']}{likely}", i["detail"]]
        for i, name, likely in zip(
            items, ("capture.py:6:10", "stream.py:3:5"), (" [likely]", ""), strict=True
        )
    ]
    from xml.etree import ElementTree

    junit = check(project, "junit", "--no-cache").split("\n", 1)[1]
    failures = list(ElementTree.fromstring(junit).iter("failure"))
    assert [f.get("message") for f in failures] == [i["message"] for i in items]
    assert [(f.text or "").split("\n")[1] for f in failures] == [i["detail"] for i in items]
