"""``[tool.portlint]`` in pyproject.toml, merged with command-line overrides into ``Settings``.

Each file gets the settings of the closest pyproject.toml above it that has a ``[tool.portlint]``
table (as ruff does: :class:`Configurations`); such a table can inherit another's with
``extend = "../pyproject.toml"``. Everything read is checked, type by type: a configuration that
cannot be used is one :class:`ConfigError` (one line, exit 2), never a traceback.
"""

from __future__ import annotations

import ast
import os
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
    "extend",
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
    """Settings given on the command line; None where not given.

    ``table``: ``--config 'KEY = VALUE'`` options, laid over every configuration file's table.
    ``exclude`` and ``per_file_ignores`` replace the configured ones; the ``extend_`` ones add.
    """

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    target_torch_version: str | None = None
    table: dict[str, Any] = field(default_factory=dict)
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] | None = None
    extend_per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    ignore_noqa: bool = False
    partial_parse: bool = True


def find_pyproject(start: Path, known: dict[str, Path | None] | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a ``[tool.portlint]`` table.
    ``known``: what earlier calls found, per resolved folder (a run asks for every folder)."""
    start = start.resolve()
    return _nearest_pyproject(str(start if start.is_dir() else start.parent), known or {})


def _nearest_pyproject(folder: str, known: dict[str, Path | None]) -> Path | None:
    """:func:`find_pyproject` from a resolved folder, remembered in ``known`` for it and every
    folder looked at above it."""
    looked: list[str] = []
    found = None
    while True:
        if folder in known:
            found = known[folder]
            break
        looked.append(folder)
        candidate = Path(folder, "pyproject.toml")
        if candidate.is_file() and _portlint_table(_read_toml(candidate), candidate) is not None:
            found = candidate
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in looked:
        known[folder] = found
    return found


def inline_table(option: str) -> dict[str, Any]:
    """A ``--config 'KEY = VALUE'`` option as a table, checked as ``[tool.portlint]`` is."""
    where = f"--config {option!r}"
    try:
        table = tomllib.loads(option)
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        raise ConfigError(f"{where}: not a TOML `KEY = VALUE` pair: {error}") from None
    _validate(table, where)
    if "extend" in table:
        raise ConfigError(f"{where}: extend works in a configuration file only")
    return table


def load_settings(config_path: Path | None, overrides: Overrides, cwd: Path) -> Settings:
    """The settings of the configuration file ``config_path`` (None: the defaults, rooted at
    ``cwd``), with the command line's ``overrides``."""
    table: dict[str, Any] = {}
    document: dict[str, Any] = {}
    root = cwd
    if config_path is not None:
        table, document = _load(config_path.resolve(), ())
        root = config_path.resolve().parent
    table = {**table, **overrides.table}
    where = str(config_path) if config_path else "the command line"

    # As ruff layers them: the configuration's selection, then the command line's on top (its
    # `--select` starts afresh; its `--extend-select` adds back what the configuration ignores).
    enabled = _expand(table.get("select", ["ALL"]), where)
    enabled |= _expand(table.get("extend-select", []), where)
    enabled -= _expand(table.get("ignore", []), where)
    if overrides.select is not None:
        enabled = _expand(overrides.select, "the command line")
    enabled |= _expand(overrides.extend_select, "the command line")
    enabled -= _expand(overrides.ignore, "the command line")

    per_file_table = overrides.per_file_ignores
    if per_file_table is None:
        per_file_table = table.get("per-file-ignores", {})
    per_file_table = {**per_file_table, **overrides.extend_per_file_ignores}
    per_file = tuple(
        (pattern, frozenset(_expand(codes, f"{where}: per-file-ignores")))
        for pattern, codes in per_file_table.items()
    )
    exclude = overrides.exclude
    if exclude is None:
        exclude = table.get("exclude", list(DEFAULT_EXCLUDE))
    exclude = [*exclude, *table.get("extend-exclude", []), *overrides.extend_exclude]
    return Settings(
        root=str(root),
        select=frozenset(enabled),
        per_file_ignores=per_file,
        exclude=tuple(exclude),
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
        ignore_noqa=overrides.ignore_noqa,
        partial_parse=overrides.partial_parse,
    )


class Configurations:
    """The settings of each file: those of the closest pyproject.toml with ``[tool.portlint]`` at
    or above it (ruff's hierarchical configuration), or those of ``config_file`` for every file
    where one is given (``--config FILE``); the defaults where there is none. The command line's
    ``overrides`` apply to each. Files are looked up per folder, and settings built once per
    configuration."""

    def __init__(self, overrides: Overrides, cwd: Path, config_file: Path | None = None):
        self.overrides = overrides
        self.cwd = cwd
        self.config_file = config_file
        self._by_folder: dict[str, Path | None] = {}  # per folder as given
        self._by_resolved: dict[str, Path | None] = {}  # per resolved folder, and those above
        self._resolved: dict[str, str] = {}  # each folder as given, resolved
        self._settings: dict[Path | None, Settings] = {}

    def config_for(self, path: Path) -> Path | None:
        """The configuration file that applies to ``path`` (a file or a folder)."""
        if self.config_file is not None:
            return self.config_file
        # A source file's is its folder's (found once per folder: a run asks for every file).
        name = os.fspath(path)
        folder = os.path.dirname(name) if name.endswith((".py", ".pyi")) else name
        if folder not in self._by_folder:
            absolute = self._resolve(folder)
            if not os.path.isdir(absolute):
                absolute = os.path.dirname(absolute)
            self._by_folder[folder] = _nearest_pyproject(absolute, self._by_resolved)
        return self._by_folder[folder]

    def _resolve(self, folder: str) -> str:
        """``folder`` (relative to the working folder, or absolute) resolved: from its parent's
        resolved form where it is not a link (one ``lstat`` rather than one per part)."""
        if folder not in self._resolved:
            parent, name = os.path.split(folder)
            if (
                parent
                and name not in ("", ".", "..")
                and not os.path.islink(os.path.join(self.cwd, folder))
            ):
                resolved = os.path.join(self._resolve(parent), name)
            else:
                resolved = os.path.realpath(os.path.join(self.cwd, folder))
            self._resolved[folder] = resolved
        return self._resolved[folder]

    def settings_for(self, path: Path) -> Settings:
        return self.settings_of(self.config_for(path))

    def settings_of(self, config: Path | None) -> Settings:
        if config not in self._settings:
            self._settings[config] = load_settings(config, self.overrides, self.cwd)
        return self._settings[config]

    def config_of(self, settings: Settings) -> Path | None:
        """The configuration file ``settings`` were built from (None: the defaults)."""
        return next(config for config, built in self._settings.items() if built is settings)


# Keys whose values an extending table adds to the base's instead of replacing them.
ADDED_BY_EXTEND = (
    "extend-select",
    "extend-exclude",
    "extend-cuda-only-imports",
    "extend-noqa-markers",
)


def _load(path: Path, chain: tuple[Path, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``[tool.portlint]`` table of ``path`` with those it extends merged under it, and the
    whole document (whose project's torch requirement is the default target)."""
    document = _read_toml(path)
    table = _portlint_table(document, path) or {}
    _validate(table, str(path))
    _check_project(document, path)
    base_file = table.get("extend")
    if base_file is None:
        return table, document
    base_path = (path.parent / base_file).resolve()
    if base_path in (*chain, path):
        raise ConfigError(f"{path}: extend = {base_file!r} extends itself (a cycle)")
    if not base_path.is_file():
        raise ConfigError(f"{path}: extend = {base_file!r}: no such file")
    base, _ = _load(base_path, (*chain, path))
    merged = {**base, **table}
    for key in ADDED_BY_EXTEND:
        merged[key] = [*base.get(key, []), *table.get(key, [])]
    merged["per-file-ignores"] = {
        **base.get("per-file-ignores", {}),
        **table.get("per-file-ignores", {}),
    }
    del merged["extend"]
    return merged, document


def _portlint_table(document: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """``[tool.portlint]``, None where the document has none; a ConfigError where ``tool`` or
    ``tool.portlint`` is not a table."""
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {_toml_type(tool)}")
    table = tool.get("portlint")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: `tool.portlint` must be a table, not {_toml_type(table)}")
    return table


def _check_project(document: dict[str, Any], path: Path) -> None:
    """The parts of the document that portlint reads besides its table (where the project's
    torch requirement is): each of the type the packaging standards give it."""
    for key, kind in (("project", dict), ("build-system", dict)):
        if not isinstance(document.get(key, {}), kind):
            raise ConfigError(f"{path}: `{key}` must be a table, not {_toml_type(document[key])}")
    project, build = document.get("project", {}), document.get("build-system", {})
    groups = project.get("optional-dependencies", {})
    if not isinstance(groups, dict):
        raise ConfigError(
            f"{path}: `project.optional-dependencies` must be a table, not {_toml_type(groups)}"
        )
    lists = {
        "project.dependencies": project.get("dependencies", []),
        "build-system.requires": build.get("requires", []),
        **{f"project.optional-dependencies.{name}": group for name, group in groups.items()},
    }
    for key, value in lists.items():
        if not _is_str_list(value):
            raise ConfigError(f"{path}: `{key}` must be an array of strings")


def _toml_type(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return "an array of tables"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
             list: "an array", dict: "a table"}  # fmt: skip
    return kinds.get(type(value), "a date or time")


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
    project = document.get("project", {})  # (types checked on reading: _check_project)
    groups = [
        project.get("dependencies", []),
        *project.get("optional-dependencies", {}).values(),
        document.get("build-system", {}).get("requires", []),
    ]
    for group in groups:
        for requirement in group:
            match = TORCH_REQUIREMENT.match(requirement)
            if match:
                return parse_version(match.group(1))
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"cannot read {path}: not UTF-8 (byte {error.start})") from None
    except RecursionError:
        raise ConfigError(f"cannot read {path}: a value is nested too deeply") from None


def _validate(table: dict[str, Any], path: str) -> None:
    """Every key known and of its type (``path``: where the table comes from, for messages)."""
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
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise ConfigError(
                f"{path}: [tool.portlint] device-expression is not a Python expression: {expression!r}"
            ) from None
    if not isinstance(table.get("respect-gitignore", True), bool):
        raise ConfigError(f"{path}: [tool.portlint] respect-gitignore must be true or false")
    if not isinstance(table.get("extend", ""), str):
        raise ConfigError(f"{path}: [tool.portlint] extend must be the path of a pyproject.toml")
    if not isinstance(table.get("target-torch-version", ""), str):
        raise ConfigError(f'{path}: [tool.portlint] target-torch-version must look like "2.9"')


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
