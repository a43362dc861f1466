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

The joins themselves are :mod:`portlint.index.joins` (least fixed points), on the names of
:mod:`portlint.index.modules`; this module judges findings with them.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator, MutableMapping
from typing import Any

from portlint.catalog import GUARDABLE
from portlint.findings import Silenced, Violation
from portlint.index.function_uses import functions_in
from portlint.index.joins import Joins, Site
from portlint.index.modules import MAX_REEXPORTS
from portlint.model.conditions import answers
from portlint.settings import Settings
from portlint.sources import SourceError, read_source
from portlint.speed.cut import parse_ast

SHOWN_SITES = 3  # sites named in a reason


class Project(Joins):
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
        :func:`~portlint.index.joins.join_key` (then the joins are not made again, and only the facts that a finding
        asks about are read)."""
        super().__init__(facts, settings, packages, verdicts)
        self.read_later: set[str] = set()  # paths whose facts the joins completed
        self.tests = "tests" in settings.platform_inferences
        self._conftests: dict[str, str] | None = None  # by folder (absolute), once asked for
        self._trees: dict[str, ast.Module | None] = {}
        self._texts: dict[str, str] = {}  # what an editor or a fix holds, where not the file's
        self._units: dict[str, dict[str, ast.AST]] = {}

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
        (:func:`~portlint.index.function_uses.functions_in`): read the first time the int64 rules ask,
        as only the few modules that new tensors are given to are, then kept with the facts."""
        facts = self.facts[path]
        if "functions" not in facts:
            tree = self.module_tree(path)
            facts["functions"] = functions_in(tree) if tree is not None else {}
            self.read_later.add(path)
        return facts["functions"]

    def module_tree(self, path: str) -> ast.Module | None:
        """``path``'s ``ast``, read the first time a judgement asks (only the few modules that
        findings lead to are), then kept for the run."""
        if path not in self._trees:
            try:
                self._trees[path] = parse_ast(self._texts.get(path) or read_source(path))
            except SourceError:
                self._trees[path] = None
        return self._trees[path]

    def units(self, path: str) -> dict[str, ast.AST]:
        """The functions and classes of ``path`` by qualified name (``f``, ``C``, ``C.m``)."""
        if path not in self._units:
            found: dict[str, ast.AST] = {}
            tree = self.module_tree(path)
            pending = [("", node) for node in (tree.body if tree is not None else [])]
            while pending:
                prefix, node = pending.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found[prefix + node.name] = node
                if isinstance(node, ast.ClassDef):
                    pending.extend((f"{prefix}{node.name}.", child) for child in node.body)
            self._units[path] = found
        return self._units[path]

    def update(
        self,
        path: str,
        facts: dict[str, Any],
        source: str | None = None,
        tree: ast.Module | None = None,
    ) -> None:
        """``path``'s facts as its text is now (a round of fixes moved its lines, an editor
        holds it: ``source``, where it is not the file's, and its ``tree`` where the caller has
        it); the verdicts on functions and modules stand."""
        self.facts[path] = facts
        self._units.pop(path, None)
        self._trees.pop(path, None)
        if source is not None:
            self._texts[path] = source
        if tree is not None:
            self._trees[path] = tree

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
            if found is not None and answers(found[0], want):
                why = f"`{name}` of `{found[2]}`: {found[1]}"
                return Silenced(violation, "imported", why, evidence_line)
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
