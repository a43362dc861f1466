"""Partial parsing: the cut keeps what the rules can report on (and the callers, launches and
classes they need), maps every line back, and finds what whole files find."""

from __future__ import annotations

import pytest

from portlint.engine import lint_source
from portlint.registry import all_rules
from portlint.settings import Settings
from portlint.speed.cut import NOTHING, parse_ast
from tests.helpers import CUDA_API, OWN_CODE, REPO, in_place
from tests.helpers import cut as cut_of


@pytest.mark.parametrize("path", OWN_CODE, ids=lambda p: str(p.relative_to(REPO)))
def test_partial_parsing_finds_exactly_what_whole_files_find(path):
    source = path.read_text()
    codes = frozenset(all_rules())
    whole = lint_source(str(path), source, Settings(select=codes, partial_parse=False),
                        fix_edits=False)  # fmt: skip
    partial = lint_source(str(path), source, Settings(select=codes), fix_edits=False)
    assert partial == whole


def test_partial_parsing_keeps_callers_positions_and_drops_the_rest():
    body = "".join(f"    x = x + {i}\n" for i in range(12))
    source = (
        "import torch\n\n\ndef unrelated(x):\n" + body + "    return x\n\n\n"
        "class Runner:\n"
        "    def __init__(self):\n        self.device = None\n\n"
        "    def helper(self):\n" + body.replace("    ", "        ") + "        return 2\n\n"
        "    @staticmethod\n    def warm():\n        return torch.zeros(2, device='cuda')\n\n"
        "    def run(self):\n        return self.warm()\n"
    )
    cut = cut_of(source, "PORT101")
    assert cut is not None
    # the statements still there: the import and the class (``unrelated`` is gone)
    assert [type(s).__name__ for s in cut.statements] == ["Import", "ClassDef"]
    sliced = cut.text
    assert in_place(cut, source)
    assert [line for line in sliced.splitlines() if line.strip()] == [
        "import torch",
        "class Runner:",
        "    def __init__(self):",
        "        self.device = None",
        "    pass",
        "    @staticmethod",
        "    def warm():",
        "        return torch.zeros(2, device='cuda')",
        "    def run(self):",
        "        return self.warm()",
    ]
    assert parse_ast("def f(:\n") is None  # does not parse: the whole file, to LibCST
    # cut even when most of the file is kept; nothing to drop: the whole file
    mostly_kept = "def a(x):\n" + body + "    return x.to('cuda')\n\n\ndef b():\n    pass\n"
    cut = cut_of(mostly_kept, "PORT101")
    assert cut.text == mostly_kept.replace("def b():\n    pass\n", "")
    assert cut.lines == list(range(1, len(mostly_kept.splitlines()) - 1))
    assert cut_of("def a(x):\n    return x.to('cuda')\n", "PORT101") is None
    # nowhere a rule can report: nothing to parse
    assert cut_of("def a():\n    return 'cuda'\n", "PORT101") is NOTHING


def test_partial_parsing_counts_lines_as_python_does():
    """A form feed ends no line for Python (``str.splitlines`` says it does): the cut must
    drop the unit's own lines, and the finding stays where it is."""
    source = "import torch\n\f\ndef a():\n    return 1\n\n\ndef b(x):\n    return x.to('cuda')\n"
    cut = cut_of(source, "PORT101")
    # (`import torch` goes too: nothing kept uses it)
    assert cut.text == "\f\n\n\ndef b(x):\n    return x.to('cuda')\n"
    assert cut.lines == [2, 5, 6, 7, 8]
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(8, 17)]


def test_partial_parsing_keeps_the_units_that_use_a_triggering_import():
    filler = "".join(f"    y = y + {i}\n" for i in range(20))
    source = (
        "from torch.cuda import nvtx\n\n\ndef other(y):\n" + filler + "    return y\n\n\n"
        "def push(name):\n    nvtx.range_push(name)\n"
    )
    sliced = cut_of(source, "PORT408").text
    assert "    nvtx.range_push(name)" in sliced and "y + 3" not in sliced
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT408"})), fix_edits=False)
    assert [(v.line, v.code) for v in found] == [(len(source.splitlines()), "PORT408")]


def test_partial_parsing_keeps_the_callers_the_model_counts():
    """A kept method's callers are ``self.m``/``cls.m`` in its class and ``C.m`` anywhere (as the
    platform model counts them, for a private method); another class's ``x._forward()`` is no caller of ``A._forward``."""
    filler = "".join(f"        y = y + {i}\n" for i in range(5))
    source = (
        "import torch\n\n\nclass A:\n"
        "    def _forward(self):\n        torch.cuda.synchronize()\n\n"
        "    def run(self, y):\n" + filler + "        return self._forward()\n\n\n"
        "class B:\n"
        "    def step(self, x, y):\n" + filler + "        return x._forward()\n\n"
        "    def call(self, y):\n" + filler + "        return A._forward(y)\n"
    )
    kept = [line.strip() for line in cut_of(source, "PORT401").text.splitlines()]
    assert "return self._forward()" in kept and "return A._forward(y)" in kept
    assert "return x._forward()" not in kept
    # Guarded only through its callers: all of them must be in the cut, and are.
    guarded = source.replace(
        "        return self._forward()", "        if current_platform.is_cuda():\n"
        "            return self._forward()"
    ).replace("        return A._forward(y)", "        assert current_platform.is_cuda()\n"
              "        return A._forward(y)")  # fmt: skip
    cuda_api = CUDA_API
    settings = Settings(select=cuda_api)
    whole = Settings(select=cuda_api, partial_parse=False)
    assert lint_source("m.py", guarded, settings, fix_edits=False) == []
    assert lint_source("m.py", guarded, whole, fix_edits=False) == []
    assert [v.line for v in lint_source("m.py", source, settings, fix_edits=False)] == [6]
    # One caller guarded, `A._forward(y)` not: still reported, which needs that caller in the cut.
    half = source.replace(
        "        return self._forward()",
        "        if current_platform.is_cuda():\n            return self._forward()",
    )
    assert [v.line for v in lint_source("m.py", half, settings, fix_edits=False)] == [6]
    assert [v.line for v in lint_source("m.py", half, whole, fix_edits=False)] == [6]


def test_partial_parsing_keeps_a_kernels_header_and_launches_and_no_needless_callers():
    """A Triton kernel's body is Triton code, which no rule reads: only its decorators and
    signature are kept, and the functions that launch it (``kernel[grid](...)``, what PORT202
    checks). Callers are kept only for the guardable rules (whose findings depend on them):
    ``caller`` and ``uses_grow`` go."""
    source = (
        "import torch\nimport triton\n\n\n"
        "@triton.jit\ndef helper(x):\n    return x + 1\n\n\n"
        "@triton.jit\ndef kernel(x_ptr, n):\n    y = tl.load(x_ptr)\n    if helper(n):\n"
        "        y = n\n    tl.store(x_ptr, y)\n\n\n"
        "def launch(n):\n    x = torch.arange(n)\n    kernel[(1,)](x, n)\n\n\n"
        "def caller(n):\n    return launch(n)\n\n\n"
        "def grow(n):\n    return torch.arange(n).new_empty(3)\n\n\n"
        "def uses_grow(t):\n    return grow(t)\n"
    )
    cut = cut_of(source, "PORT201", "PORT202")
    assert in_place(cut, source)
    assert [line for line in cut.text.splitlines() if line.strip()] == [
        "import torch",
        "import triton",
        "@triton.jit",
        "def helper(x):",
        "    pass",
        "@triton.jit",
        "def kernel(x_ptr, n):",
        "    pass",
        "def launch(n):",
        "    x = torch.arange(n)",
        "    kernel[(1,)](x, n)",
        "def grow(n):",
        "    return torch.arange(n).new_empty(3)",
    ]
    codes = frozenset({"PORT201", "PORT202"})
    found = lint_source("m.py", source, Settings(select=codes), fix_edits=False)
    assert [(v.line, v.col, v.code) for v in found] == [(20, 18, "PORT202")]
    whole = Settings(select=codes, partial_parse=False)
    assert lint_source("m.py", source, whole, fix_edits=False) == found
    # A body that mentions a trigger is kept whole (a factory that defines a kernel, say).
    factory = source.replace("    if helper(n):\n", "    if helper(n):  # not triton.jit\n")
    cut = cut_of(factory, "PORT201", "PORT202")
    assert "    if helper(n):  # not triton.jit" in cut.text
    # With a guardable rule, the callers of a unit it concerns stay (to a fixpoint).
    guarded = source.replace("x = torch.arange(n)", "x = torch.arange(n, device='cuda')")
    kept = cut_of(guarded, "PORT101", "PORT201", "PORT202").text
    assert "    return launch(n)" in kept and "    return grow(n)" not in kept


def test_partial_parsing_drops_the_module_level_code_nothing_kept_needs():
    """An import that defines no name kept code mentions is dropped; so is an assignment,
    expression or class whose methods all go when it mentions no trigger, binds no name kept code
    mentions and mentions no function kept code defines (a caller the guard analysis counts:
    ``warm()``)."""
    source = (
        "import torch\nimport os.path\nfrom torch.cuda import nvtx\n"
        "LIMIT = 8\nUNUSED = compute()\nprint('loaded')\nwarm()\n"
        "class Config:\n    size = 3\n\n    def get(self):\n        return self.size\n"
        "class Used:\n    def get(self):\n        return 1\n"
        "def warm():\n    x = Used()\n    return torch.zeros(LIMIT, device='cuda')\n"
    )
    cut = cut_of(source, "PORT101")
    assert [line for line in cut.text.splitlines() if line.strip()] == [
        "import torch",
        "LIMIT = 8",
        "warm()",
        "class Used:",
        "    pass",
        "def warm():",
        "    x = Used()",
        "    return torch.zeros(LIMIT, device='cuda')",
    ]
    assert [type(s).__name__ for s in cut.statements] == [
        "Import", "Assign", "Expr", "ClassDef", "FunctionDef"
    ]  # fmt: skip
    found = lint_source("m.py", source, Settings(select=frozenset({"PORT101"})), fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(18, 38)]
    whole = Settings(select=frozenset(all_rules()), partial_parse=False)
    partial = Settings(select=frozenset(all_rules()))
    assert lint_source("m.py", source, partial, fix_edits=False) == lint_source(
        "m.py", source, whole, fix_edits=False
    )


def test_a_guarded_function_covers_its_body_not_its_decorators():
    """Only called under a CUDA guard: its body runs on CUDA only; its decorators run where it
    is defined."""
    source = (
        "import torch\n\n\n"
        "@register(torch.cuda.current_device())\n"
        "def _warm():\n    torch.cuda.synchronize()\n\n\n"
        "def run():\n    if torch.version.cuda is not None:\n        _warm()\n"
    )
    settings = Settings(select=CUDA_API)
    found = lint_source("m.py", source, settings, fix_edits=False)
    assert [(v.line, v.col) for v in found] == [(4, 11)]


def test_the_cut_keeps_the_init_where_a_class_sets_the_flags_its_kept_callers_test():
    """A helper is guarded through its caller, which tests a flag `__init__` sets: the cut must
    keep `__init__` for the caller (kept for the guard analysis), not only for the helper."""
    from tests.helpers import lint_all_ways

    filler = "".join(f"        y = y + {i}\n" for i in range(6))
    source = (
        "import torch\nfrom platforms import current_platform\n\n\n"
        "def _fused(x):\n    return torch.cuda.is_current_stream_capturing()\n\n\n"
        "class Layer:\n"
        "    def __init__(self):\n        self.fast = current_platform.is_cuda() and ok()\n\n"
        "    def unrelated(self, y):\n" + filler + "        return y\n\n"
        "    def forward(self, x):\n        if self.fast:\n            return _fused(x)\n"
        "        return x\n"
    )
    ways = lint_all_ways(source, CUDA_API)
    assert ways["partial"] == ways["whole"] == ways["ungated"]
    assert ways["partial"][0] == [] and len(ways["partial"][1]) == 1


def test_a_generic_container_made_by_subscript_is_no_kernel_launch():
    """``dict[str, int]()`` and ``Deque[int]()`` call a subscript too: they keep no unit for
    PORT202, which a launch (``kernel[grid](...)``, ``module.kernel[grid](...)``) does."""
    from portlint.speed.cut import launch_lines

    source = (
        "x = dict[str, int]()\ny = kernel[(n,)](a, b)\nz = list[tuple[int, X]]()\n"
        "w = mod.k[grid](a)\nv = Foo[int]()\nu = table[key](x)\n"
    )
    assert sorted(launch_lines(source)) == [2, 4, 6]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('import torch; x = torch.device("cuda")\n', [("PORT101", 1, 19)]),
        ("import torch\nimport os; torch.cuda.synchronize()\n", [("PORT401", 2, 12)]),
        ("import torch\nx = 1; import os; y = torch.device('cuda')\n", [("PORT101", 2, 23)]),
        ("import torch, os; torch.cuda.synchronize()\nimport sys\n", [("PORT401", 1, 19)]),
    ],
)
def test_a_statement_that_shares_its_line_with_an_import_is_linted(source, expected):
    """Issue #52: the cut dropped an import's whole line, and what shared it with the import."""
    codes = frozenset(all_rules())
    for partial in (True, False):
        settings = Settings(select=codes, partial_parse=partial)
        found = lint_source("m.py", source, settings, fix_edits=False)
        assert [(v.code, v.line, v.col) for v in found] == expected, partial
