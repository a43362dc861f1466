"""The joins of the project index: who uses each function, class and module of the project, which
of them run only on CUDA, which modules cannot be imported off CUDA, and which ``torch.cuda``
attributes the project rebinds; kept between runs as verdicts.

The joins are least fixed points: a use counts as confined only once something proves it, so a
cycle (two functions that only call each other) proves nothing and the findings stay.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict, deque
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from portlint.index.modules import ModuleNames
from portlint.model.conditions import answers
from portlint.platform import BUILDS_EXTENSION, first_import_of, foreign_libraries
from portlint.settings import Settings

KINDS = ("uses", "imports")  # the facts a site can be a row of


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


class Joins(ModuleNames):
    """The modules of one run, joined (see :class:`~portlint.index.project.Project`)."""

    def __init__(
        self,
        facts: MutableMapping[str, dict[str, Any]],
        settings: Settings,
        packages: frozenset[str],
        verdicts: dict[str, Any] | None,
    ) -> None:
        namespaces = verdicts["namespaces"] if verdicts is not None else None
        super().__init__(facts, settings, packages, namespaces)
        inferences = settings.platform_inferences
        self.callers = "callers" in inferences
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

    # --- the joins --------------------------------------------------------------------------
    def _join(self) -> None:
        for path, data in self.in_order():
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
                (found := self._export(path, module, name)) is not None and answers(found[0], want)
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
        for path, data in self.in_order():
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
        for path, data in self.in_order():
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
        for path, data in self.in_order():
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
            for path, data in self.in_order():
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


@functools.lru_cache(maxsize=4096)
def _enclosing(unit: str) -> tuple[str, ...]:
    """``C.m`` is in ``C.m`` and in ``C``. (Asked for each use, again in each round of the joins.)"""
    parts = unit.split(".") if unit else []
    return tuple(".".join(parts[:index]) for index in range(len(parts), 0, -1))


def _within(unit: str, path: str, target: tuple[str, str], module_of: dict[str, str]) -> bool:
    """Whether a use sits inside what it names (a recursive call, a method naming its class)."""
    return module_of[path] == target[0] and any(u == target[1] for u in _enclosing(unit))
