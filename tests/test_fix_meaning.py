"""What fixes and messages mean: every suggestion exists in torch, every fix keeps the program's
meaning on CUDA, fixes converge and never write what another rule reports (issue #20)."""

from __future__ import annotations

import functools
import textwrap
import types
import warnings
from typing import Any

import pytest

from portlint.cuda_api import (
    APIS,
    DEVICE_MODULE,
    MEMBERS,
    MEMBERS_SINCE,
    MEMBERS_UNTIL,
    NEWEST_KNOWN,
    OTHER_API,
    Version,
    lookup,
    members_at,
    parse_version,
    since,
    suggestion,
)
from portlint.fix_rounds import fix_source
from portlint.registry import all_rules
from portlint.settings import Settings
from tests.helpers import REPO, lint

ATTRIBUTES = REPO / "tests" / "data" / "cuda_attributes.txt"
EVERY_RULE = frozenset(all_rules())


# Every rule, with no inference about the platform: a guard's own finding stands (in real code
# the guards portlint does not recognise are where a rewritten check would un-guard code).
UNGUARDED = Settings(select=EVERY_RULE, platform_inferences=frozenset())


def fixed(source: str) -> str:
    """``source`` after ``--fix --unsafe-fixes``, every rule, no platform inferences."""
    return fix_source("case.py", source, UNGUARDED, unsafe=True).source


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


def device_module_members(torch) -> set[str]:
    """The functions and classes torch.cuda shares with torch.xpu (not imported modules, typing
    helpers or module constants)."""
    shared = set()
    for name in public(torch.cuda) & public(torch.xpu):
        values = getattr(torch.cuda, name), getattr(torch.xpu, name)
        if not any(isinstance(v, types.ModuleType) for v in values) and all(
            (getattr(v, "__module__", "") or "").startswith("torch") for v in values
        ):
            shared.add(name)
    return shared


def first_release(replacement: str) -> Version:
    """The first torch release the table names ``replacement`` in (a portable type's members
    exist from there on)."""
    return min(api.since for api in (*APIS, OTHER_API) if api.replacement == replacement)


def portable_members(torch, replacement: str) -> set[str]:
    """The members of a portable type (a key of MEMBERS) in ``torch``, as MEMBERS lists them."""
    if replacement == DEVICE_MODULE:
        return device_module_members(torch)
    return public(resolve(torch, replacement))


def test_the_dated_members_are_members_dated_after_their_types_first_release():
    """MEMBERS_SINCE and MEMBERS_UNTIL date members of MEMBERS, within the releases portlint
    knows: a member dated at its type's first release (or one never dropped) is no fact."""
    for table, later in ((MEMBERS_SINCE, True), (MEMBERS_UNTIL, False)):
        for dotted, version in table.items():
            replacement, _, member = dotted.rpartition(".")
            assert member in MEMBERS[replacement], dotted
            assert first_release(replacement) < version if later else version < NEWEST_KNOWN
            assert version <= NEWEST_KNOWN, dotted
    for dotted in MEMBERS_UNTIL.keys() & MEMBERS_SINCE.keys():
        assert MEMBERS_SINCE[dotted] <= MEMBERS_UNTIL[dotted], dotted


@pytest.mark.torch_api
def test_the_members_of_the_portable_types_are_torchs():
    """Each set as the installed torch has it (its release's members: MEMBERS_SINCE and
    MEMBERS_UNTIL), where it has the type; a type the table names from a later release it
    lacks. (`python scripts/torch_members.py` says what differs.)"""
    torch = pytest.importorskip("torch")
    installed = parse_version(torch.__version__)
    for replacement in MEMBERS:
        if first_release(replacement) <= installed:
            assert members_at(replacement, installed) == portable_members(torch, replacement), (
                replacement
            )
        else:
            assert not resolves(torch, replacement), replacement


def resolve(torch, dotted: str) -> object:
    """The object a suggestion names, in the installed torch; AttributeError if there is none. A
    member of the device module must be in torch.xpu and torch.cuda alike."""
    if dotted.startswith(DEVICE_MODULE + "."):
        name = dotted[len(DEVICE_MODULE) + 1 :]
        getattr(torch.cuda, name)
        return getattr(torch.xpu, name)
    if dotted == DEVICE_MODULE:
        return torch.get_device_module
    return functools.reduce(getattr, dotted.split(".")[1:], torch)


def resolves(torch, dotted: str) -> bool:
    try:
        resolve(torch, dotted)
    except AttributeError:
        return False
    return True


def needed(name: str, dotted: str) -> str:
    """What a suggestion ``dotted`` for ``name`` needs of torch: the replacement of a context
    manager taking the object to enter (``with torch.cuda.stream(s):``, ``with s:``) needs the
    type to be one (``torch.Stream.__enter__``, torch 2.7), not only to exist."""
    api = lookup(name)
    if api is not None and api.argument_is_context and dotted == api.replacement:
        return f"{dotted}.__enter__"
    return dotted


@pytest.mark.torch_api
def test_every_suggestion_for_the_corpora_exists_in_torch():
    """For each torch.cuda attribute vLLM, SGLang, DeepSpeed, transformers and accelerate use
    (scripts/collect_cuda_attributes.py), what portlint suggests resolves in the installed torch
    where the release it names is the installed one or older, and does not where it is newer
    (no release portlint accepts has it before the release it names)."""
    torch = pytest.importorskip("torch")
    installed = parse_version(torch.__version__)
    names = ATTRIBUTES.read_text().split()
    assert len(names) > 80
    suggested = {name: suggestion(name) for name in names}
    for name, dotted in suggested.items():
        if dotted is not None:
            api = lookup(name)
            assert api is not None
            first = since(api, dotted)
            assert resolves(torch, needed(name, dotted)) == (first <= installed), (name, first)
            if first <= installed:  # (what a project targeting the installed torch is told)
                assert suggestion(name, installed) == dotted, name
    # The ones the issue found wrong have no portable equivalent; the shared ones keep theirs.
    for name in (
        "torch.cuda.profiler.start",
        "torch.cuda.profiler.stop",
        "torch.cuda.memory._snapshot",
        "torch.cuda.memory._set_allocator_settings",
        "torch.cuda.Stream.priority_range",
    ):
        assert suggested[name] is None, name
    assert suggested["torch.cuda.get_device_name"] == f"{DEVICE_MODULE}.get_device_name"
    assert suggested["torch.cuda.Event.record"] == "torch.Event.record"
    assert suggested["torch.cuda.memory_cached"] == "torch.accelerator.memory.memory_reserved"


def messages(source: str, *codes: str) -> list[str]:
    return [v.message for v in lint(textwrap.dedent(source), *codes)]


def explained(source: str, *codes: str) -> list[str]:
    """Each finding's message and detail, as `--output-format full` shows them."""
    return [f"{v.message}\n{v.detail}" for v in lint(textwrap.dedent(source), *codes)]


def test_a_device_name_built_over_lines_is_suggested_on_one_line():
    """A message and its detail are one line each (the concise format, editors and CI
    annotations show one): the suggested code of a name built over two lines is written on one,
    its fix keeps the lines."""
    source = "def f(x, index):\n    return x.to('cuda:{}'.format(\n        index))\n"
    (violation,) = lint(source, "PORT101")
    assert "\n" not in violation.message and "\n" not in violation.detail
    assert violation.detail.endswith("+ ':{}').format( index)`.")
    assert violation.fix is not None and "\n" not in violation.fix.message


def test_a_name_with_no_portable_equivalent_is_said_to_have_none():
    found = messages("import torch\ntorch.cuda.profiler.start()\n", "PORT409")
    assert found == ["CUDA-only `torch.cuda.profiler.start`; torch has no portable equivalent"]


@pytest.mark.parametrize(
    ("source", "code", "named"),
    [
        # PORT101 said "e.g. `worker.device`" in functions without `worker`.
        ("import torch\ndef f(x):\n    return torch.device('cuda')\n", "PORT101",
         "`torch.accelerator.current_accelerator()`"),
        ("import torch\ndef f(worker):\n    return torch.device('cuda')\n", "PORT101",
         "`worker.device`"),
        ("import torch\ndef f(x: torch.Tensor):\n    return torch.device('cuda')\n", "PORT101",
         "`x.device`"),
        ("import torch\nclass M:\n    def __init__(self, device):\n        self.device = device\n"
         "    def g(self, y):\n        return y.cuda()\n", "PORT102", "`.to(self.device)`"),
        ("import torch\ndef f(device):\n    return torch.cuda.get_device_name()\n", "PORT409",
         "`torch.get_device_module(device)` has it"),
        ("import torch\ndef f():\n    return torch.cuda.get_device_name()\n", "PORT409",
         "`torch.get_device_module().get_device_name`"),
        ("def fast(hidden):\n    return hidden.is_cuda\n", "PORT409", "`hidden.device.type`"),
        ("import torch.distributed as dist\ndist.init_process_group('nccl')\n", "PORT406",
         'get_default_backend_for_device(torch.accelerator.current_accelerator() if '
         'torch.accelerator.is_available() else "cpu")`'),
    ],
)  # fmt: skip
def test_messages_name_what_is_in_scope(source, code, named):
    (message,) = explained(source, code)
    assert named in message
    if "worker" not in source:
        assert "worker" not in message


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("import torch\nwith torch.autocast('cuda', dtype=torch.float32):\n    pass\n", True),
        ("import torch\nwith torch.amp.autocast('cuda', torch.float):\n    pass\n", True),
        ("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n", False),
        ("import torch\nwith torch.autocast('cuda', enabled=False):\n    pass\n", False),
    ],
)  # fmt: skip
def test_an_autocast_to_float32_is_said_to_turn_itself_off_elsewhere(source, refused):
    """torch's autocast takes float32 on CUDA only (elsewhere: "the target dtype is not
    supported. Disabling autocast"), so passing another device type does not keep the meaning
    of an autocast used to force float32 (fastvideo's `@torch.autocast(device_type="cuda",
    dtype=torch.float32)`)."""
    (message,) = messages(source, "PORT101")
    assert ("float32 works on CUDA only" in message) is refused
    assert ("`enabled=False`" in message) is refused
    (explanation,) = explained(source, "PORT101")
    assert ("warns and turns itself off" in explanation) is refused


@pytest.mark.torch_api
def test_torch_autocast_refuses_float32_off_cuda():
    """What the message above says, as the installed torch does it, on the CPU."""
    torch = pytest.importorskip("torch")
    refused = pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast")
    with refused, torch.autocast("cpu", dtype=torch.float32):
        assert not torch.is_autocast_enabled("cpu")


@pytest.mark.torch_api
def test_the_backward_of_a_forward_that_casts_its_inputs_runs_with_autocast_off_on_any_type():
    """Why PORT405 leaves ``@custom_bwd`` beside ``@custom_fwd(cast_inputs=...)`` alone, as the
    installed torch does it on the CPU: the backward (called outside autocast, as torch's docs
    ask) runs with autocast off and computes the same whether its decorator names the device in
    use or CUDA, and CUDA's names no device that is missing here (no warning)."""
    torch = pytest.importorskip("torch")
    seen: dict[str, tuple[bool, Any]] = {}

    def exp_function(backward_type: str) -> Any:
        class Exp(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.exp()

            @staticmethod
            @torch.amp.custom_bwd(device_type=backward_type)
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                seen[backward_type] = (torch.is_autocast_enabled("cpu"), (grad @ x.exp()).dtype)
                return grad * x.exp()

        return Exp

    grads = {}
    for backward_type in ("cpu", "cuda"):
        x = torch.linspace(-1, 1, 8, dtype=torch.bfloat16, requires_grad=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = exp_function(backward_type).apply(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y.sum().backward()
        grads[backward_type] = x.grad
    assert seen["cpu"] == seen["cuda"] == (False, torch.float32)
    assert torch.equal(grads["cpu"], grads["cuda"])


# The wrong shapes of issue #20, each with the fix it must get (None: no fix).
SHAPES = [
    pytest.param(
        "import torch\nclass M:\n    def __init__(self):\n        self.device = torch.device('cuda')\n",
        "import torch\nclass M:\n    def __init__(self):\n"
        "        self.device = torch.accelerator.current_accelerator()\n",
        id="self.device = self.device",
    ),
    pytest.param(
        "import torch\ndef f(x, device=torch.device('cuda')):\n    return x\n",
        "import torch\ndef f(x, device=torch.accelerator.current_accelerator()):\n    return x\n",
        id="default: device=device",
    ),
    pytest.param(
        "import torch\ndef norm(device: int | str | torch.device):\n    if isinstance(device, int):\n"
        "        device = torch.device(f'cuda:{device}')\n    return device\n",
        "import torch\ndef norm(device: int | str | torch.device):\n    if isinstance(device, int):\n"
        '        device = torch.device(f\'{getattr(torch.accelerator.current_accelerator(), "type", "cpu")}:{device}\')\n'
        "    return device\n",
        id="the index kept",
    ),
    pytest.param(
        "import torch\nclass H:\n    def __init__(self):\n        self.stream = torch.cuda.Stream()\n"
        "        self.ptr = self.stream.cuda_stream\n",
        None,
        id="the stream's .cuda_stream",
    ),
    pytest.param(
        "import torch\nclass H:\n    def __init__(self):\n        self.stream = torch.cuda.Stream()\n"
        "    def run(self, work):\n        with torch.cuda.stream(self.stream):\n            work()\n"
        "        self.stream.synchronize()\n",
        "import torch\nclass H:\n    def __init__(self):\n        self.stream = torch.Stream()\n"
        "    def run(self, work):\n        with self.stream:\n            work()\n"
        "        self.stream.synchronize()\n",
        id="a stream every use of which is portable",
    ),
    pytest.param(
        "import torch\nclass H:\n    def __init__(self):\n        self.side: torch.Stream | None = None\n"
        "    def run(self, work):\n        with torch.cuda.stream(self.side):\n            work()\n",
        None,
        id="with torch.cuda.stream(s) where s may be None",
    ),
    pytest.param(
        "import torch\ndef probe():\n    if not torch.cuda.is_available():\n"
        "        raise RuntimeError('needs CUDA')\n    return torch.cuda.get_device_name()\n",
        None,  # (nor get_device_name: its replacement is no fix)
        id="the guard kept",
    ),
    pytest.param(
        "import torch\ndef pick(x):\n    if torch.backends.mps.is_available():\n        return 'mps'\n"
        "    elif torch.cuda.is_available():\n        torch_device = 'cuda'\n    return torch_device\n",
        None,
        id="elif is_available: 'cuda'",
    ),
    pytest.param(
        "import torch\ndef world():\n    if torch.cuda.device_count() > 1:\n        run_nccl()\n",
        None,
        id="device_count in a condition",
    ),
    pytest.param(
        "import torch\nclass W:\n    def __init__(self, device: int):\n        self.device = device\n"
        "    def g(self):\n        return torch.device('cuda')\n",
        "import torch\nclass W:\n    def __init__(self, device: int):\n        self.device = device\n"
        "    def g(self):\n        return torch.device(self.device)\n",
        id="self.device storing an int",
    ),
    pytest.param(
        "def move(x):\n    return x.cuda()\n",
        "import torch\ndef move(x):\n    return x.to(torch.accelerator.current_accelerator())\n",
        id="x.cuda() never to x.device",
    ),
    pytest.param(
        "def move(x: torch.Tensor, y: torch.Tensor):\n    return x.cuda() + y\n",
        "import torch\ndef move(x: torch.Tensor, y: torch.Tensor):\n"
        "    return x.to(torch.accelerator.current_accelerator()) + y\n",
        id="x.cuda() never to another tensor's device",
    ),
    pytest.param(
        "def move(x, rank):\n    return x.cuda(rank, non_blocking=True)\n",
        "def move(x, rank):\n    return x.to(rank, non_blocking=True)\n",
        id="x.cuda(i) keeps i",
    ),
    pytest.param(
        "from hqq.core.quantize import HQQLinear\ndef move(model, device):\n"
        "    for module in model.modules():\n        if isinstance(module, HQQLinear):\n"
        "            module.cuda(device)\n",
        None,
        id="a class's own .cuda()",
    ),
    pytest.param(
        "import torch\nfrom torch import cuda\ncuda.synchronize()\n",
        None,
        id="from torch import cuda: its import would be left unused",
    ),
]


@pytest.mark.parametrize(("source", "expected"), SHAPES)
def test_each_wrong_shape_gets_the_fix_that_keeps_its_meaning(source, expected):
    assert lint(source, settings=UNGUARDED), "the shape is a finding"
    assert fixed(source) == (source if expected is None else expected)


SEED = REPO / "tests" / "seeds" / "capture_legacy_buggy.py"


def test_the_legacy_capture_seed_converges_in_one_round_without_a_fight():
    """PORT301's fix writes the portable stream (no torch.cuda.Stream or torch.cuda.stream for
    PORT402 to report), and PORT301 reads `with capture_stream:` as the warm-up's stream."""
    source = SEED.read_text()
    settings = Settings(select=EVERY_RULE)
    before = lint(source, *EVERY_RULE)
    assert [v.code for v in before if v.fix] == ["PORT301"]
    once = fix_source("seed.py", source, settings, unsafe=True)
    assert dict(once.applied) == {"PORT301": 1}
    assert "        capture_stream = torch.Stream()\n" in once.source
    assert "        capture_stream.wait_stream(torch.accelerator.current_stream())\n" in once.source
    assert (
        "        with capture_stream:\n            for _ in range(3):\n"
        "                step(static_input, weight)\n"
        "        torch.accelerator.current_stream().wait_stream(capture_stream)\n"
    ) in once.source
    assert "with torch.cuda.graph(g, stream=capture_stream):" in once.source
    after = lint(once.source, *EVERY_RULE)
    assert not any(v.fix for v in after)
    assert {v.code for v in after} == {v.code for v in before} - {"PORT301"}


def test_a_target_torch_without_with_stream_gets_the_cuda_forms():
    source = SEED.read_text()
    settings = Settings(select=EVERY_RULE, target_torch_version=(2, 5))
    result = fix_source("seed.py", source, settings, unsafe=True)
    assert "        capture_stream = torch.Stream()\n" in result.source
    assert "capture_stream.wait_stream(torch.cuda.current_stream())" in result.source
    assert "        with torch.cuda.stream(capture_stream):\n" in result.source
    assert "        torch.cuda.current_stream().wait_stream(capture_stream)\n" in result.source
    assert not any(v.fix for v in result.violations)


def test_the_portable_stream_context_is_a_stream_switch_inside_a_capture():
    source = (
        "import torch\ndef f(g, m, x):\n    side = torch.Stream()\n    with torch.cuda.graph(g):\n"
        "        with side:\n            y = m(x)\n"
    )
    assert [(v.code, v.line) for v in lint(source, "PORT302")] == [("PORT302", 5)]


@pytest.mark.torch_api
@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("import torch\nvalue = torch.device('cuda:1')\n", "device"),
        (
            "import torch\ndef f(device):\n    return device\ni = 1\nvalue = f(device=f'cuda:{i}')\n",
            "string",
        ),
        (
            'import torch\ndef f(device):\n    return device\ni = 1\nvalue = f(device=f"cuda:{i}")\n',
            "string",
        ),
        ("import torch\nvalue = torch.device('cuda', 1)\n", "device"),
        ("import torch\nvalue = torch.cuda.amp.GradScaler(1024.0)\n", "scaler"),
    ],
)
def test_a_fixed_device_type_runs_on_a_build_with_no_accelerator(source, value, monkeypatch):
    """Where no device is in scope the fix names the accelerator's type, and ``"cpu"`` where
    the build has none: ``torch.accelerator.current_accelerator()`` is None there, and the fixed
    code must not raise where the CUDA name did not (a CPU-only test run)."""
    torch = pytest.importorskip("torch")
    result = fixed(source)
    assert "cuda" not in result
    for accelerator, expected in ((None, "cpu"), (torch.device("xpu"), "xpu")):
        monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda a=accelerator: a)
        scope: dict[str, Any] = {}
        with warnings.catch_warnings():  # (a scaler for a device the build lacks disables itself)
            warnings.simplefilter("ignore")
            exec(compile(result, "case.py", "exec"), scope)
        made = scope["value"]
        if value == "device":
            assert made.type == expected
        elif value == "string":
            assert made == f"{expected}:1"
        else:
            assert made._device == expected


NCCL_INIT = (
    "import torch.distributed as dist\n\n\n"
    "def init(store):\n"
    '    dist.init_process_group("nccl", store=store, rank=0, world_size=1)\n'
    "    return dist.get_backend()\n"
)


def _run_fixed_init(torch) -> str:
    """The backend that PORT406's fix of ``NCCL_INIT`` gives ``init_process_group``, run."""
    source = fixed(NCCL_INIT)
    assert "is_available()" in source and '"nccl"' not in source
    namespace: dict[str, Any] = {}
    exec(compile(source, "fixed.py", "exec"), namespace)
    try:
        return namespace["init"](torch.distributed.HashStore())
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.torch_api
def test_the_nccl_fix_starts_gloo_with_the_installed_torch_where_no_gpu_is_there():
    """Issue #52: on a build without an accelerator (the CPU wheel) and on a CUDA build of a
    machine without a GPU, what ``init_process_group`` gets is Gloo (the build's accelerator
    alone is None on the first, where the backend lookup raises, and CUDA on the second)."""
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available() or not torch.distributed.is_available():
        pytest.skip("runs where no accelerator is available and torch.distributed is built")
    assert _run_fixed_init(torch) == "gloo"


@pytest.mark.torch_api
def test_the_nccl_fix_starts_gloo_on_a_cuda_build_without_a_gpu_and_nccl_with_one(monkeypatch):
    """A CUDA build on a machine without a GPU, simulated on any build: its accelerator is CUDA
    but none is available (the unfixed `current_accelerator()` form would pick NCCL, which
    fails to start there); where CUDA is available the fix's lookup is NCCL's."""
    torch = pytest.importorskip("torch")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not built")
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda *a, **k: cuda)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    assert torch.distributed.get_default_backend_for_device(cuda) == "nccl"
    assert _run_fixed_init(torch) == "gloo"
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    chosen = eval(  # the expression the fix passes, where CUDA is available
        fixed(NCCL_INIT).split("get_default_backend_for_device(")[1].rsplit("), store=")[0],
        {"torch": torch},
    )
    assert torch.distributed.get_default_backend_for_device(chosen) == "nccl"


def test_a_member_a_later_torch_added_is_suggested_with_that_release_and_not_before():
    """torch 2.14 gave torch.xpu `list_gpu_processes`: the device module's is suggested from
    2.14 on, and a project targeting 2.13 is told there is no portable equivalent."""
    source = "import torch\ndef f():\n    return torch.cuda.list_gpu_processes()\n"
    (newest,) = lint(source, "PORT409")
    assert newest.message.endswith("; `torch.get_device_module()` has it")
    assert newest.detail.startswith(
        "`torch.get_device_module().list_gpu_processes` needs torch ≥ 2.14."
    )
    (older,) = lint(source, "PORT409", target_torch_version=(2, 13))
    assert older.message == (
        "CUDA-only `torch.cuda.list_gpu_processes`; torch has no portable equivalent"
    )
    assert older.detail.startswith("No torch up to 2.13 has one")
