"""What a module, a name or a string says about the platform it runs on, read without LibCST:
the words of names and device strings, the libraries that exist only for NVIDIA or AMD GPUs
(and which of them a module imports, at its top level or at all), a CUDA extension a module
builds as it is imported. The platform model (:mod:`portlint.model`) and the project index ask
these questions; the vocabulary (libraries, words) is in :mod:`portlint.facts`.

``platform-inferences`` names what the configuration can switch off: ``waivers`` (a line's
comment that waives CUDA by name, ``#ignore-cuda``), and, across modules, ``imports``,
``callers``, ``tests`` and ``rebinds`` (:mod:`portlint.index.project`); ``[]`` turns the platform
model off.
"""

from __future__ import annotations

import ast
import functools
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from portlint.facts import (
    CUDA_ARCHITECTURE,
    CUDA_DEVICE_TYPES,
    CUDA_SOURCE_KEYWORDS,
    CUDA_SOURCE_SUFFIXES,
    CUDA_WORDS,
    EXTENSION_BUILDERS,
    OTHER_DEVICES,
)

INFERENCES = (
    "imports", "names", "tests", "dispatch", "checks", "fallbacks", "waivers", "callers",
    "rebinds",
)  # fmt: skip

# A name's words: `forward_cuda` -> forward, cuda; `CUDAOpBuilder` -> cuda, op, builder;
# `fmha_sm100` -> fmha, sm100 (an architecture keeps its digits).
_SPLIT = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_ARCHITECTURE = re.compile(CUDA_ARCHITECTURE)


@functools.cache  # (a tree has tens of thousands of names; each is read many times)
def words(name: str) -> tuple[str, ...]:
    """The lower-case words of an identifier or a file name (``_``, ``-``, ``.``, case changes and
    digits separate them; ``sm100`` and ``gfx942`` stay whole)."""
    found: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        for piece in re.finditer(rf"{CUDA_ARCHITECTURE}|[A-Za-z0-9]+", part, re.IGNORECASE):
            text = piece.group(0)
            if _ARCHITECTURE.fullmatch(text.lower()):
                found.append(text.lower())
            else:
                found += [w.lower() for w in _SPLIT.findall(text)]
    return tuple(found)


def _joined(found: tuple[str, ...]) -> Iterable[str]:
    """The words, and each pair of neighbours written as one (`deep_gemm` -> deepgemm)."""
    yield from found
    for a, b in itertools.pairwise(found):
        yield a + b


@functools.cache  # (asked of every callee's name, among others)
def names_cuda(name: str) -> bool:
    """Whether ``name`` names CUDA or ROCm (a word of :data:`CUDA_WORDS`, or a GPU architecture),
    but for a CUDA graph (``cuda_graph``, ``CudaGraphRunner``)."""
    found = words(name)
    for index, word in enumerate(found):
        if word == "cuda" and found[index + 1 : index + 2] in (("graph",), ("graphs",)):
            continue
        if word in CUDA_WORDS or _ARCHITECTURE.fullmatch(word):
            return True
        if word.startswith("py") and word[2:] in CUDA_WORDS:  # pynccl, pynvml, pycuda
            return True
    return any(pair in CUDA_WORDS for pair in list(_joined(found))[len(found) :])


_CONSTANT = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


def string_says_cuda(value: str) -> bool:
    """Whether a string a test compares with asks for CUDA (or ROCm): a device type (``"cuda"``,
    ``"cuda:0"``, ``"hip"``), or the name of something that exists only for NVIDIA or AMD GPUs,
    written as a constant (``"nccl"``, ``"flashinfer"``, ``"CUDAExecutionProvider"``; not a
    sentence, and not a CUDA graph mode, which any accelerator may capture)."""
    if value.split(":")[0] in CUDA_DEVICE_TYPES:
        return True
    return bool(_CONSTANT.fullmatch(value)) and names_cuda(value) and not names_other_device(value)


def names_other_device(name: str) -> bool:
    """Whether ``name`` names a device other than CUDA and ROCm (``is_xpu``, ``NPUGraphRunner``)."""
    return any(word in OTHER_DEVICES for word in words(name))


def _parts_below(path: str, root: str) -> list[str]:
    """The folders and file name (without suffix) of ``path`` below ``root``: a user's own folder
    names (`/home/amd/...`) say nothing of the code."""
    if os.path.isabs(path):
        pure = PurePath(path)
        try:
            parts = list(pure.relative_to(root).parts)
        except ValueError:
            parts = [pure.name]
    else:  # (most paths: as the run found them below the folder it was given; no PurePath)
        parts = (
            path.split(os.sep)
            if os.altsep is None
            else path.replace(os.altsep, os.sep).split(os.sep)
        )
    if parts:
        parts[-1] = os.path.splitext(parts[-1])[0]
    return [p for p in parts if p not in ("..", ".", "")]


def foreign_libraries(path: str, root: str, libraries: Iterable[str]) -> tuple[str, ...]:
    """``libraries`` but the one the module at ``path`` is part of: a project that is itself a
    library of the table (Megatron Core, whose modules import ``megatron.core``) imports its own
    modules, not a CUDA-only library. The project's package is its top folder below ``root``
    (below ``src/`` in a src layout); a copy of a library vendored deeper is imported under the
    project's name, and an absolute import of the library's name is the library itself."""
    folders = _parts_below(path, root)[:-1]
    if folders[:1] == ["src"]:
        folders = folders[1:]
    return _foreign(os.path.join(root, *folders[:1]) if folders else "", tuple(libraries))


@functools.lru_cache(maxsize=64)
def _foreign(package: str, libraries: tuple[str, ...]) -> tuple[str, ...]:
    name = os.path.basename(package)
    if not name or not any(library.partition(".")[0] == name for library in libraries):
        return libraries
    return tuple(library for library in libraries if not _holds(package, library))


def _holds(package: str, library: str) -> bool:
    """Whether the folder ``package`` is ``library``'s: it has the library's first name and
    holds the rest of it (``cuda.bindings``: ``cuda/bindings``)."""
    first, *rest = library.split(".")
    target = os.path.join(package, *rest)
    return os.path.basename(package) == first and (
        not rest or os.path.isdir(target) or os.path.isfile(f"{target}.py")
    )


def top_level_imports(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The modules the module imports at its top level (not in a ``try``, an ``if`` or a
    function; in the body of a ``with``, which always runs, unless it is ``suppress(...)``),
    with their lines: ``from cuda import bindings`` gives ``cuda`` and ``cuda.bindings``.
    Relative imports are left out."""
    pending = list(reversed(tree.body))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.With, ast.AsyncWith)) and not any(
            suppresses(item.context_expr) for item in node.items
        ):
            pending.extend(reversed(node.body))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
            for alias in node.names:
                yield f"{node.module}.{alias.name}", node.lineno


def suppresses(manager: ast.expr) -> bool:
    """``suppress(...)`` (``contextlib``'s), which may end the block at any error."""
    callee = manager.func if isinstance(manager, ast.Call) else manager
    return (
        callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
    ) == "suppress"


BUILDS_EXTENSION = "cannot be imported without building a CUDA extension from `.cu` sources"


def extension_build(tree: ast.Module) -> int:
    """The line where the module, as it is imported, builds and loads a CUDA extension of its own
    (0: it does not): a call of one of :data:`EXTENSION_BUILDERS` in its top-level code (under
    an ``if``, a ``with`` or a loop too; not in a function or class, not in a ``try`` with a
    handler that lets the failure pass, not under a test that names CUDA) given CUDA sources:
    ``cuda_sources=`` (``cuda_files=``), ``with_cuda=True``, or a ``.cu`` file named in that
    code. The call is a statement's own value (``ext = load(...)``). exllamav2's ``ext.py`` does
    (``if build_jit: exllamav2_ext = load(..., sources=[..."cuda/q_gemm.cu"])``); a builder in
    a function, called when an op is first needed, does not."""
    bindings = _import_bindings(tree)
    if not any(qualified.startswith("torch") for qualified in bindings.values()):
        return 0  # (nearly every module: no torch, so no builder)
    builds: list[ast.Call] = []
    reached: list[ast.stmt] = []  # the simple statements the import runs
    pending: list[ast.stmt] = list(reversed(tree.body))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Try, *TRY_STAR)):
            handlers: list[ast.ExceptHandler] = getattr(node, "handlers", [])
            tolerated = not all(_reraises(handler) for handler in handlers)
            kept = ("orelse", "finalbody") if tolerated else ("body", "orelse", "finalbody")
            blocks = [getattr(node, field) for field in kept] + [h.body for h in handlers]
        elif isinstance(node, ast.If):
            blocks = [] if _names_cuda_in(node.test) else [node.body, node.orelse]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            suppressed = any(suppresses(item.context_expr) for item in node.items)
            blocks = [] if suppressed else [node.body]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            blocks = [node.body, node.orelse]
        else:
            reached.append(node)
            value = getattr(node, "value", None)  # (`ext = load(...)`, `load(...)`)
            if isinstance(value, ast.Call) and _resolved(value.func, bindings) in (
                EXTENSION_BUILDERS
            ):
                builds.append(value)
            continue
        for block in reversed(blocks):
            pending.extend(reversed(block))
    if not builds:
        return 0  # (nearly every module with torch: the strings are not read)
    names_sources = any(_names_cuda_source(n) for node in reached for n in ast.walk(node))
    for call in builds:
        if names_sources or given_cuda(call):
            return call.lineno
    return 0


def _import_bindings(tree: ast.Module) -> dict[str, str]:
    """What the names that the module's own imports bind stand for (``import torch.utils`` binds
    ``torch``; ``from torch.utils import cpp_extension as ce`` binds ``ce``, for
    ``torch.utils.cpp_extension``), outside functions and classes."""
    found: dict[str, str] = {}
    pending: list[ast.stmt] = list(tree.body)
    while pending:  # (statements only: an import is never inside an expression)
        node = pending.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                found[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                for alias in node.names:
                    found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, field, ()))
            for handler in getattr(node, "handlers", ()):
                pending.extend(handler.body)
    return found


def _resolved(node: ast.expr, bindings: dict[str, str]) -> str | None:
    name = dotted(node)
    if name is None:
        return None
    head, dot, rest = name.partition(".")
    return bindings[head] + dot + rest if head in bindings else None


def _reraises(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` clause ends by raising: the failure is not let pass."""
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


def _names_cuda_in(test: ast.expr) -> bool:
    """Whether a test names CUDA (``torch.cuda.is_available()``, ``CUDA_HOME is not None``)."""
    return any(
        (isinstance(node, ast.Name) and names_cuda(node.id))
        or (isinstance(node, ast.Attribute) and names_cuda(node.attr))
        for node in ast.walk(test)
    )


def _names_cuda_source(node: ast.AST) -> bool:
    """A string (an f-string's last part too) that ends in a CUDA source's suffix."""
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[-1]
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.endswith(CUDA_SOURCE_SUFFIXES)
    )


def given_cuda(call: ast.Call) -> bool:
    """``cuda_sources=`` (not ``None`` or empty) or ``with_cuda=True`` among a builder's
    arguments (:func:`portlint.analysis.guard_tests.compiles_cuda` asks the same of a call)."""
    for keyword in call.keywords:
        value = keyword.value
        empty = isinstance(value, ast.Constant) and not value.value
        empty = empty or (isinstance(value, (ast.List, ast.Tuple)) and not value.elts)
        if keyword.arg in CUDA_SOURCE_KEYWORDS and not empty:
            return True
        if keyword.arg == "with_cuda" and isinstance(value, ast.Constant) and value.value is True:
            return True
    return False


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str, str]]:
    """The names an import binds, each with the module it comes from (relative as written:
    ``..x``) and the attribute of it (""): ``import a.b`` binds ``a`` (``a``, ""),
    ``import a.b as c`` binds ``c`` (``a.b``, ""), ``from .m import f as g`` binds ``g``
    (``.m``, ``f``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            first = alias.name.split(".")[0]
            yield (alias.asname, alias.name, "") if alias.asname else (first, first, "")
        return
    base = "." * node.level + (node.module or "")
    for alias in node.names:
        if alias.name != "*":
            yield alias.asname or alias.name, base, alias.name


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes (None for anything else)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def first_import_of(
    imports: Iterable[Sequence], libraries: tuple[str, ...]
) -> tuple[str, int] | None:
    """The first of ``imports`` (name, line) of one of ``libraries`` (``cutlass`` matches
    ``cutlass.cute``), as the library (the first in ``libraries`` that it is) and the line."""
    order = _order(libraries)
    for name, line in imports:
        if name.partition(".")[0] not in order.heads:
            continue  # (nearly every import: a set test)
        parts = name.split(".")
        found = [
            order.rank[p]
            for p in (".".join(parts[:n]) for n in range(1, len(parts) + 1))
            if p in order.rank
        ]
        if found:
            return libraries[min(found)], line
    return None


@dataclass(frozen=True)
class _Libraries:
    rank: dict[str, int]  # a library -> its place in the table
    heads: frozenset[str]  # the first parts of their names


@functools.lru_cache(maxsize=8)
def _order(libraries: tuple[str, ...]) -> _Libraries:
    rank: dict[str, int] = {}
    for index, library in enumerate(libraries):
        rank.setdefault(library, index)
    return _Libraries(rank, frozenset(library.partition(".")[0] for library in libraries))


def library_bindings(tree: ast.Module, libraries: tuple[str, ...]) -> dict[str, str]:
    """The names that the module's own code (outside functions and classes, under an ``if`` or
    in a ``try`` too) binds to one of ``libraries``, with the library: ``if
    is_megatron_lm_available(): from megatron.core import mpu`` gives ``mpu``."""
    found: dict[str, str] = {}
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.If, ast.Try, *TRY_STAR)):
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                pending.extend(handler.body)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                library = first_import_of([(alias.name, 0)], libraries)
                if library is not None:
                    found[alias.asname or alias.name.split(".")[0]] = library[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                library = first_import_of([(f"{node.module}.{alias.name}", 0)], libraries)
                if library is not None and alias.name != "*":
                    found[alias.asname or alias.name] = library[0]
    return found


TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()  # (Python 3.11 and later)


def count_says_cuda(operator: str, number: int) -> int:
    """What ``torch.cuda.device_count() <operator> number`` says of CUDA: +1 where it holds only
    with CUDA devices there (``> 0``, ``>= 2``, ``== 8``, ``!= 0``), -1 where it fails only so
    (``< 2``, ``<= 1``, ``== 0``: a skip condition), 0 where it says neither."""
    if (operator, number) in ((">", 0), ("!=", 0)) or (
        operator in (">", ">=", "==") and number >= 1
    ):
        return 1
    if (operator == "<" and number >= 1) or (operator == "<=" and number >= 0):
        return -1
    return -1 if (operator, number) == ("==", 0) else 0
