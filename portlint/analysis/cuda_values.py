"""Names that hold a CUDA-only thing or nothing, so that a test of them is a CUDA guard.

A model makes its side stream only on CUDA and hands it down to the layers it builds; the layers
test it before they use it::

    class Model(nn.Module):
        def __init__(self, config):
            alt_stream = get_stream("alt") if _is_cuda else None
            self.layers = [Layer(config, alt_stream=alt_stream) for _ in range(n)]

    class Layer(nn.Module):
        def __init__(self, config, alt_stream=None):
            self.alt_stream = alt_stream

        def forward(self, x):
            if self.alt_stream is not None:  # true only on CUDA
                with torch.cuda.stream(self.alt_stream): ...

:func:`cuda_only_values` reads that from Python's ``ast`` of the whole module (the guard analysis
may see only a cut of it): a value is CUDA-only or nothing when it is ``None``/``False``, ``a if
<CUDA> else None``, assigned under a CUDA guard, or a name that holds only such values — a local,
a module-level flag (``_symm_mem_available = False`` then ``if _is_cuda: ... = True``, or
``HAVE_TE = True`` after ``import transformer_engine`` in a ``try``: what follows a library that
exists only for NVIDIA or AMD GPUs in a ``try`` runs only where it imported), an
attribute ``self.x`` every assignment of which in its class is one, or an ``__init__`` parameter
that every construction of the class in the module gives one (or leaves at a ``None`` default).
A construction may call the class through an alias (a parameter whose default it is, ``kind =
kind or C``) or an entry of a module-level registry of the module's classes (``TYPES[key](...)``).
A test may read a name bound to a CUDA check (``use = enabled and torch.cuda.is_available()``).
A class that the module subclasses or hands on uncalled may be built elsewhere: its parameters
prove nothing. A cycle proves nothing either (the fixpoint starts from nothing proved).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from portlint.index.reading import LEAF_TYPES, holds_own, says_cuda, subclasses, yields
from portlint.platform import TRY_STAR, dotted, first_import_of

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
LOCAL_SCOPES = frozenset((ast.Lambda, *COMPREHENSIONS))  # (names they store are theirs)
STATEMENTS = frozenset(subclasses(ast.stmt))
# The fields of each node type that may hold nodes (read once per type: a scan is per node).
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    _FIELDS[kind] = tuple(f for f in kind._fields if f != "ctx")  # type: ignore[attr-defined]
    return _FIELDS[kind]


@dataclass
class _Class:
    node: ast.ClassDef
    parameters: list[str] = field(default_factory=list)  # of `__init__`, after `self`
    positional: int = 0  # how many of them a call can give by position
    defaults: dict[str, ast.expr] = field(default_factory=dict)
    # self.<attribute> -> (value, method, assigned under a CUDA guard)
    attributes: dict[str, list[tuple[ast.expr, ast.AST | None, bool]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    builds: list[tuple[ast.Call, ast.AST | None, bool]] = field(default_factory=list)
    escapes: bool = False  # subclassed, or named other than as a call: may be built elsewhere


def _falsy(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _assignments(statement: ast.stmt) -> Iterator[tuple[ast.expr, ast.expr]]:
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield target, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        yield statement.target, statement.value


class _Module:
    def __init__(self, tree: ast.Module, source: str, libraries: tuple[str, ...]) -> None:
        self.libraries = libraries
        self.classes = {s.name: _Class(s) for s in tree.body if isinstance(s, ast.ClassDef)}
        self.registries = _registries(tree, self.classes)
        # function (None: the module) -> name -> the module's classes it may hold (`layer = C`,
        # `kind = kind or C`, a parameter's default `C`, `kind = REGISTRY[key]`): a call of it
        # is a build of each.
        self.aliases: dict[ast.AST | None, dict[str, list[_Class]]] = defaultdict(dict)
        self.lines = source.splitlines(keepends=True)
        names = "|".join(map(re.escape, [*self.classes, *self.registries]))
        self.class_names = re.compile(rf"\b(?:{names})\b") if names else None
        # function (None: the module) -> name -> (value, under a CUDA guard)
        self.locals: dict[ast.AST | None, dict[str, list[tuple[ast.expr, bool]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.parameters: dict[ast.AST, set[str]] = {}
        self.owner: dict[ast.AST, _Class] = {}  # a method -> its class
        self.globals: set[str] = set()  # names a function declares `global`
        # Names bound otherwise than by `name = value` (an import, a `for`, a tuple's unpacking,
        # a `def`, `except ... as`), by scope; attributes assigned on another object than self.
        self.unknown: dict[ast.AST | None, set[str]] = defaultdict(set)
        self.foreign: set[str] = set()
        self._block(tree.body, None, False)
        for one in self.classes.values():
            for base in one.node.bases:
                parent = self.classes.get(dotted(base) or "")
                if parent is not None:
                    parent.escapes = True
            self._scan_definition(one.node, None, False)
            for member in one.node.body:
                if isinstance(member, FUNCTIONS):
                    self.owner[member] = one
                    self._scan_definition(member, None, False)
                    self._function(member)
                    if member.name == "__init__":
                        _signature(one, member)
                else:
                    self._expressions(member, None, False)  # (a class's own names: not flags)
        self.params: set[tuple[str, str]] = set()
        self.attributes: set[tuple[str, str]] = set()
        self.flags: set[str] = set()

    # --- Reading ------------------------------------------------------------------------------
    def _function(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = function.args
        names = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        self.parameters[function] = {a.arg for a in names}
        self._block(function.body, function, False)

    def _scan(self, statement: ast.stmt, function: ast.AST | None, guarded: bool) -> None:
        """What ``statement`` itself holds (not the statements of its blocks, read on their own):
        what it binds otherwise than by ``name = value`` (an import, a ``for``, an unpacking,
        ``except ... as``), the attributes it assigns on other objects than ``self``, and the
        module's classes it names: a call of one is a build of it, any other mention (but
        ``C.x`` and ``isinstance(y, C)``) lets it escape. Its expressions are walked only where
        its text names a class of the module, or binds by ``:=`` (a walk is the cost); a compound
        statement's always (the walk reads its header, not its blocks: their text would be read
        again for each statement in them)."""
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            self.unknown[function].update(
                (a.asname or a.name).partition(".")[0] for a in statement.names
            )
            return
        if hasattr(statement, "body"):  # (a compound statement: its own part is its header)
            self._walk(statement, function, guarded)
            return
        text = self._text(statement)
        aliases = self.aliases.get(function, {})
        if (
            ":=" in text
            or (self.class_names is not None and self.class_names.search(text))
            or any(alias in text for alias in aliases)
        ):
            self._walk(statement, function, guarded)
        else:
            self._targets(statement, function)

    def _text(self, statement: ast.stmt) -> str:
        return "".join(self.lines[statement.lineno - 1 : statement.end_lineno])

    def _targets(self, statement: ast.stmt, function: ast.AST | None) -> None:
        """:meth:`_scan` of a statement that names no class: its bindings, from its targets."""
        unknown = self.unknown[function]
        targets: list[ast.AST] = []
        if isinstance(statement, ast.Assign):
            targets += [t for t in statement.targets if not isinstance(t, ast.Name)]
        elif isinstance(statement, ast.Delete):
            targets += statement.targets
        elif isinstance(statement, (ast.AugAssign, ast.For, ast.AsyncFor)) or (
            isinstance(statement, ast.AnnAssign) and not isinstance(statement.target, ast.Name)
        ):
            targets.append(statement.target)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            targets += [i.optional_vars for i in statement.items if i.optional_vars is not None]
        for handler in getattr(statement, "handlers", []):
            if handler.name:
                unknown.add(handler.name)
        while targets:
            target = targets.pop()
            if isinstance(target, ast.Name):
                unknown.add(target.id)
            elif isinstance(target, ast.Attribute):
                if not (isinstance(target.value, ast.Name) and target.value.id == "self"):
                    self.foreign.add(target.attr)
            elif isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)

    def _walk(self, statement: ast.stmt, function: ast.AST | None, guarded: bool) -> None:
        """:meth:`_scan` by a walk of the statement's own expressions."""
        unknown = self.unknown[function]
        simple = {id(t) for t, _ in _assignments(statement) if isinstance(t, ast.Name)}
        harmless: set[int] = set()
        # (node, whether a name it stores is bound here: not in a lambda or a comprehension)
        pending: list[tuple[ast.AST, bool]] = [(statement, True)]
        while pending:
            node, here = pending.pop()
            self._mention(node, function, guarded, harmless)
            stored = here and not isinstance(getattr(node, "ctx", None), ast.Load)
            if stored and isinstance(node, ast.Attribute):
                if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                    self.foreign.add(node.attr)
            elif stored and isinstance(node, ast.Name) and id(node) not in simple:
                unknown.add(node.id)
            elif here and isinstance(node, ast.ExceptHandler) and node.name:
                unknown.add(node.name)
            for name in _FIELDS.get(node.__class__) or _fields(node.__class__):
                value = getattr(node, name, None)
                for child in value if value.__class__ is list else (value,):
                    kind = child.__class__
                    if (
                        kind not in LEAF_TYPES
                        and kind not in STATEMENTS
                        and isinstance(child, ast.AST)
                    ):
                        pending.append((child, here and kind not in LOCAL_SCOPES))

    def _block(self, body: list[ast.stmt], function: ast.AST | None, guarded: bool) -> None:
        for statement in body:
            self._statement(statement, function, guarded)

    def _statement(self, statement: ast.stmt, function: ast.AST | None, guarded: bool) -> None:
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            self.unknown[function].add(statement.name)
            if (
                function is None
                and isinstance(statement, FUNCTIONS)
                and statement not in self.owner
            ):
                self._scan_definition(statement, None, guarded)
                self._function(statement)  # a top-level function (methods: read with classes)
            elif function is not None:
                self._expressions(statement, function, guarded)  # (all of it: rare)
                self.unknown[function].update(_own_names(statement))
            return  # (a top-level class: read with the others)
        self._scan(statement, function, guarded)
        if isinstance(statement, ast.Global):
            self.globals.update(statement.names)
        for target, value in _assignments(statement):
            name = dotted(target)
            one = self.owner.get(function) if function is not None else None
            if name is not None and name.startswith("self.") and name.count(".") == 1 and one:
                one.attributes[name[5:]].append((value, function, guarded))
            elif isinstance(target, ast.Name):
                self.locals[function][target.id].append((value, guarded))
        if isinstance(statement, ast.If):
            said = self._says(statement.test, function)
            self._block(statement.body, function, guarded or said is True)
            self._block(statement.orelse, function, guarded or said is False)
            return
        body = getattr(statement, "body", [])
        imported = _library_imported(statement, self.libraries)
        split = len(body) if imported is None else imported
        self._block(body[:split], function, guarded)
        self._block(body[split:], function, guarded or imported is not None)
        self._block(getattr(statement, "orelse", []), function, guarded or imported is not None)
        self._block(getattr(statement, "finalbody", []), function, guarded)
        for handler in getattr(statement, "handlers", []):
            self._block(handler.body, function, guarded)

    def _scan_definition(
        self, definition: ast.stmt, function: ast.AST | None, guarded: bool
    ) -> None:
        """The decorators, bases and defaults of a definition: where it is defined, they run. A
        default that is one of the module's classes makes the parameter an alias of it."""
        parts = [*getattr(definition, "decorator_list", []), *getattr(definition, "bases", [])]
        for part in parts:
            self._expressions(part, function, guarded)
        for parameter, default in _defaults(getattr(definition, "args", None)):
            held = self._class_values(default, function)
            if held:
                self.aliases[definition][parameter] = held
            self._expressions(default, function, guarded, self._naming_classes(default, function))

    def _expressions(
        self,
        node: ast.AST,
        function: ast.AST | None,
        guarded: bool,
        harmless: set[int] | None = None,
    ) -> None:
        """The module's classes named anywhere in ``node`` (:meth:`_mention`)."""
        harmless = set() if harmless is None else harmless
        for inner in ast.walk(node):
            self._mention(inner, function, guarded, harmless)

    def _class_values(self, node: ast.expr, function: ast.AST | None) -> list[_Class]:
        """The module's classes ``node`` may be: a class, an alias of some, a registry's entry,
        or an ``or`` or ``if``-``else`` of them (what else it may be builds none of them)."""
        if isinstance(node, ast.Name):
            one = self.classes.get(node.id)
            return (
                [one] if one is not None else list(self.aliases.get(function, {}).get(node.id, []))
            )
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            return list(self.registries.get(node.value.id, []))
        parts = node.values if isinstance(node, ast.BoolOp) else []
        if isinstance(node, ast.IfExp):
            parts = [node.body, node.orelse]
        return [one for part in parts for one in self._class_values(part, function)]

    def _naming_classes(self, node: ast.expr, function: ast.AST | None) -> set[int]:
        """The names in ``node`` that :meth:`_class_values` reads: harmless mentions."""
        named = {*self.classes, *self.registries, *self.aliases.get(function, {})}
        return {id(n) for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in named}

    def _mention(
        self, node: ast.AST, function: ast.AST | None, guarded: bool, harmless: set[int]
    ) -> None:
        """A class of the module named by ``node``, met before its children: a call of one (or
        of an alias or a registry's entry) is a build of it; any other mention lets it escape,
        but those ``harmless`` collects (the callee of a build, ``C.x``, ``isinstance(y, C)``,
        the value bound to an alias)."""
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            held = self._class_values(node.value, function)
            if held and isinstance(target, ast.Name):
                self.aliases[function].setdefault(target.id, []).extend(held)
                harmless.update(self._naming_classes(node.value, function))
            elif (
                isinstance(node.value, ast.Dict)
                and function is None
                and getattr(target, "id", "") in self.registries
            ):
                harmless.update(map(id, node.value.values))  # (its entries: called, or escapes)
        elif isinstance(node, ast.Call):
            callee = node.func
            held = self._class_values(callee, function)
            if held and isinstance(callee, (ast.Name, ast.Subscript)):
                for one in {id(one): one for one in held}.values():
                    one.builds.append((node, function, guarded))
                harmless.update(self._naming_classes(callee, function))
            elif (
                isinstance(callee, ast.Name)
                and callee.id in ("isinstance", "issubclass")
                and len(node.args) == 2
            ):
                kinds = node.args[1]
                harmless.update(map(id, getattr(kinds, "elts", [kinds])))
            elif isinstance(callee, ast.Name) and callee.id == "cls" and function in self.owner:
                self.owner[function].escapes = True  # a classmethod builds its class
        elif isinstance(node, ast.Attribute):
            harmless.add(id(node.value))
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in harmless
        ):
            for one in self._class_values(node, function) or self.registries.get(node.id, []):
                one.escapes = True

    # --- Proving ------------------------------------------------------------------------------
    def solve(self) -> None:
        changed = True
        while changed:
            changed = False
            for name, one in self.classes.items():
                for parameter in one.parameters:
                    key = (name, parameter)
                    if key not in self.params and self._parameter(one, parameter):
                        self.params.add(key)
                        changed = True
                for attribute, values in one.attributes.items():
                    key = (name, attribute)
                    if key in self.attributes or attribute in self.foreign:
                        continue
                    if _produces(v for v, _, _ in values) and all(
                        guarded or self._value(value, method) for value, method, guarded in values
                    ):
                        self.attributes.add(key)
                        changed = True
            for flag, given in self.locals[None].items():
                if flag in self.flags or flag in self.globals or flag in self.unknown[None]:
                    continue
                if _produces(v for v, _ in given) and all(
                    guarded or self._value(value, None) for value, guarded in given
                ):
                    self.flags.add(flag)
                    changed = True

    def _parameter(self, one: _Class, parameter: str) -> bool:
        if one.escapes or not one.builds:
            return False
        position = one.parameters.index(parameter)
        by_position = position < one.positional  # (not keyword-only)
        for call, function, guarded in one.builds:
            # (Given by its keyword, a parameter is in no `**kwargs` and no `*args` of the call.)
            given = next((k.value for k in call.keywords if k.arg == parameter), None)
            if given is None and any(k.arg is None for k in call.keywords):
                return False
            if given is None and by_position:
                if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
                    return False
                if position < len(call.args):
                    given = call.args[position]
            if given is None:
                default = one.defaults.get(parameter)
                if default is None or not _falsy(default):
                    return False
            elif not (guarded or self._value(given, function)):
                return False
        return True

    def _value(self, value: ast.expr, function: ast.AST | None, depth: int = 0) -> bool:
        """Whether ``value``, read in ``function``, is a CUDA-only thing or nothing."""
        if _falsy(value):
            return True
        if isinstance(value, ast.IfExp):
            said = self._says(value.test, function)
            if said is True and self._value(value.orelse, function, depth):
                return True
            if said is False and self._value(value.body, function, depth):
                return True
            return self._value(value.body, function, depth) and self._value(
                value.orelse, function, depth
            )
        name = dotted(value)
        if name is None or depth > 3:
            return False
        if name.startswith("self.") and name.count(".") == 1:
            one = self.owner.get(function) if function is not None else None
            return one is not None and (one.node.name, name[5:]) in self.attributes
        if "." in name:
            return False
        if name in self.unknown[function]:
            return False
        if function is not None and name in self.parameters.get(function, ()):
            one = self.owner.get(function)
            if not (one and getattr(function, "name", "") == "__init__"):
                return False
            if (one.node.name, name) not in self.params:
                return False
        elif function is None or name not in self.locals[function]:
            return name in self.flags  # a module-level name
        return all(
            guarded or self._value(given, function, depth + 1)
            for given, guarded in self.locals[function].get(name, [])
        )

    def _says(self, test: ast.expr, function: ast.AST | None, depth: int = 0) -> bool | None:
        """:func:`says_cuda`, which also reads a name bound to such a test
        (``use_streams = enabled and torch.cuda.is_available()``), in the function or the
        module, and an ``and`` of one."""
        said = says_cuda(test)
        if said is not None or depth > 3:
            return said
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return True if any(self._says(v, function, depth + 1) for v in test.values) else None
        if not isinstance(test, ast.Name):
            return None
        if function is not None and test.id in self.parameters.get(function, ()):
            return None
        scope = function if function is not None and test.id in self.locals[function] else None
        given = self.locals[scope].get(test.id, [])
        if not given or test.id in self.unknown[scope] or test.id in self.globals:
            return None
        return True if all(self._says(v, scope, depth + 1) for v, _ in given) else None

    def names(self) -> frozenset[str]:
        """``self.x`` where every class of the module that assigns it holds only such values in
        it, and the module-level flags."""
        assigned: dict[str, list[bool]] = defaultdict(list)
        for name, one in self.classes.items():
            for attribute in one.attributes:
                assigned[attribute].append((name, attribute) in self.attributes)
        attributes = {f"self.{a}" for a, proved in assigned.items() if all(proved)}
        return frozenset(attributes | self.flags)


def _produces(values: Iterator[ast.expr]) -> bool:
    """Whether one of the values may be something (not all ``None``/``False``): a name that is
    only ever nothing holds nothing CUDA-only, and may be set from outside the module."""
    return not all(_falsy(value) for value in values)


def _signature(one: _Class, init: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    arguments = init.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)][1:]
    one.parameters = positional + [a.arg for a in arguments.kwonlyargs]
    one.positional = len(positional)
    one.defaults.update(_defaults(arguments))


def _registries(tree: ast.Module, classes: dict[str, _Class]) -> dict[str, list[_Class]]:
    """Module-level dicts whose values are all classes of the module (``LAYER_TYPES = {"attention":
    AttentionLayer, "linear": LinearLayer}``): an entry called is a build of one of them."""
    found: dict[str, list[_Class]] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Dict)):
            continue
        values = statement.value.values
        held = [classes.get(v.id) if isinstance(v, ast.Name) else None for v in values]
        if values and all(held):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = [one for one in held if one is not None]
    return found


def _defaults(arguments: ast.arguments | None) -> Iterator[tuple[str, ast.expr]]:
    """Each parameter that has a default, with it."""
    if arguments is None:
        return
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = arguments.defaults
    yield from zip(
        (a.arg for a in positional[len(positional) - len(defaults) :]), defaults, strict=True
    )
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if default is not None:
            yield argument.arg, default


def _own_names(definition: ast.stmt) -> set[str]:
    """The names a nested definition binds for itself (its parameters, what it stores): they
    shadow the enclosing function's."""
    found = {definition.name} if hasattr(definition, "name") else set()
    for node in ast.walk(definition):
        if isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
    return found


def guarded_imports(tree: ast.Module) -> dict[str, str]:
    """The names the module imports only under a CUDA check at its top level (``if _is_cuda:
    from sgl_kernel import silu_and_mul``, also in a ``try`` there) and binds nowhere else (but
    to ``None``), each with what says so: a function that uses one before it can return fails
    off CUDA, as one that uses a library of the table does
    (:func:`portlint.platform.library_bindings`), and a test that one is not None holds only
    on CUDA."""
    guarded: dict[str, str] = {}
    checks: list[ast.If] = []
    for statement in tree.body:
        if not isinstance(statement, ast.If):
            continue
        said = says_cuda(statement.test)
        if said is None:
            continue
        for node in _imports_of(statement.body if said else statement.orelse):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or node.names[0].name
                test = ast.unparse(statement.test)
                for alias in node.names:
                    name = (alias.asname or alias.name).partition(".")[0]
                    guarded[name] = (
                        f"`{module}`, imported only under `if {test}:` (line {statement.lineno})"
                    )
                checks.append(statement)
    if not guarded:
        return guarded  # (most modules: nothing more to read)
    elsewhere: set[str] = set()
    for statement in tree.body:
        if not (isinstance(statement, ast.If) and statement in checks):
            elsewhere |= _bound_here(statement)
            continue
        said = says_cuda(statement.test)
        for node in statement.orelse if said else statement.body:
            elsewhere |= _bound_here(node)
        for node in statement.body if said else statement.orelse:
            if isinstance(node, ast.Try):  # (its imports are the arm's; the rest binds too)
                rest = [s for s in node.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
                handled = [s for handler in node.handlers for s in handler.body]
                for other in [*rest, *handled, *node.orelse, *node.finalbody]:
                    elsewhere |= _bound_here(other)
            elif not isinstance(node, (ast.Import, ast.ImportFrom)):
                elsewhere |= _bound_here(node)
    return {name: why for name, why in guarded.items() if name not in elsewhere}


def _imports_of(arm: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of an arm, with those of the body of a ``try`` in it."""
    return [s for node in arm for s in (node.body if isinstance(node, ast.Try) else [node])]


def library_loaders(tree: ast.Module, libraries: tuple[str, ...]) -> dict[str, str]:
    """The module's top-level functions that import one of ``libraries`` before anything in them
    can return (a loader: ``def _driver_modules(): from cuda.bindings import driver``), bound
    nowhere else, each with what says so: a call of one fails wherever the library is missing,
    as the import does. (Not a generator or a coroutine: calling one runs nothing.)"""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for index, statement in enumerate(node.body):  # (its own statements: cheap to look at)
            if isinstance(statement, ast.ImportFrom) and not statement.level:
                module = statement.module  # (`from cuda import cudart` too)
            elif isinstance(statement, ast.Import):
                module = None
            else:
                continue
            imported = [f"{module}.{a.name}" if module else a.name for a in statement.names]
            library = first_import_of([(n, 0) for n in [module or "", *imported]], libraries)
            if library is None:
                continue
            if not holds_own(node.body[:index], (ast.Return, ast.Raise)) and not yields(node):
                found[node.name] = (
                    f"`{library[0]}`, which exists only for NVIDIA or AMD GPUs "
                    f"(`{node.name}` imports it, line {statement.lineno})"
                )
            break
    if not found:
        return found
    elsewhere: set[str] = set()
    for statement in tree.body:
        if not (isinstance(statement, ast.FunctionDef) and statement.name in found):
            elsewhere |= _bound_here(statement)
    names = [s.name for s in tree.body if isinstance(s, ast.FunctionDef)]
    twice = {name for name in found if names.count(name) > 1}
    return {name: why for name, why in found.items() if name not in elsewhere | twice}


def _bound_here(statement: ast.stmt) -> set[str]:
    """The names a module-level statement binds in the module (in its blocks too, not in the
    functions and classes it defines), but to ``None``."""
    bound: set[str] = set()
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            bound.add(node.name)
            continue
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    for target, value in _assignments(statement):
        if isinstance(target, ast.Name) and _falsy(value):
            bound.discard(target.id)
    return bound


def _library_imported(statement: ast.stmt, libraries: tuple[str, ...]) -> int | None:
    """For a ``try``: where in its body the statements after its first import of one of
    ``libraries`` start (they, and its ``else``, run only where the import did); None where there
    is none, or for any other statement."""
    if not (libraries and isinstance(statement, (ast.Try, *TRY_STAR))):
        return None
    for index, node in enumerate(statement.body):  # type: ignore[attr-defined]
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if first_import_of([(name, 0) for name in names], libraries) is not None:
            return index + 1
    return None


def _makes_any(
    body: list[ast.stmt],
    guarded: bool = False,
    scope: str = "module",
    libraries: tuple[str, ...] = (),
) -> bool:
    """Whether a block assigns a CUDA-only thing (``a if <CUDA> else None``, or anything but
    ``None``/``False`` under a CUDA check) to what this module reads across functions: ``self.x``, a module-level name, or
    a local of an ``__init__`` (which builds the layers it is handed to). Statements only are
    walked (cheap): most modules have none, and then nothing more is read."""
    for statement in body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            value = statement.value
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            shared = scope != "function" or any(
                (dotted(t) or "").startswith("self.") for t in targets
            )
            if shared and (
                (guarded and value is not None and not _falsy(value))
                or (isinstance(value, ast.IfExp) and says_cuda(value.test) is not None)
            ):
                return True
        elif isinstance(statement, ast.If):
            said = says_cuda(statement.test)
            if _makes_any(statement.body, guarded or said is True, scope, libraries):
                return True
            if _makes_any(statement.orelse, guarded or said is False, scope, libraries):
                return True
        elif isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            inner = "class" if isinstance(statement, ast.ClassDef) else "function"
            inner = "init" if getattr(statement, "name", "") == "__init__" else inner
            if _makes_any(statement.body, False, inner, libraries):
                return True
        else:
            body = getattr(statement, "body", [])
            imported = _library_imported(statement, libraries)
            split = len(body) if imported is None else imported
            after = guarded or imported is not None
            blocks = [
                (body[:split], guarded), (body[split:], after),
                (getattr(statement, "orelse", []), after),
                (getattr(statement, "finalbody", []), guarded),
                *((handler.body, guarded) for handler in getattr(statement, "handlers", [])),
            ]  # fmt: skip
            if any(_makes_any(block, inside, scope, libraries) for block, inside in blocks):
                return True
    return False


def cuda_only_values(
    tree: ast.Module, source: str, libraries: tuple[str, ...] = ()
) -> frozenset[str]:
    """The names of ``tree`` that hold only a CUDA-only thing or nothing (see the module's
    docstring): ``self.x`` attributes, as the guard analysis names them, and module-level
    flags. ``libraries``: those that exist only for NVIDIA or AMD GPUs (the table)."""
    if not _makes_any(tree.body, libraries=libraries):
        return frozenset()
    module = _Module(tree, source, libraries)
    module.solve()
    return module.names()
