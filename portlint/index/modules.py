"""The modules of a project by name: the dotted name Python imports each file as, and what a name
that one module uses is in another (through its imports, and the re-exports of packages)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from portlint.settings import Settings

MAX_REEXPORTS = 8  # how many `from .impl import f` hops a name is followed through


def module_name(path: str, packages: dict[str, str] | None = None, portions: bool = True) -> str:
    """The dotted name Python imports ``path`` as: its folders up to the first that is not a
    package (has no ``__init__.py`` and, with ``portions``, is not inside one). ``packages``
    caches, per folder, its dotted name (one cache for each value of ``portions``)."""
    packages = {} if packages is None else packages
    given, file = os.path.split(path)
    if given not in packages:  # (the folder as given too: `abspath` asks for the cwd each time)
        packages[given] = _package_of(os.path.abspath(given), packages, portions)
    stem = file[: -len(".py")] if file.endswith(".py") else file
    prefix = packages[given]
    if stem == "__init__":
        return prefix
    return f"{prefix}.{stem}" if prefix else stem


def namespace_of(path: str, module: str) -> str | None:
    """The name of the folder above the top-level package that ``path`` (imported as
    ``module``, with no namespace) is in, where that could be a namespace package (PEP 420):
    ``fairchem`` for ``fairchem/core/models/x.py`` (``core.models.x``), where ``fairchem/`` has
    no ``__init__.py``. None for a top-level module, or a folder whose name Python cannot
    import."""
    depth = module.count(".") + (os.path.basename(path) == "__init__.py")
    if not depth:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(depth):
        folder = os.path.dirname(folder)
    name = os.path.basename(folder)
    return name if name.isidentifier() else None


def _package_of(folder: str, packages: dict[str, str], portions: bool = True) -> str:
    """The dotted name of ``folder`` as a package: one with an ``__init__.py``, or (``portions``)
    a folder without one inside a package (a namespace portion, PEP 420: ``sglang/srt/`` in the
    package ``sglang`` is ``sglang.srt``); "" for a folder that is neither."""
    if folder not in packages:
        above, name = os.path.dirname(folder), os.path.basename(folder)
        parent = _package_of(above, packages, portions) if above != folder else ""
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            packages[folder] = f"{parent}.{name}" if parent else name
        else:
            portion = portions and parent and name.isidentifier()
            packages[folder] = f"{parent}.{name}" if portion else ""
    return packages[folder]


def sys_path_name(path: str, module: str, packages: dict[str, str]) -> str | None:
    """The name ``path`` (named ``module``) has where the folder without ``__init__.py`` above
    its package is put on ``sys.path`` (``interface`` for a vendored ``fmha/cute/interface.py``
    whose neighbours import it so), where that differs from ``module``. ``packages``: a cache
    of its own (not :func:`module_name`'s)."""
    short = module_name(path, packages, portions=False)
    return short if short != module and module.endswith(f".{short}") else None


class ModuleNames:
    """The modules of one run by their dotted names, and what the names they use are: the base of
    the project index (:class:`~portlint.index.project.Project`)."""

    def __init__(
        self,
        facts: MutableMapping[str, dict[str, Any]],
        settings: Settings,
        packages: frozenset[str],
        namespaces: dict[str, str] | None,
    ) -> None:
        """``namespaces``: what :meth:`_namespaces` found for the same modules (None: find it)."""
        self.settings = settings
        self.packages = packages
        self.facts = facts
        folders: dict[str, str] = {}
        # (in the order of their paths: where two files have one name, the same one wins in
        # every run, whatever order the facts came in)
        self.module_of = {path: module_name(path, folders) for path in sorted(facts)}
        self.namespaces = namespaces if namespaces is not None else self._namespaces()
        for path, module in self.module_of.items():
            namespace = self.namespaces.get(module.partition(".")[0])
            if namespace is not None and namespace == namespace_of(path, module):
                self.module_of[path] = f"{namespace}.{module}"  # (not a `model.py` elsewhere)
        self.path_of = {name: path for path, name in self.module_of.items()}
        self.aliases = self._aliases()
        self.is_package = {path: os.path.basename(path) == "__init__.py" for path in facts}
        self._defined: dict[str, set[str]] = {}  # per module, its functions and classes
        self._bound: dict[str, dict[str, list]] = {}  # per module, its bindings by local name
        self._shown: dict[str, str] = {}

    def _namespaces(self) -> dict[str, str]:
        """The top-level packages of the tree that are parts of a namespace package (PEP 420:
        a folder with no ``__init__.py``, ``fairchem/`` of ``fairchem/core/``), each with the
        namespace's name: those that the project's code imports by that name (``from
        fairchem.core.models import x``); Python finds no other name for them. A folder above
        packages that nothing imports so (``src/``) is not one."""
        candidates: dict[str, str] = {}
        for path, module in self.module_of.items():
            namespace = namespace_of(path, module)
            if namespace is not None:
                candidates.setdefault(module.partition(".")[0], namespace)
        imported = {
            tuple(row[0].split(".", 2)[:2])
            for data in (self.facts.values() if candidates else ())
            for row in data["imports"]
        }
        return {top: name for top, name in candidates.items() if (name, top) in imported}

    def in_order(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each path and its facts, in the order of the paths (whatever order the facts came
        in: what is joined first, and named first in a reason, is the same in every run)."""
        return ((path, self.facts[path]) for path in self.module_of)

    def _aliases(self) -> dict[str, str]:
        """The top-level names that modules in a folder without ``__init__.py`` inside a
        package have where code puts that folder on ``sys.path`` (:func:`sys_path_name`), each
        with the dotted prefix it stands for; a name two folders give, or one the project's
        own top-level names hold, is none."""
        plain: dict[str, str] = {}
        found: dict[str, set[str]] = defaultdict(set)
        for path, module in self.module_of.items():
            short = sys_path_name(path, module, plain)
            if short is not None:
                top = short.partition(".")[0]
                found[top].add(module[: len(module) - len(short)] + top)
        tops = {module.partition(".")[0] for module in self.path_of}
        return {top: prefixes.pop() for top, prefixes in found.items()
                if len(prefixes) == 1 and top not in tops}  # fmt: skip

    def _absolute(self, path: str, module: str) -> str:
        """``module`` as imported in ``path`` (``..x`` relative to its package), made absolute;
        a name that only a folder put on ``sys.path`` gives, as the project names it."""
        level = len(module) - len(module.lstrip("."))
        if not level:
            top, dot, rest = module.partition(".")
            if module in self.path_of or top not in self.aliases:
                return module
            return self.aliases[top] + dot + rest
        package = self.module_of[path]
        if not self.is_package[path]:
            package = package.rpartition(".")[0]
        for _ in range(level - 1):
            package = package.rpartition(".")[0]
        rest = module[level:]
        return f"{package}.{rest}" if package and rest else package or rest

    def _resolve(self, path: str, name: str) -> tuple[str, str] | str | None:
        """What a dotted use in ``path`` names: a function or class of the project (``(module,
        qualified name)``), a module of it (its name), or None (not the project's)."""
        parts = name.split(".")
        binding = self._bindings(self.module_of[path]).get(parts[0])
        if binding is None:
            return None
        source, attribute, _ = binding
        if source == "":
            return (self.module_of[path], attribute)
        current: tuple[str, str] | str | None = self._absolute(path, source)
        if attribute:
            current = self._member(current, attribute)
        elif source.startswith(".") or current not in self.path_of:
            current = current if current in self.path_of else None
        for part in parts[1:]:
            if not isinstance(current, str):
                break
            current = self._member(current, part)
        return current

    def _member(self, module: Any, name: str, hops: int = 0) -> tuple[str, str] | str | None:
        """``module.name``: a submodule, a function or class defined there, or one it imports
        from elsewhere (a package ``__init__`` re-exporting ``from .impl import f``)."""
        if not isinstance(module, str) or module not in self.path_of:
            return None
        if f"{module}.{name}" in self.path_of:
            return f"{module}.{name}"
        if name in self._defines(module):
            return (module, name)
        binding = self._bindings(module).get(name)
        if binding is None or binding[0] == "" or hops >= MAX_REEXPORTS:
            return None
        source, attribute, _ = binding
        target = self._absolute(self.path_of[module], source)
        if not attribute:
            return target if target in self.path_of else None
        return self._member(target, attribute, hops + 1)

    def _bindings(self, module: str) -> dict[str, list]:
        """What each name that ``module`` binds at its top level is: (source, attribute, line)."""
        if module not in self._bound:
            rows = self.facts[self.path_of[module]]["bindings"]
            self._bound[module] = {row[0]: row[1:] for row in rows}
        return self._bound[module]

    def _defines(self, module: str) -> set[str]:
        """The qualified names of the functions and classes ``module`` defines."""
        if module not in self._defined:
            self._defined[module] = {row[0] for row in self.facts[self.path_of[module]]["units"]}
        return self._defined[module]

    def _export(self, path: str, module: str, name: str) -> tuple[str, str, str] | None:
        """What the project's module ``module`` (as ``path`` imports it) exports as ``name``
        (its kind and why, and the module's path), following re-exports."""
        module = self._absolute(path, module)
        for _ in range(MAX_REEXPORTS):
            if module not in self.path_of or f"{module}.{name}" in self.path_of:
                return None
            module_path = self.path_of[module]
            found = self.facts[module_path].get("platform", {}).get(name)
            if found is not None:
                return found[0], found[1], self.shown(module_path)
            reexport = self._bindings(module).get(name)
            if reexport is None or not reexport[0] or not reexport[1]:
                return None
            module, name = self._absolute(module_path, reexport[0]), reexport[1]
        return None

    def kernel(self, path: str, names: list[str]) -> tuple[str, str, int, list, dict] | None:
        """The project's Triton kernel that one of ``names`` (qualified names of a launched
        expression in ``path``, as the rules give them: ``pkg.kernels.k``, ``.kernels.k``,
        ``k``) is: its path, name, line, parameters and needs."""
        for name in names:
            target = self.resolve_name(path, name)
            if target is not None:
                found = self.facts[target[0]].get("kernels", {}).get(target[1])
                if found is not None:
                    line, parameters, needs = found
                    return target[0], target[1], line, parameters, needs
        return None

    def resolve_name(self, path: str, name: str) -> tuple[str, str] | None:
        """The function or class of the project that ``name`` is in ``path`` (as written there,
        or qualified as the rules give it), as its module's path and its name."""
        target = self._resolve(path, name) if name and path in self.facts else None
        if not isinstance(target, tuple) and path in self.facts:
            target = self._qualified(path, name)
        if isinstance(target, tuple) and target[0] in self.path_of:
            return self.path_of[target[0]], target[1]
        return None

    def _qualified(self, path: str, name: str) -> tuple[str, str] | str | None:
        module = self.module_of[path]
        if "." not in name:
            return self._member(module, name)
        absolute = self._absolute(path, name) if name.startswith(".") else name
        parts = absolute.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.path_of:
                current: tuple[str, str] | str | None = prefix
                for part in parts[cut:]:
                    current = self._member(current, part) if isinstance(current, str) else None
                return current
        return None

    def shown(self, path: str) -> str:
        """``path`` as a reason names it: relative to the project's root, where it is below it."""
        if path not in self._shown:
            try:
                root = Path(self.settings.root).resolve()
                self._shown[path] = str(Path(path).resolve().relative_to(root))
            except ValueError:
                self._shown[path] = path
        return self._shown[path]
