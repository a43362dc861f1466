"""The project index: what the modules of a tree say of each other, and the device findings
that it silences.

Each module's facts are read once (:func:`portlint.index.reading.read_module`, kept by
:mod:`portlint.index.store`); this module joins them. Six inferences cross modules, each with a
kind that ``platform-inferences`` can switch off and that ``--show-silenced`` names:

- ``callers``: a function or class every use of which in the project runs only on CUDA (under a
  guard, in a module that runs only on CUDA, in a function so confined itself) runs only on CUDA;
  the methods of such a class too. A module that the project imports, and imports only from such
  places (a package whose ``__init__`` dispatches to ``nvidia/`` or ``amd/``), runs only on CUDA.
  A function the project never uses is its users' to call: it stays as it is.
- ``rebinds``: a ``torch.cuda`` attribute that the project itself rebinds, unconditionally
  (``torch.cuda.Event = torch.xpu.Event``, a device backend's shim), is the project's own object
  wherever the shim applies: its uses are not reported. (Not one made only under a test of
  another device, ``if supports_xpu_graph(): torch.cuda.CUDAGraph = torch.xpu.XPUGraph``: where
  the test fails the CUDA object is used, and vLLM's capture of Gemma 4's centroids, which looks
  at no graph setting, raises there.)
- ``imports``, across modules: a module that imports unconditionally at its top level a module
  of the project that cannot be imported without a library that exists only for NVIDIA or AMD
  GPUs (it imports one so, at any number of hops, or its package's ``__init__`` does) cannot be
  imported without it either; and the code that follows such an import in its block (in a
  function, a branch, a ``try``) runs only where the library is.
- ``tests``, across modules: a test (or fixture) that requests a pytest fixture which stops the
  test unless on CUDA (it skips, fails or raises before it gives its value), from its own module
  or the nearest ``conftest.py`` above it, as pytest finds fixtures, runs only on CUDA.
- ``guard``, across modules: a name another module defines as a check of CUDA (a top-level flag
  assigned only CUDA tests or falsy constants, a function that answers "is this CUDA?") guards
  the code that runs only where it holds; a call of another module's function that raises
  unless on CUDA guards the rest of its block. Not switchable, as the guards in a module are not.

The joins are least fixed points: a use counts as confined only once something proves it, so a
cycle (two functions that only call each other) proves nothing and the findings stay.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from portlint.catalog import GUARDABLE
from portlint.findings import Silenced, Violation
from portlint.index.kernels import functions_in
from portlint.platform import BUILDS_EXTENSION, first_import_of, foreign_libraries
from portlint.settings import Settings
from portlint.sources import SourceError, read_source
from portlint.speed.cut import parse_ast

MAX_REEXPORTS = 8  # how many `from .impl import f` hops a name is followed through
CUDA_API_PREFIX = "PORT4"  # the CUDA-only API rules: a check is a query of that API
SHOWN_SITES = 3  # sites named in a reason
KINDS = ("uses", "imports")  # the facts a site can be a row of


def module_name(path: str, packages: dict[str, str] | None = None) -> str:
    """The dotted name Python imports ``path`` as: its folders up to the first that is not a
    package (has no ``__init__.py``). ``packages`` caches, per folder, its dotted name."""
    packages = {} if packages is None else packages
    given, file = os.path.split(path)
    if given not in packages:  # (the folder as given too: `abspath` asks for the cwd each time)
        packages[given] = _package_of(os.path.abspath(given), packages)
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


def _package_of(folder: str, packages: dict[str, str]) -> str:
    if folder not in packages:
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            parent = _package_of(os.path.dirname(folder), packages)
            name = os.path.basename(folder)
            packages[folder] = f"{parent}.{name}" if parent else name
        else:
            packages[folder] = ""
    return packages[folder]


class Site(NamedTuple):
    """A use of a name (or an import of a module): row ``row`` of the ``uses`` (or ``imports``)
    of the module at ``path``. Its line and its guard's span are read from the module's facts
    when asked (:meth:`Project.line`, :meth:`Project.span`), so that a site kept from an earlier
    run names the place it is at now."""

    path: str
    kind: str  # "uses" or "imports"
    row: int
    guarded: bool  # whether something confines it to CUDA by itself (a guard, a name, a marker)
    unit: str  # the function or class it is in ("": the module's top level)


class Project:
    """The modules of one run, joined; :meth:`silence` applies what they say to findings."""

    def __init__(
        self,
        facts: MutableMapping[str, dict[str, Any]],
        settings: Settings,
        packages: frozenset[str] = frozenset(),
        verdicts: dict[str, Any] | None = None,
    ) -> None:
        """``facts``: per path, what :func:`~portlint.index.reading.read_module` read of it
        (paths whose source could not be parsed are absent), of a tree whose top-level packages
        are ``packages``. ``verdicts``: what :meth:`verdicts` gave for facts of the same
        :func:`join_key` (then the joins are not made again, and only the facts that a finding
        asks about are read)."""
        self.settings = settings
        self.packages = packages
        self.read_later: set[str] = set()  # paths whose facts the joins completed
        self.facts = facts
        folders: dict[str, str] = {}
        self.module_of = {path: module_name(path, folders) for path in facts}
        self.namespaces = verdicts["namespaces"] if verdicts is not None else self._namespaces()
        for path, module in self.module_of.items():
            namespace = self.namespaces.get(module.partition(".")[0])
            if namespace is not None and namespace == namespace_of(path, module):
                self.module_of[path] = f"{namespace}.{module}"  # (not a `model.py` elsewhere)
        self.path_of = {name: path for path, name in self.module_of.items()}
        self.is_package = {path: os.path.basename(path) == "__init__.py" for path in facts}
        self._defined: dict[str, set[str]] = {}  # per module, its functions and classes
        self._bound: dict[str, dict[str, list]] = {}  # per module, its bindings by local name
        self._shown: dict[str, str] = {}
        inferences = settings.platform_inferences
        self.callers = "callers" in inferences
        self.tests = "tests" in inferences
        self._conftests: dict[str, str] | None = None  # by folder (absolute), once asked for
        self.sites: dict[tuple[str, str], list[Site]] = defaultdict(list)
        self.importers: dict[str, list[Site]] = defaultdict(list)
        if verdicts is not None:
            self._take(verdicts)
            return
        self.rebound = self._rebound() if "rebinds" in inferences else {}
        self.confined_units: dict[tuple[str, str], list[Site]] = {}
        self.confined_modules: dict[str, list[Site] | str] = {}
        # The modules that cannot be imported without a library of the table: why, per module.
        self.unimportable: dict[str, Needs] = {}
        if "imports" in inferences:
            self._unimportable()
        if self.callers:
            self._join()
            self._solve()

    # --- names ------------------------------------------------------------------------------
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

    def _absolute(self, path: str, module: str) -> str:
        """``module`` as imported in ``path`` (``..x`` relative to its package), made absolute."""
        level = len(module) - len(module.lstrip("."))
        if not level:
            return module
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

    # --- the joins --------------------------------------------------------------------------
    def _join(self) -> None:
        for path, data in self.facts.items():
            named: dict[str, tuple[str, str] | str | None] = {}  # (a module names a name often)
            for row, (name, _, unit) in enumerate(data["uses"]):
                if name not in named:
                    named[name] = self._resolve(path, name)
                target = named[name]
                if isinstance(target, tuple) and not _within(unit, path, target, self.module_of):
                    guarded = self.guarded(path, "uses", row)
                    self.sites[target].append(Site(path, "uses", row, guarded, unit))
            for row, (module, _, unit, _, _) in enumerate(data["imports"]):
                absolute = self._absolute(path, module)
                if absolute in self.path_of and absolute != self.module_of[path]:
                    site = Site(path, "imports", row, self.guarded(path, "imports", row), unit)
                    self.importers[absolute].append(site)

    def guarded(self, path: str, kind: str, row: int) -> bool:
        """Whether the use (``kind`` "uses") or the import ("imports") of row ``row`` of the
        facts of ``path`` runs only on CUDA by itself: where the platform model places it."""
        placed = self.facts[path]["placed"][KINDS.index(kind)][row]
        if isinstance(placed, list):  # (evidence that another module's names decide)
            return any(
                (found := self._export(path, module, name)) is not None and found[0] == want
                for want, module, name in placed
            )
        return placed >= 0

    def _unimportable(self) -> None:
        """The modules that import, at their top level and unconditionally, a library that
        exists only for NVIDIA or AMD GPUs, or build their own CUDA extension as they are
        imported (the ``imports`` inference of a module), and those that import such a module
        of the project the same way, or sit in a package whose ``__init__`` is one: importing
        them fails wherever the library (or a CUDA compiler) is missing."""
        root, table = self.settings.root, self.settings.cuda_only_imports
        for path, data in self.facts.items():
            found = first_import_of(data["top_imports"], foreign_libraries(path, root, table))
            if found is not None:
                library = f"`{found[0]}` (a library only for NVIDIA or AMD GPUs)"
                reason = f"cannot be imported without {library}"
                self.unimportable[self.module_of[path]] = Needs(reason, "", "", -1)
            elif data["extension"]:
                self.unimportable[self.module_of[path]] = Needs(BUILDS_EXTENSION, "", "", -1)
        if not self.unimportable:
            return
        # Who is affected when a module cannot be imported: the modules that import it (the
        # rows of `from a.b import c` name `a.b` and `a.b.c`, one of them a module), and, if it
        # is a package, the modules in it (importing `a.b.c` runs `a` and `a.b` first), whose
        # own importers are affected in their turn.
        importers: dict[str, list[tuple[str, str, int]]] = defaultdict(list)  # (module, via, row)
        members: dict[str, list[str]] = defaultdict(list)
        for path, data in self.facts.items():
            module = self.module_of[path]
            package = module.rpartition(".")[0]
            if package:  # (a package: module names stop at a folder without `__init__.py`)
                members[package].append(module)
            for row, (name, _, unit, certain, _) in enumerate(data["imports"]):
                if unit == "" and certain and not self.guarded(path, "imports", row):
                    target = self._absolute(path, name)
                    if target in self.path_of:
                        importers[target].append((module, target, row))
        pending = deque(self.unimportable)
        while pending:  # (each module once: what it makes unimportable goes on the list)
            failing = pending.popleft()
            reason = self.unimportable[failing].reason
            affected = [(m, failing, -1) for m in members.get(failing, [])]
            for module, via, row in [*affected, *importers.get(failing, [])]:
                if module not in self.unimportable:
                    self.unimportable[module] = Needs(reason, via, self.path_of[module], row)
                    pending.append(module)

    def _failing(self, module: str) -> str | None:
        """The first of ``module`` and the packages above it that cannot be imported without a
        library of the table (importing ``a.b.c`` runs ``a`` and ``a.b`` first)."""
        parts = module.split(".") if module else []
        for index in range(1, len(parts) + 1):
            name = ".".join(parts[:index])
            if name in self.unimportable:
                return name
        return None

    def _solve(self) -> None:
        for module, needs in self.unimportable.items():
            if needs.via:  # (the others: their own imports, a verdict the file's lint gave)
                self.confined_modules.setdefault(module, needs.why())
        for path, data in self.facts.items():
            if data["confined"] is not None:  # (the model's: `PlatformModel.whole`)
                self.confined_modules[self.module_of[path]] = data["confined"][1]

        # A worklist: a function or class (a key of `sites`) or a module (of `importers`) is
        # asked again only once something its uses depend on is confined: their module, or a
        # function or class they are in.
        def sites_of(target: tuple[str, str] | str) -> list[Site]:
            return self.importers[target] if isinstance(target, str) else self.sites[target]

        pending: deque[tuple[str, str] | str] = deque([*self.sites, *self.importers])
        dependents: dict[tuple[str, str] | str, list[tuple[str, str] | str]] = defaultdict(list)
        for target in pending:
            for site in sites_of(target):
                if not site.guarded:
                    module = self.module_of[site.path]
                    dependents[module].append(target)
                    for unit in _enclosing(site.unit):
                        dependents[module, unit].append(target)
        while pending:
            target = pending.popleft()
            done: dict[Any, Any] = (
                self.confined_modules if isinstance(target, str) else self.confined_units
            )
            if target not in done and all(map(self._confined, sites_of(target))):
                done[target] = sites_of(target)
                pending.extend(dependents.get(target, ()))

    def _confined(self, site: Site) -> bool:
        """Whether a use runs only on CUDA: by itself, by its module or by its function."""
        if site.guarded:
            return True
        module = self.module_of[site.path]
        if module in self.confined_modules:
            return True
        return any((module, unit) in self.confined_units for unit in _enclosing(site.unit))

    def _rebound(self) -> dict[str, tuple[str, int]]:
        """Per rebound attribute, where the project rebinds it (the path and the row of its
        ``rebinds``): a device shim's rebinding (its value names another device) rather than any
        other."""
        rebound: dict[str, tuple[str, int]] = {}
        for shims in (True, False):
            for path, data in sorted(self.facts.items()):
                for row, (attribute, _, device) in enumerate(data["rebinds"]):
                    if device is shims:
                        rebound.setdefault(attribute, (path, row))
        return rebound

    # --- the verdicts, kept between runs ----------------------------------------------------
    def verdicts(self) -> dict[str, Any]:
        """What the joins concluded, as JSON-ready data for :class:`Project`'s ``verdicts``: it
        names rows of the modules' facts, never lines, so it holds as long as :func:`join_key`
        does, wherever the lines have moved. (Sites are packed: five numbers each, paths and
        units by their place in a table; vLLM's 17,500 confined sites would be 2 MB of JSON.)"""
        names: dict[str, int] = {}

        def packed(sites: list[Site]) -> list[int]:
            numbers = []
            for site in sites:
                path = names.setdefault(site.path, len(names))
                unit = names.setdefault(site.unit, len(names))
                numbers += [path, KINDS.index(site.kind), site.row, int(site.guarded), unit]
            return numbers

        return {
            "rebound": self.rebound,
            "unimportable": {m: [n.reason, n.via, n.path, n.row] for m, n in self.unimportable.items()},
            "units": [[*key, packed(sites)] for key, sites in self.confined_units.items()],
            "modules": {
                m: why if isinstance(why, str) else packed(why)
                for m, why in self.confined_modules.items()
            },
            "names": list(names),
            "namespaces": self.namespaces,
        }  # fmt: skip

    def _take(self, verdicts: dict[str, Any]) -> None:
        names = verdicts["names"]

        def unpacked(numbers: list[int]) -> list[Site]:
            return [
                Site(names[path], KINDS[kind], row, bool(guarded), names[unit])
                for path, kind, row, guarded, unit in zip(*[iter(numbers)] * 5, strict=True)
            ]

        self.rebound = {a: (path, row) for a, (path, row) in verdicts["rebound"].items()}
        self.unimportable = {m: Needs(*row) for m, row in verdicts["unimportable"].items()}
        self.confined_units = {
            (module, unit): unpacked(sites) for module, unit, sites in verdicts["units"]
        }
        self.confined_modules = {
            m: why if isinstance(why, str) else unpacked(why)
            for m, why in verdicts["modules"].items()
        }

    def line(self, site: Site) -> int:
        return self.facts[site.path][site.kind][site.row][1]

    # --- findings ---------------------------------------------------------------------------
    def _unit_of(self, violation: Violation) -> tuple[str, str] | None:
        """The confined function or class a finding is in, if it is in one."""
        module = self.module_of.get(violation.path)
        if module is None:
            return None
        for unit, start, end in self.facts[violation.path]["units"]:
            if start <= violation.line <= end and (module, unit) in self.confined_units:
                return (module, unit)
        return None

    def judge(
        self, violations: list[Violation], silenced: list[Silenced] | None
    ) -> list[Violation]:
        """What stands of ``violations`` once the project has spoken: the findings in code
        that the project places in CUDA-only code (the imports of modules that cannot be
        imported without a CUDA-only library, the answers to the platform model's pending
        evidence, the functions, classes and modules whose every use the model places in
        CUDA-only code, the rebinds of ``torch.cuda`` attributes, the tests that request a
        fixture that skips unless on CUDA) less; ``platform-inferences = []``: all of them.
        (The int64 findings are judged after: :func:`portlint.index.int64.refine`.)"""
        if not self.settings.platform_inferences:
            return violations
        kept = []
        for violation in violations:
            reason = self.imported_here(violation.path, violation)
            reason = reason or self.answered_here(violation.path, violation)
            reason = reason or self.confined_here(violation.path, violation)
            reason = reason or self.rebound_here(violation.path, violation)
            reason = reason or self._requests_cuda_fixture(violation.path, violation)
            if reason is None:
                kept.append(violation)
            elif silenced is not None:
                silenced.append(reason)
        return kept

    def functions(self, path: str) -> dict[str, Any]:
        """What the functions of ``path`` do with their parameters
        (:func:`~portlint.index.kernels.functions_in`): read the first time the int64 rules ask,
        as only the few modules that new tensors are given to are, then kept with the facts."""
        facts = self.facts[path]
        if "functions" not in facts:
            try:
                tree = parse_ast(read_source(path))
            except SourceError:
                tree = None
            facts["functions"] = functions_in(tree) if tree is not None else {}
            self.read_later.add(path)
        return facts["functions"]

    def update(self, path: str, facts: dict[str, Any]) -> None:
        """``path``'s facts as its text is now (a round of fixes moved its lines); the verdicts
        on functions and modules stand."""
        self.facts[path] = facts

    def confined_here(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` is in a module whose every import in the project runs only on
        CUDA, or in a function or class whose every use does."""
        if violation.code not in GUARDABLE or path not in self.facts:
            return None
        confined = self.confined_modules.get(self.module_of[path])
        if isinstance(confined, list):
            why = f"every import of the module runs only on CUDA: {self._named(confined)}"
            return Silenced(violation, "callers", why, 0)
        unit = self._unit_of(violation)
        if unit is None:
            return None
        sites = self.confined_units[unit]
        start = next(row[1] for row in self.facts[path]["units"] if row[0] == unit[1])
        why = f"every use of `{unit[1]}` in the project runs only on CUDA: {self._named(sites)}"
        return Silenced(violation, "callers", why, start)

    def imported_here(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` is in a module that imports, or follows in its block an import
        of, a module of the project that cannot be imported without a CUDA-only library."""
        if violation.code not in GUARDABLE or path not in self.facts:
            return None
        needs = self.unimportable.get(self.module_of[path])
        if needs is not None and needs.via:
            line = self.facts[needs.path]["imports"][needs.row][1] if needs.row >= 0 else 0
            return Silenced(violation, "library-import", needs.why(), line)
        found = self._imported_first(path, violation)
        return found and Silenced(violation, "library-import", found.why, found.line)

    def answered_here(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` is in code whose evidence (the platform model's) waits for what a
        name of another module of the project is (``if HAS_CUDA:``, ``@requires_gpu``, with the
        name imported): that module's exports say it (:meth:`portlint.model.PlatformModel.exports`)."""
        if violation.code not in GUARDABLE or path not in self.facts:
            return None
        at = (violation.line, violation.col - 1)
        rows = self.facts[path].get("notes", {}).get("platform", ())
        for want, module, name, line, col, end_line, end_col, evidence_line in rows:
            if not (line, col) <= at < (end_line, end_col):
                continue
            found = self._export(path, module, name)
            if found is not None and found[0] == want:
                why = f"`{name}` of `{found[2]}`: {found[1]}"
                return Silenced(violation, "imported", why, evidence_line)
        return None

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

    def rebound_here(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` names a ``torch.cuda`` attribute that the project rebinds to its
        own object (vLLM's XPU runner sets ``torch.cuda.Event = torch.xpu.Event``): it is not
        torch's CUDA-only API there."""
        if violation.code not in GUARDABLE or path not in self.facts:
            return None
        for line, col, attribute in self.facts[path]["cuda_refs"]:
            if line == violation.line and col == violation.col - 1:
                found = self.rebound.get(attribute) or self.rebound.get("*")
                if found:
                    line = self.facts[found[0]]["rebinds"][found[1]][1]
                    where = f"{self.shown(found[0])}:{line}"
                    why = f"the project rebinds `torch.cuda.{attribute}` to its own ({where})"
                    return Silenced(violation, "rebinds", why, 0)
        return None

    def _imported_first(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` follows, in the same block, an import of a module of the project
        that cannot be imported without a library of the table: the code after that import
        runs only where the library is (code in a function defined after it too)."""
        if not self.unimportable:
            return None
        for module, line, _, _, block_end in self.facts[path]["imports"]:
            if not line < violation.line <= block_end:
                continue
            failing = self._failing(self._absolute(path, module))
            if failing is not None:
                needs = self.unimportable[failing]
                why = f"it follows an import of `{failing}`, which {needs.reason}"
                return Silenced(violation, "imports", why, line)
        return None

    def _requests_cuda_fixture(self, path: str, violation: Violation) -> Silenced | None:
        """Where ``violation`` is in a test (or fixture) that requests a pytest fixture which
        stops the test unless on CUDA (it skips, fails or raises there before it gives anything),
        itself or through the fixtures it requests."""
        if not self.tests or violation.code not in GUARDABLE or path not in self.facts:
            return None
        for first, last, names in self.facts[path].get("fixture_requests", ()):
            if first <= violation.line <= last:
                for name in names:
                    found = self._cuda_fixture(path, name, MAX_REEXPORTS)
                    if found is not None:
                        where = f"{self.shown(found[0])}:{found[1]}"
                        why = f"the test requests `{name}`, a fixture that skips unless on CUDA"
                        why += f" ({where})"
                        return Silenced(violation, "tests", why, first)
        return None

    def _cuda_fixture(self, path: str, name: str, hops: int) -> tuple[str, int] | None:
        """Where the fixture ``name``, as a test in ``path`` gets it, stops unless on CUDA (the
        path and line of the check), if it does: pytest takes the fixture of that name from the
        module itself, else from the nearest ``conftest.py`` in its folder or a folder above."""
        for scope in self._fixture_scopes(path):
            fixture = self.facts[scope].get("fixtures", {}).get(name)
            if fixture is None:
                continue
            _, stop, requested = fixture
            if stop:
                return scope, stop
            if hops:
                for other in requested:
                    if other != name:
                        found = self._cuda_fixture(scope, other, hops - 1)
                        if found is not None:
                            return found
            return None
        return None

    def _fixture_scopes(self, path: str) -> Iterator[str]:
        """``path`` and the ``conftest.py`` files of the project above it, nearest first."""
        if self._conftests is None:
            self._conftests = {
                os.path.dirname(os.path.abspath(p)): p
                for p in self.facts
                if os.path.basename(p) == "conftest.py"
            }
        if os.path.basename(path) != "conftest.py":
            yield path
        folder = os.path.dirname(os.path.abspath(path))
        while True:
            if folder in self._conftests:
                yield self._conftests[folder]
            parent = os.path.dirname(folder)
            if parent == folder:
                return
            folder = parent

    def _named(self, sites: list[Site]) -> str:
        shown = ", ".join(f"{self.shown(s.path)}:{self.line(s)}" for s in sites[:SHOWN_SITES])
        more = len(sites) - SHOWN_SITES
        return f"{shown} and {more} more" if more > 0 else shown

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


def join_shape(facts: dict[str, Any]) -> str:
    """A digest of what the joins read of a module's facts, its lines and spans left out: two
    versions of a module with the same shape give the same verdicts (an edit that only moves
    lines, or changes code the index records nothing of, keeps the project's verdicts)."""
    shape = [
        [row[0] for row in facts["units"]],
        [row[:3] for row in facts["bindings"]],
        [[name, unit] for name, _, unit in facts["uses"]],
        [[m, unit, certain] for m, _, unit, certain, _ in facts["imports"]],
        [
            [p if isinstance(p, list) else p >= 0 for p in places]
            for places in facts.get("placed", ())
        ],
        facts.get("confined") is not None,
        # (what the places that wait for it are told, less the lines of its evidence)
        sorted([name, answer[:2]] for name, answer in facts.get("platform", {}).items()),
        [row[0] for row in facts["top_imports"]],
        [[attribute, device] for attribute, _, device in facts["rebinds"]],
    ]
    return hashlib.sha256(json.dumps(shape).encode()).hexdigest()[:32]


def join_key(
    shapes: Iterable[tuple[str, str]], settings: Settings, packages: frozenset[str]
) -> str:
    """What the joins' verdicts depend on: each module's path and :func:`join_shape`, the
    top-level packages, and the settings the joins read."""
    key = [
        sorted(shapes),
        sorted(packages),
        settings.root,
        list(settings.cuda_only_imports),
        sorted(settings.platform_inferences),
    ]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Needs:
    """Why a module cannot be imported off CUDA: ``reason`` (it imports a library of the table,
    or builds a CUDA extension), or (``via``) the module of the project that it imports (row
    ``row`` of the ``imports`` of its file at ``path``; -1: ``via`` is the package it is in) is
    such a module."""

    reason: str  # what the first module of the chain does, as a clause
    via: str
    path: str
    row: int

    def why(self) -> str:
        if self.row < 0:
            return f"its package `{self.via}` {self.reason}"
        return f"the module imports `{self.via}`, which {self.reason}"


@functools.lru_cache(maxsize=4096)
def _enclosing(unit: str) -> tuple[str, ...]:
    """``C.m`` is in ``C.m`` and in ``C``. (Asked for each use, again in each round of the joins.)"""
    parts = unit.split(".") if unit else []
    return tuple(".".join(parts[:index]) for index in range(len(parts), 0, -1))


def _within(unit: str, path: str, target: tuple[str, str], module_of: dict[str, str]) -> bool:
    """Whether a use sits inside what it names (a recursive call, a method naming its class)."""
    return module_of[path] == target[0] and any(u == target[1] for u in _enclosing(unit))
