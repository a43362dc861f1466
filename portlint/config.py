"""``[tool.portlint]`` in pyproject.toml, merged with command-line overrides into ``Settings``."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portlint.cuda_api import parse_version
from portlint.facts import CUDA_ONLY_LIBRARIES
from portlint.platform import INFERENCES
from portlint.registry import expand_selector
from portlint.settings import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    # Installed on Python 3.10 only, as which mypy checks wherever it runs: maybe absent.
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


class ConfigError(Exception):
    """A configuration that cannot be used; the CLI prints it and exits 2."""


LIST_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "exclude",
    "extend-exclude",
    "stream-functions",
    "guard-functions",
    "cuda-only-paths",
    "platform-inferences",
    "cuda-only-imports",
    "extend-cuda-only-imports",
    "extend-noqa-markers",
)
KNOWN_KEYS = (
    *LIST_KEYS,
    "per-file-ignores",
    "respect-gitignore",
    "device-expression",
    "target-torch-version",
)
# A torch requirement's lower bound: `torch>=2.6`, `torch==2.9.0`, `torch ~= 2.7`, `torch[opt]>=2.8`.
TORCH_REQUIREMENT = re.compile(
    r"^\s*torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*[^;]*?(?:===?|>=|~=)\s*(\d+\.\d+)"
)

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".portlint_cache", ".pyenv", ".pytest_cache", ".pytype",
    ".ruff_cache", ".svn", ".tox", ".venv", ".vscode", "__pycache__", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip


@dataclass
class Overrides:
    """Settings given on the command line; None where not given."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    target_torch_version: str | None = None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.portlint]`` table."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else start.parents:
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and "portlint" in _read_toml(candidate).get("tool", {}):
            return candidate
    return None


def load_settings(config_path: Path | None, overrides: Overrides, cwd: Path) -> Settings:
    table: dict[str, Any] = {}
    document: dict[str, Any] = {}
    root = cwd
    if config_path is not None:
        document = _read_toml(config_path)
        table = document.get("tool", {}).get("portlint", {})
        root = config_path.resolve().parent
        _validate(table, config_path)
    where = str(config_path) if config_path else "the command line"

    select = overrides.select if overrides.select is not None else table.get("select", ["ALL"])
    enabled = _expand(select, where)
    enabled |= _expand([*table.get("extend-select", []), *overrides.extend_select], where)
    enabled -= _expand([*table.get("ignore", []), *overrides.ignore], where)

    per_file = tuple(
        (pattern, frozenset(_expand(codes, f"{where}: per-file-ignores")))
        for pattern, codes in table.get("per-file-ignores", {}).items()
    )
    exclude = tuple(table.get("exclude", DEFAULT_EXCLUDE)) + tuple(table.get("extend-exclude", []))
    return Settings(
        root=str(root),
        select=frozenset(enabled),
        per_file_ignores=per_file,
        exclude=exclude,
        respect_gitignore=table.get("respect-gitignore", True),
        stream_functions=tuple(table.get("stream-functions", [])),
        guard_functions=tuple(table.get("guard-functions", [])),
        cuda_only_paths=tuple(table.get("cuda-only-paths", [])),
        platform_inferences=frozenset(table.get("platform-inferences", INFERENCES)),
        cuda_only_imports=(
            *table.get("cuda-only-imports", CUDA_ONLY_LIBRARIES),
            *table.get("extend-cuda-only-imports", []),
        ),
        noqa_markers=tuple(table.get("extend-noqa-markers", [])),
        device_expression=table.get("device-expression", ""),
        target_torch_version=_target_torch_version(overrides, table, document, where),
    )


def _target_torch_version(
    overrides: Overrides, table: dict[str, Any], document: dict[str, Any], where: str
) -> tuple[int, int] | None:
    """From the command line, else ``target-torch-version``, else the project's torch requirement.

    None (every version portlint knows) when none of them says.
    """
    given = overrides.target_torch_version or table.get("target-torch-version")
    if given is not None:
        try:
            return parse_version(str(given))
        except ValueError:
            source = "--target-torch-version" if overrides.target_torch_version else where
            raise ConfigError(
                f'{source}: target-torch-version must look like "2.9", not {given!r}'
            ) from None
    return _required_torch(document)


def _required_torch(document: dict[str, Any]) -> tuple[int, int] | None:
    """The lower bound of the first torch requirement in the project's dependencies."""
    project = document.get("project", {})
    groups = [
        project.get("dependencies", []),
        *project.get("optional-dependencies", {}).values(),
        document.get("build-system", {}).get("requires", []),
    ]
    for group in groups:
        for requirement in group if isinstance(group, list) else []:
            match = TORCH_REQUIREMENT.match(str(requirement))
            if match:
                return parse_version(match.group(1))
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None


def _validate(table: dict[str, Any], path: Path) -> None:
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [tool.portlint]: {', '.join(unknown)} "
            f"(known: {', '.join(KNOWN_KEYS)})"
        )
    for key in LIST_KEYS:
        if key in table and not _is_str_list(table[key]):
            raise ConfigError(f"{path}: [tool.portlint] {key} must be a list of strings")
    unknown_inferences = sorted(set(table.get("platform-inferences", [])) - set(INFERENCES))
    if unknown_inferences:
        raise ConfigError(
            f"{path}: [tool.portlint] platform-inferences: unknown {', '.join(unknown_inferences)} "
            f"(known: {', '.join(INFERENCES)})"
        )
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict) or not all(_is_str_list(v) for v in per_file.values()):
        raise ConfigError(
            f"{path}: [tool.portlint] per-file-ignores must map glob patterns to lists of codes"
        )
    expression = table.get("device-expression", "")
    if not isinstance(expression, str):
        raise ConfigError(f"{path}: [tool.portlint] device-expression must be a string")
    if expression:
        try:
            ast.parse(expression, mode="eval")
        except SyntaxError:
            raise ConfigError(
                f"{path}: [tool.portlint] device-expression is not a Python expression: {expression!r}"
            ) from None
    if not isinstance(table.get("respect-gitignore", True), bool):
        raise ConfigError(f"{path}: [tool.portlint] respect-gitignore must be true or false")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _expand(selectors: list[str], where: str) -> set[str]:
    codes: set[str] = set()
    for selector in selectors:
        try:
            codes |= expand_selector(selector.strip())
        except KeyError:
            raise ConfigError(
                f"unknown rule selector {selector!r} in {where} (see `portlint rules`)"
            ) from None
    return codes
