"""The CI gate: output formats, SARIF against its schema, baselines, --since, noqa hygiene, stdin,
and the pre-commit hooks run by the real pre-commit tool."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from portlint.docs import REPOSITORY_URL, rule_page, rule_url
from tests.helpers import REPO, run_cli

FORMATS = REPO / "tests" / "data" / "formats"
STEP = FORMATS / "src" / "step.py"


@pytest.fixture
def formats(tmp_path: Path) -> Path:
    """A copy of the format fixture: findings with a safe and an unsafe fix, a stale noqa, and a
    file that does not parse."""
    shutil.copytree(FORMATS, tmp_path / "formats", ignore=shutil.ignore_patterns("expected"))
    return tmp_path / "formats"


@pytest.mark.parametrize("output_format", ["concise", "full", "github", "junit"])
def test_text_formats_have_their_exact_shape(formats, output_format):
    result = run_cli("check", "src", "--output-format", output_format, cwd=formats)
    assert result.returncode == 1
    assert result.stdout == (FORMATS / "expected" / f"{output_format}.txt").read_text()


def test_junit_is_xml_with_one_failure_per_finding(formats):
    result = run_cli("check", "src", "--output-format", "junit", cwd=formats)
    root = ElementTree.fromstring(result.stdout.split("\n", 1)[1])
    cases = [(c.get("name"), c.get("line")) for c in root.iter("testcase")]
    assert cases == [
        ("portlint.invalid-syntax", "3"),
        ("portlint.PORT401", "5"),
        ("portlint.PORT101", "6"),
        ("portlint.PORT001", "7"),
    ]
    clean = run_cli("check", "src/step.py", "--select", "PORT2", "--output-format", "junit",
                    cwd=formats)  # fmt: skip
    assert clean.returncode == 0 and 'name="No errors found"' in clean.stdout


def test_json_lines_holds_the_json_objects_one_per_line(formats):
    lines = run_cli("check", "src", "--output-format", "json-lines", cwd=formats).stdout
    whole = json.loads(run_cli("check", "src", "--output-format", "json", cwd=formats).stdout)
    assert [json.loads(line) for line in lines.splitlines()] == whole
    assert [(o["code"], o["location"]["row"], bool(o["fix"])) for o in whole] == [
        ("invalid-syntax", 3, False),
        ("PORT401", 5, True),
        ("PORT101", 6, True),
        ("PORT001", 7, True),
    ]
    assert whole[1]["fix"]["edits"] == [
        {
            "content": "    torch.accelerator.synchronize()\n",
            "location": {"row": 5, "column": 1},
            "end_location": {"row": 6, "column": 1},
        }
    ]


SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"
LIKELY = 'import torch\n\n\ndef run(x, device="cuda"):\n    return x.to(device)\n'


@pytest.fixture
def scanned(formats: Path) -> Path:
    """The format fixture as a git repository, with a `likely` finding too; linted from ``src``
    (SARIF's paths are relative to the repository root, not to where it ran)."""
    (formats / "src" / "warm.py").write_text(LIKELY)
    git(formats, "init", "-q")
    return formats


def sarif(cwd: Path) -> dict:
    result = run_cli("check", ".", "--output-format", "sarif", cwd=cwd)
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_sarif_is_valid_sarif_2_1_0_with_rules_results_and_fixes(scanned):
    jsonschema = pytest.importorskip("jsonschema")
    document = sarif(scanned / "src")
    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(document)

    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["informationUri"] == REPOSITORY_URL
    rules = driver["rules"]
    assert all(rule["help"]["text"] and rule["shortDescription"]["text"] for rule in rules)
    for rule in rules[:-1]:
        assert rule["helpUri"] == rule_url(rule["name"])
        assert (REPO / rule_page(rule["name"])).is_file()
    assert rules[-1]["id"] == "invalid-syntax" and "helpUri" not in rules[-1]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": scanned.as_uri() + "/"}}
    results = [
        (
            r["ruleId"],
            rules[r["ruleIndex"]]["id"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in run["results"]
    ]
    step = {"uri": "src/step.py", "uriBaseId": "%SRCROOT%"}
    assert results == [
        ("invalid-syntax", "invalid-syntax", "error",
         {"uri": "src/broken.py", "uriBaseId": "%SRCROOT%"}, 3),
        ("PORT401", "PORT401", "error", step, 5),
        ("PORT101", "PORT101", "error", step, 6),
        ("PORT001", "PORT001", "error", step, 7),
        ("PORT101", "PORT101", "warning", {"uri": "src/warm.py", "uriBaseId": "%SRCROOT%"}, 4),
    ]  # fmt: skip
    assert run["results"][1]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5, "startColumn": 5, "endLine": 5, "endColumn": 27
    }  # fmt: skip
    (fix,) = run["results"][1]["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"] == step
    assert change["replacements"][0]["insertedContent"]["text"] == (
        "    torch.accelerator.synchronize()\n"
    )
    assert run["results"][0]["message"]["text"] == "SyntaxError: invalid syntax"


def test_sarif_fingerprints_are_the_baselines_and_survive_moved_lines(scanned):
    def fingerprints(document: dict) -> list[tuple[str, str, int, str]]:
        found = []
        for result in document["runs"][0]["results"]:
            location = result["locations"][0]["physicalLocation"]
            found.append((location["artifactLocation"]["uri"], result["ruleId"],
                          location["region"]["startLine"], result["partialFingerprints"]["portlint/v1"]))  # fmt: skip
        return found

    before = fingerprints(sarif(scanned))
    run_cli("check", ".", "--write-baseline", "baseline.json", cwd=scanned)
    baseline = json.loads((scanned / "baseline.json").read_text())["findings"]
    assert [entry["fingerprint"] for entry in baseline] == [print_ for *_, print_ in before]
    assert len({print_ for *_, print_ in before}) == len(before)

    step = scanned / "src" / "step.py"
    step.write_text("# A new header comment.\n\n\n" + step.read_text())
    assert fingerprints(sarif(scanned)) == [
        (uri, code, line + 3 if uri == "src/step.py" else line, print_)
        for uri, code, line, print_ in before
    ]


def test_sarif_tools_reads_every_result_with_its_level(scanned, tmp_path):
    """A second reader besides the schema: the `sarif-tools` package."""
    loader = pytest.importorskip("sarif.loader")
    path = tmp_path / "portlint.sarif"
    path.write_text(json.dumps(sarif(scanned / "src")))
    sarif_file = loader.load_sarif_file(str(path))
    assert sarif_file.get_distinct_tool_names() == ["portlint"]
    records = [
        (r["Code"], r["Location"], r["Line"], r["Severity"]) for r in sarif_file.get_records()
    ]
    assert records == [
        ("invalid-syntax", "src/broken.py", 3, "error"),
        ("PORT401", "src/step.py", 5, "error"),
        ("PORT101", "src/step.py", 6, "error"),
        ("PORT001", "src/step.py", 7, "error"),
        ("PORT101", "src/warm.py", 4, "warning"),
    ]


def test_a_schema_violation_would_be_caught():
    """The validator is not vacuous: a result without a message fails it."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema).validate(broken)


# --- Baselines ----------------------------------------------------------------------------------
def test_baseline_survives_shifted_lines_and_fails_on_a_new_finding(formats):
    written = run_cli("check", "src", "--write-baseline", "baseline.json", cwd=formats)
    assert written.returncode == 0
    assert "wrote 4 findings to baseline.json" in written.stderr
    assert run_cli("check", "src", "--baseline", "baseline.json", cwd=formats).returncode == 0

    step = formats / "src" / "step.py"
    shifted = "# A new header comment.\n\n\n" + step.read_text()
    step.write_text(shifted)
    result = run_cli("check", "src", "--baseline", "baseline.json", cwd=formats)
    assert (result.returncode, result.stdout.splitlines()) == (
        0,
        ["All checks passed!", "(4 findings that the baseline holds not shown.)"],
    )

    step.write_text(shifted.replace("    return x + y", "    z = x.cuda()\n    return x + y"))
    result = run_cli("check", "src", "--baseline", "baseline.json", "-q", cwd=formats)
    assert result.returncode == 1
    assert [line.split(": ")[1].split()[0] for line in result.stdout.splitlines()] == ["PORT102"]


def test_a_copied_baselined_line_is_new(formats):
    run_cli("check", "src", "--write-baseline", "baseline.json", cwd=formats)
    step = formats / "src" / "step.py"
    step.write_text(step.read_text() + "\n\ndef again():\n    torch.cuda.synchronize()\n")
    result = run_cli("check", "src", "--baseline", "baseline.json", "-q", cwd=formats)
    assert result.stdout.splitlines() == [
        "src/step.py:11:5: PORT401 [*] CUDA-only `torch.cuda.synchronize`; use "
        "`torch.accelerator.synchronize`"
    ]


def test_an_unreadable_baseline_is_a_clear_error(formats):
    (formats / "baseline.json").write_text("{not json")
    result = run_cli("check", "src", "--baseline", "baseline.json", cwd=formats)
    assert result.returncode == 2
    assert result.stderr.startswith("portlint: error: cannot read baseline baseline.json")
    assert "Traceback" not in result.stderr


# --- --since --------------------------------------------------------------------------------------
def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_since_reports_only_findings_on_changed_lines(formats):
    git(formats, "init", "-q")
    git(formats, "add", ".")
    git(formats, "commit", "-qm", "start")
    step = formats / "src" / "step.py"
    step.write_text(
        step.read_text().replace("    return x + y", "    z = x.cuda()\n    return x + y")
    )
    (formats / "src" / "new.py").write_text("import torch\nd = torch.device('cuda')\n")
    result = run_cli("check", "src", "--since", "HEAD", "-q", cwd=formats)
    assert result.returncode == 1
    assert [line.split(": ")[0] + " " + line.split(": ")[1].split()[0]
            for line in result.stdout.splitlines()] == [
        "src/new.py:2:5 PORT101",
        "src/step.py:7:11 PORT102",
    ]  # fmt: skip
    git(formats, "add", ".")
    git(formats, "commit", "-qm", "more")
    assert run_cli("check", "src", "--since", "HEAD", cwd=formats).returncode == 0
    bad = run_cli("check", "src", "--since", "no-such-rev", cwd=formats)
    assert bad.returncode == 2
    assert bad.stderr == "portlint: error: --since: unknown git revision 'no-such-rev'\n"


# --- noqa hygiene -------------------------------------------------------------------------------
def test_fix_removes_a_stale_noqa(formats):
    result = run_cli("check", "src/step.py", "--fix", cwd=formats)
    assert result.returncode == 1  # the hardcoded device is left: its fix is unsafe
    assert (formats / "src" / "step.py").read_text() == textwrap.dedent(
        """\
        import torch


        def step(worker, x):
            torch.accelerator.synchronize()
            y = torch.zeros(2, device="cuda")
            return x + y
        """
    )


@pytest.mark.parametrize(
    ("line", "fixed"),
    [
        ("x = 1  # noqa: PORT401 -- profiler, NVIDIA only\n", "x = 1\n"),
        ("x = 1  # noqa: PORT401 \u2014 profiler\n", "x = 1\n"),
        (
            "x = 1  # noqa: PORT401  see the profiler's page\n",
            "x = 1  #  see the profiler's page\n",
        ),
    ],
)
def test_removing_a_stale_noqa_takes_its_reason_and_keeps_other_comments(line, fixed):
    from portlint.api import fix_text, make_settings

    assert fix_text(line, settings=make_settings(select=["PORT001"])).source == fixed


def test_add_noqa_suppresses_every_finding_and_leaves_strings_alone(formats):
    """Each finding gets its code; a directive's stale code goes (as ruff's `--add-noqa`)."""
    (formats / "src" / "more.py").write_text(
        'import torch\nx = torch.device("cuda")  # noqa: E501\n'
        'y = (torch.device("cuda"), """\ntext""")\nz = x.cuda()\n'
    )
    result = run_cli("check", "src/step.py", "src/more.py", "--add-noqa", cwd=formats)
    assert result.returncode == 0
    assert result.stdout == "Added 5 noqa directives.\n"
    assert "src/more.py:3: no comment can go on this line" in result.stderr
    assert (formats / "src" / "more.py").read_text() == (
        'import torch\nx = torch.device("cuda")  # noqa: E501, PORT101\n'
        'y = (torch.device("cuda"), """\ntext""")\nz = x.cuda()  # noqa: PORT102\n'
    )
    assert (formats / "src" / "step.py").read_text() == textwrap.dedent(
        """\
        import torch


        def step(worker, x):
            torch.cuda.synchronize()  # noqa: PORT401
            y = torch.zeros(2, device="cuda")  # noqa: PORT101
            return x + y
        """
    )
    again = run_cli("check", "src/step.py", "src/more.py", "-q", cwd=formats)
    assert again.stdout.splitlines() == [
        "src/more.py:3:6: PORT101 `torch.device` hardcodes CUDA; use "
        "`torch.accelerator.current_accelerator()`"
    ]


# --- stdin --------------------------------------------------------------------------------------
def test_stdin_is_linted_under_the_given_filename(formats):
    source = STEP.read_text()
    result = run_cli("check", "-", "--stdin-filename", "src/step.py", "-q", cwd=formats,
                     stdin=source)  # fmt: skip
    assert result.returncode == 1
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        "src/step.py:5:5",
        "src/step.py:6:31",
        "src/step.py:7:19",
    ]
    (formats / "pyproject.toml").write_text(
        '[tool.portlint]\nper-file-ignores = { "src/*" = ["PORT1", "PORT4", "PORT001"] }\n'
    )
    ignored = run_cli("check", "-", "--stdin-filename", "src/step.py", cwd=formats, stdin=source)
    assert ignored.returncode == 0


def test_stdin_fix_prints_the_fixed_source_and_findings_go_to_stderr(formats):
    result = run_cli("check", "-", "--stdin-filename", "src/step.py", "--fix", cwd=formats,
                     stdin=STEP.read_text())  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == STEP.read_text().replace(
        "torch.cuda.synchronize()", "torch.accelerator.synchronize()"
    ).replace("  # noqa: PORT102", "")
    assert result.stderr.startswith("src/step.py:6:31: PORT101 ")
    assert STEP.read_text().count("torch.cuda.synchronize()") == 1  # nothing written


def test_stdin_that_does_not_parse_is_a_diagnostic(formats):
    source = "import torch\ndef f(:\n    torch.cuda.synchronize()\n"
    result = run_cli("check", "-", "-q", cwd=formats, stdin=source)
    assert (result.returncode, result.stdout) == (1, "-:2:7: SyntaxError: invalid syntax\n")


# --- pre-commit ---------------------------------------------------------------------------------
def test_force_exclude_applies_excludes_to_named_files(formats):
    (formats / "pyproject.toml").write_text('[tool.portlint]\nextend-exclude = ["src"]\n')
    assert run_cli("check", "src/step.py", cwd=formats).returncode == 1
    forced = run_cli("check", "src/step.py", "--force-exclude", cwd=formats)
    assert (forced.returncode, forced.stdout) == (0, "All checks passed!\n")


def readme_pre_commit_config() -> str:
    """The `.pre-commit-config.yaml` snippet of the README, as written there."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.DOTALL)
    (snippet,) = [block for block in blocks if "- id: portlint\n" in block and "rev:" in block]
    return snippet


def test_the_readme_pins_a_commit_of_this_repository_with_todays_hooks():
    """The pinned `rev` exists here, and its hooks are the ones the working tree defines (a
    change to .pre-commit-hooks.yaml needs a new pin)."""
    (rev,) = re.findall(r"^\s+rev: (\S+)$", readme_pre_commit_config(), re.MULTILINE)
    assert re.fullmatch(r"[0-9a-f]{40}", rev)
    pinned = subprocess.run(["git", "show", f"{rev}:.pre-commit-hooks.yaml"], cwd=REPO,
                            capture_output=True, text=True, check=True)  # fmt: skip
    assert pinned.stdout == (REPO / ".pre-commit-hooks.yaml").read_text()


def pre_commit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit run ARGS` in ``cwd``, with a pre-commit home of its own."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(cwd.parent / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    command = [sys.executable, "-m", "pre_commit", "run", *args, "--color", "never"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.network  # (pre-commit installs the hook's environment with pip)
def test_the_readme_pre_commit_snippet_fails_then_fixes_then_passes_and_skips(tmp_path):
    """The README's snippet as written, this repository's clone standing in for its address."""
    pytest.importorskip("pre_commit")
    config = readme_pre_commit_config()
    assert f"repo: {REPOSITORY_URL}\n" in config
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(config.replace(REPOSITORY_URL, str(REPO)))
    (repo / "step.py").write_text("import torch\n\n\ndef step():\n    torch.cuda.synchronize()\n")
    git(repo, "add", ".pre-commit-config.yaml", "step.py")

    failed = pre_commit(repo, "portlint", "--all-files")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "step.py:5:5: PORT401" in failed.stdout

    fixed = pre_commit(repo, "portlint-fix", "--all-files")
    assert fixed.returncode == 1 and "files were modified by this hook" in fixed.stdout
    assert (repo / "step.py").read_text().endswith("    torch.accelerator.synchronize()\n")
    git(repo, "add", "step.py")
    passed = pre_commit(repo)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.count("Passed") == 2

    git(repo, "commit", "-qm", "step")
    (repo / "notes.txt").write_text("no python here\n")
    git(repo, "add", "notes.txt")
    skipped = pre_commit(repo, "portlint")
    assert skipped.returncode == 0
    assert "(no files to check)Skipped" in skipped.stdout
