import libcst as cst

from portlint.analysis.device_literals import (
    cuda_device_literals,
    forces_float32,
    report_device_call,
    report_device_default,
    report_device_parameter,
    report_device_string,
    report_named_devices,
)
from portlint.analysis.device_scope import device_type, message_device
from portlint.analysis.names import (
    argument,
    dotted_name,
    is_cuda_device_literal,
    keyword,
    method_name,
    positional,
    resolves_to,
)
from portlint.analysis.parents import ParentProvider
from portlint.analysis.scopes import NameProvider
from portlint.analysis.stand_ins import fake_tensors, mock_data
from portlint.evidence import CUDA_DEVICE_ARGUMENT
from portlint.rule import Invalid, Rule

TORCH_DEVICE = ("torch.device",)
AUTOCASTS = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")
# Calls whose first parameter is a device type or a device: `torch.autocast("cuda")`.
DEVICE_TYPE_FIRST = (
    *AUTOCASTS, "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.Generator",
    "torch.get_device_module",
)  # fmt: skip
# The float32 dtype as written (torch's autocast supports it on CUDA only).
# Why a device type named CUDA is a finding (an autocast's, a generator's).
TYPE_OFF_CUDA = (
    "Off NVIDIA and AMD GPUs (on XPU, NPU, MPS or the CPU) it acts for CUDA, not for the device"
    " in use."
)


class HardcodedCudaDevice(Rule):
    """Hardcoded CUDA device.

    ## What it does
    Reports a device written as the string `"cuda"` (or `"cuda:N"`, or `f"cuda:{i}"`, or built
    of `"cuda:"` and an index: `"cuda:" + str(i)`, `"cuda:%d" % i`, `"cuda:{}".format(i)`; also
    as an arm of a choice, `"cuda" if args.ngpu > 0 else "cpu"`, unless the choice is a check
    of CUDA, where the check is the finding):
    `torch.device("cuda")`, `torch.device("cuda", i)`, `device="cuda"` passed to any call,
    `.to("cuda")`, and `map_location="cuda"` (a checkpoint restored onto CUDA by name); the
    value of a name or attribute named for a device (`device = "cuda"`, `self._device =
    f"cuda:{rank}"`, `DEVICE = "cuda"`) and the default of a device setting (`getattr(args,
    "device", "cuda")`, `kwargs.get("device", "cuda")`, `add_argument("--device", default=
    "cuda")`): `likely` (a device by its name only), with no fix (it may be read as text).
    Silent inside CUDA-only platform guards (`if torch.cuda.is_available():`,
    `if not current_platform.is_cuda(): return`, ...) and in `cuda-only-paths`, and where the
    device is data for a test double: given to `Mock(...)`, `patch(...)` or
    `monkeypatch.setattr(...)`, or as a mock's `return_value`/`side_effect`, or the expected
    arguments of `assert_called_with(...)`, or held in a local that the function uses only so and in assertions; where tensors are made
    under `with FakeTensorMode(...):` (fake tensors: the device is metadata, no CUDA is needed);
    and for a parameter's default, where the function never uses the value it came with (never
    reads it, binds it again first, or only compares it).

    ## Why is this bad?
    The code then runs only where the accelerator is an NVIDIA (or ROCm) GPU. On Intel XPU,
    Ascend NPU, Apple MPS or a CPU worker the allocation fails, or lands on a device the rest of
    the program does not use. vLLM's rejection-sampler warmup did `device = torch.device("cuda")`
    and was skipped on every XPU worker (vLLM #55245); its regex check for `torch.cuda.*` calls
    could not see it, since `torch.device("cuda")` is not a `torch.cuda` call.

    ## Example
    ```python
    def spec_decode_rejection_warmup(worker):
        device = torch.device("cuda")
        draft = torch.zeros(8, dtype=torch.int32, device=device)
    ```

    Use instead:
    ```python
    def spec_decode_rejection_warmup(worker):
        device = worker.device
        draft = torch.zeros(8, dtype=torch.int32, device=device)
    ```
    Where no device is in scope, `torch.accelerator.current_accelerator()` names the build's
    accelerator. An autocast to float32 (`torch.autocast("cuda", dtype=torch.float32)`, used to
    force full precision inside a mixed-precision region) has no such equivalent: torch takes
    float32 for CUDA's autocast only, and on any other device warns and turns autocast off, so
    the message says to turn autocast off (`enabled=False`) and cast the inputs with `.float()`.

    ## Fix safety
    Unsafe: it changes where tensors live off CUDA, and is offered only where it keeps the
    program's meaning on CUDA. A device without an index becomes the device already in scope —
    a `device` parameter (not one that may be None), `worker.device` for a `worker` parameter,
    `self.device` in a class whose `__init__` sets it (before the line, and not to the CPU;
    `torch.device(self.device)` where it may hold an index or a string) — and otherwise
    `torch.accelerator.current_accelerator()` (or the configured `device-expression`), adding
    `import torch` where needed. Never the name being assigned (`self.device = self.device`), the
    value being converted (`torch.device(f"cuda:{device}")`), nor a parameter from its own
    default. A tensor's `.device` is suggested, never written: the tensor may be on the CPU. A
    device with an index keeps it, with the accelerator's type, or `"cpu"` on a build that has
    none (where `current_accelerator()` is None, so that a CPU-only run does not fail where
    `"cuda:1"` did not): `"cuda:1"` becomes `torch.device(getattr(torch.accelerator.
    current_accelerator(), "type", "cpu"), 1)`, `f"cuda:{i}"` becomes
    `f"{getattr(torch.accelerator.current_accelerator(), 'type', 'cpu')}:{i}"`, and a built name
    gets the type in place of `"cuda"`: `"cuda:%d" % i` becomes
    `(getattr(torch.accelerator.current_accelerator(), "type", "cpu") + ":%d") % i`.

    ## References
    - vLLM #55245: hardcoded device in `spec_decode_rejection_warmup`
    - https://pytorch.org/docs/stable/accelerator.html
    """

    code = "PORT101"
    name = "hardcoded-cuda-device"
    triggers = ('"cuda', "'cuda")
    evidence = (CUDA_DEVICE_ARGUMENT,)
    guardable = reads_class = True
    METADATA_DEPENDENCIES = (*Rule.METADATA_DEPENDENCIES, NameProvider, ParentProvider)

    VALID = [
        # Behind a platform guard: silenced.
        "import torch\nif torch.cuda.is_available():\n    d = torch.device('cuda')\n",
        "import torch\ndef f(worker):\n    return torch.device(worker.device)\n",
        "import torch\nx = torch.device('cpu')\n",
        "import torch\nx = torch.device(f'xpu:{0}')\n",
        "def device(kind):\n    return kind\nd = device('cuda')\n",
        "import torch\ndef f(device):\n    return device('cuda')\n",
        "import torch\ny = torch.zeros(3, device=dev)\n",
        "x = 'cuda'\n",
        "x.to('cuda:' + name + '-kernels')\n",
        "import torch\nd = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
        "backend = {'cuda': 'nccl'}\n",
        "x.to('cpu')\n",
        "x.to(torch.float16)\n",
        "import torch\nx = torch.device('cudagraph')\n",
        "x = f(device='cuda_graph')\n",
        "def load(path, device='cpu', backend='cuda'):\n    pass\n",
        # A default the function never reads is inert (an interface's, an unused parameter's).
        "def load(path, device='cuda'):\n    pass\n",
        "def load(path, device='cuda'):\n    return put(path, device='cpu')\n",  # a keyword
        "def load(path, device='cuda'):\n    device = pick()\n    return put(path, device)\n",
        # A private function's default that every caller passes.
        "def _mesh(group, device_type='cuda'):\n    return make(device_type)\n\n"
        "mesh = _mesh(g, 'xpu')\nother = _mesh(g, device_type=kind)\n",
        "class W:\n    def _dummy(self, n, device='cuda'):\n        return make(n, device)\n\n"
        "    def run(self):\n        return self._dummy(4, device=self.device)\n",
        # Only compared, or read where a test fixed it to another value (`device_map="auto"`).
        "def load(path, device_map='cuda:0'):\n    if n > 1 and device_map == 'auto':\n"
        "        self.device_map = device_map\n    else:\n        self.device_map = pick()\n",
        "import torch\nwith torch.autocast(device.type):\n    pass\n",
        # A device's type, compared: the string "cuda" in a test, placing nothing.
        "import torch\nif torch.device(d).type == torch.device('cuda').type:\n    pass\n",
        # A default the function checks first of all: a stated requirement, not a trap.
        'def load(path, device=\'cuda\'):\n    """Doc."""\n    assert device.startswith(\'cuda\')\n'
        "    return path\n",
        "def load(path, device='cuda'):\n    if device != 'cuda':\n        raise ValueError(device)\n"
        "    return path\n",
        # Data for test doubles: nothing is allocated on it.
        "import torch\nfrom unittest import mock\n"
        "with mock.patch.object(loader, 'target_device', return_value=torch.device('cuda:0')):\n"
        "    pass\n",
        "import torch\nfrom unittest.mock import MagicMock\nt = MagicMock(device=torch.device('cuda'))\n",
        # The stand-in that a test's `monkeypatch` puts in place: data, as a mock's.
        "import torch\ndef test_f(monkeypatch):\n"
        "    monkeypatch.setattr(m, 'local_device', lambda: torch.device('cuda:5'))\n",
        "import torch\nget.return_value = torch.device('cuda')\n",
        "model.to.assert_called_once_with('cuda')\nmove.assert_called_with(x, device='cuda')\n",
        "import torch\nfrom unittest import mock\ndef test_device(self, m):\n"
        "    device = torch.device('cuda', 3)\n"
        "    with mock.patch.object(m, 'get_device', return_value=device):\n"
        "        self.assertEqual(m.device, device)\n",
    ]
    INVALID = [
        # A local given to a test double and used for real too: a device the test runs on.
        Invalid(
            "import torch\nfrom unittest import mock\ndef test_device(m):\n"
            "    device = torch.device('cuda')\n"
            "    with mock.patch.object(m, 'get_device', return_value=device):\n"
            "        return torch.zeros(1, device=device)\n",
            4,
            14,
        ),
        Invalid(
            "import torch\ndef warmup(worker):\n    device = torch.device('cuda')\n",
            3,
            14,
            fixed="import torch\ndef warmup(worker):\n    device = worker.device\n",
        ),
        # A tensor parameter's device is suggested, not used: the tensor may be on the CPU.
        Invalid(
            "import torch\ndef f(x: torch.Tensor):\n    return torch.zeros(3, device='cuda') + x\n",
            3,
            34,
            fixed="import torch\ndef f(x: torch.Tensor):\n"
            "    return torch.zeros(3, device=torch.accelerator.current_accelerator()) + x\n",
        ),
        Invalid(
            "class M:\n    def __init__(self, device):\n        self.device = device\n"
            "    def g(self, y):\n        return y.to('cuda')\n",
            5,
            21,
            fixed="class M:\n    def __init__(self, device):\n        self.device = device\n"
            "    def g(self, y):\n        return y.to(self.device)\n",
        ),
        Invalid(
            '"""Doc."""\nfrom torch import device\nd = device("cuda")\n',
            3,
            5,
            fixed='"""Doc."""\nimport torch\nfrom torch import device\n'
            "d = torch.accelerator.current_accelerator()\n",
        ),
        # Never the value being assigned: `self.device = self.device`, `device = device`.
        Invalid(
            "import torch\nclass M:\n    def __init__(self):\n        self.device = torch.device('cuda')\n",
            4,
            23,
            fixed="import torch\nclass M:\n    def __init__(self):\n"
            "        self.device = torch.accelerator.current_accelerator()\n",
        ),
        Invalid(
            "import torch\ndef f(device):\n    device = torch.device('cuda')\n",
            3,
            14,
            fixed="import torch\ndef f(device):\n    device = torch.accelerator.current_accelerator()\n",
        ),
        # A default is evaluated where the `def` is: the parameter is not there yet.
        Invalid(
            "import torch\ndef f(x, device=torch.device('cuda')):\n    return x\n",
            2,
            17,
            fixed="import torch\ndef f(x, device=torch.accelerator.current_accelerator()):\n"
            "    return x\n",
        ),
        # The index is kept, and the value converted is not the device used.
        Invalid(
            "import torch\ndef norm(device: int | str | torch.device):\n    if isinstance(device, int):\n"
            "        device = torch.device(f'cuda:{device}')\n    return device\n",
            4,
            18,
            fixed="import torch\ndef norm(device: int | str | torch.device):\n"
            "    if isinstance(device, int):\n"
            '        device = torch.device(f\'{getattr(torch.accelerator.current_accelerator(), "type", "cpu")}:{device}\')\n'
            "    return device\n",
        ),
        Invalid(
            "import torch\ndef f(worker):\n    return torch.zeros(1, device='cuda:1')\n",
            3,
            34,
            fixed="import torch\ndef f(worker):\n    return torch.zeros(1, device="
            'torch.device(getattr(torch.accelerator.current_accelerator(), "type", "cpu"), 1))\n',
        ),
        Invalid(
            "import torch\ndef f(i):\n    return torch.device('cuda', i)\n",
            3,
            12,
            fixed="import torch\ndef f(i):\n"
            '    return torch.device(getattr(torch.accelerator.current_accelerator(), "type", "cpu"), i)\n',
        ),
        # `self.device` may hold an index or a string: a `torch.device` is made of it.
        Invalid(
            "import torch\nclass W:\n    def __init__(self, device: int):\n        self.device = device\n"
            "    def g(self):\n        return torch.device('cuda')\n",
            6,
            16,
            fixed="import torch\nclass W:\n    def __init__(self, device: int):\n"
            "        self.device = device\n    def g(self):\n        return torch.device(self.device)\n",
        ),
        # `self.device` set after the line, a CPU `self.device`, a device parameter that may be
        # None: none of them is the device in use.
        Invalid(
            "import torch\nclass M:\n    def __init__(self, config):\n"
            "        self.buf = torch.zeros(1, device='cuda')\n        self.device = config.device\n",
            4,
            42,
            fixed="import torch\nclass M:\n    def __init__(self, config):\n"
            "        self.buf = torch.zeros(1, device=torch.accelerator.current_accelerator())\n"
            "        self.device = config.device\n",
        ),
        Invalid(
            "import torch\nclass Offload:\n    def __init__(self):\n        self.device = torch.device('cpu')\n"
            "    def load(self, x):\n        return x.to('cuda')\n",
            6,
            21,
            fixed="import torch\nclass Offload:\n    def __init__(self):\n"
            "        self.device = torch.device('cpu')\n    def load(self, x):\n"
            "        return x.to(torch.accelerator.current_accelerator())\n",
        ),
        Invalid(
            "def f(x, device=None):\n    return x.to('cuda')\n",
            2,
            17,
            fixed="import torch\ndef f(x, device=None):\n"
            "    return x.to(torch.accelerator.current_accelerator())\n",
        ),
        Invalid("import torch\ndevice = torch.device('cuda')\n", 2, 10),
        Invalid('import torch\ndevice = torch.device("cuda:0")\n', 2, 10),
        Invalid("import torch\ndef f(i):\n    return torch.device(f'cuda:{i}')\n", 3, 12),
        # A name built of "cuda:" and an index: the type replaced, the index kept.
        Invalid(
            "def f(x, i):\n    return x.to('cuda:%d' % i)\n",
            2,
            17,
            fixed="import torch\ndef f(x, i):\n    return x.to((getattr(torch.accelerator."
            'current_accelerator(), "type", "cpu") + \':%d\') % i)\n',
        ),
        Invalid(
            "import torch\ndef f(i):\n    return torch.device('cuda:' + str(i))\n",
            3,
            12,
            fixed="import torch\ndef f(i):\n    return torch.device((getattr(torch.accelerator."
            'current_accelerator(), "type", "cpu") + \':\') + str(i))\n',
        ),
        Invalid("def f(x, r):\n    return x.to(device='cuda:{}'.format(r))\n", 2, 24),
        # A choice between CUDA and the CPU by something other than a check of CUDA: CUDA by name.
        Invalid(
            "import torch\ndef f(args):\n    return torch.device('cuda' if args.ngpu > 0 else 'cpu')\n",
            3,
            25,
            fixed="import torch\ndef f(args):\n    return torch.device("
            "torch.accelerator.current_accelerator() if args.ngpu > 0 else 'cpu')\n",
        ),
        Invalid("def f(x, no_gpu):\n    return x.to('cpu' if no_gpu else 'cuda')\n", 2, 38),
        # The type given on, not compared: the device type is hardcoded.
        Invalid("import torch\nwith torch.autocast(torch.device('cuda').type):\n    pass\n", 2, 21),
        # Checked only after other work: callers that leave it out run on CUDA until then.
        Invalid(
            "def load(path, device='cuda'):\n    path = open(path)\n"
            "    assert device.startswith('cuda')\n    return path\n",
            1,
            23,
        ),
        Invalid("import torch as t\nd = t.device('cuda')\n", 2, 5),
        Invalid("from torch import device\nd = device('cuda')\n", 2, 5),
        Invalid("import torch\nd = torch.device(type='cuda')\n", 2, 5),
        Invalid("import torch\ny = torch.zeros(3, device='cuda')\n", 2, 27),
        Invalid("y = make(device=f'cuda:{rank}')\n", 1, 17),
        Invalid("y = x.to('cuda')\n", 1, 10),
        Invalid("import torch\ns = torch.load(f, map_location='cuda')\n", 2, 32),
        Invalid("y = x.to('cuda:1', non_blocking=True)\n", 1, 10),
        # The device type given by name, and a device parameter that defaults to CUDA (latent).
        Invalid("import torch\nwith torch.autocast('cuda'):\n    pass\n", 2, 21),
        Invalid("import torch\nwith torch.amp.autocast(device_type='cuda'):\n    pass\n", 2, 37),
        Invalid("import torch\ng = torch.Generator('cuda')\n", 2, 21),
        Invalid("def load(path, device='cuda'):\n    return open(path, device)\n", 1, 23),
        Invalid("def load(path, map_device: str = 'cuda:0'):\n    return map_device\n", 1, 34),
        Invalid(
            "def load(path, device='cuda'):\n    x = put(device)\n    device = pick()\n", 1, 23
        ),
        Invalid(
            "def load(path, device='cuda'):\n    if device == 'auto':\n        pass\n"
            "    return put(path, device)\n",
            1,
            23,
        ),
        Invalid("def load(path, device='cuda'):\n    if device == 'cuda':\n        pass\n", 1, 23),
        # A caller leaves it out, the function is public, or mentioned other than by a call.
        Invalid(
            "def _mesh(g, device_type='cuda'):\n    return make(device_type)\n\n"
            "a = _mesh(g, 'xpu')\nb = _mesh(g)\n",
            1,
            26,
        ),
        Invalid(
            "def mesh(g, device_type='cuda'):\n    return make(device_type)\n\n"
            "a = mesh(g, 'xpu')\n",
            1,
            25,
        ),
        Invalid(
            "def _mesh(g, device_type='cuda'):\n    return make(device_type)\n\n"
            "a = _mesh(g, 'xpu')\nhooks = [_mesh]\n",
            1,
            26,
        ),
        Invalid(
            "class W:\n    def _dummy(self, n, device='cuda'):\n        return make(n, device)\n\n"
            "    def run(self):\n        return self._dummy(4)\n",
            2,
            32,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        # (Each finding below is a CUDA device literal given as an argument: other calls, most
        # of them, are not looked at further, and test doubles only where one is.)
        if not any(cuda_device_literals(arg.value) for arg in node.args):
            return
        quiet = mock_data(self, node) or fake_tensors(self, node)
        report_device_default(self, node)
        if resolves_to(self, node.func, TORCH_DEVICE):
            device_type_arg = argument(node, "type", 0)
            if device_type_arg is None or self._type_compared(node):
                return
            if is_cuda_device_literal(device_type_arg.value):
                report_device_call(self, node, device_type_arg, quiet)
            for literal in cuda_device_literals(device_type_arg.value, chosen=True):
                report_device_string(self, literal, "`torch.device`", quiet)
            return
        for name in ("device", "map_location"):
            device = keyword(node, name)
            for literal in cuda_device_literals(device.value) if device else ():
                report_device_string(self, literal, f"`{name}=`", quiet)
        if method_name(node) == "to":
            target = positional(node, 0)
            for literal in cuda_device_literals(target.value) if target else ():
                report_device_string(self, literal, "`.to()`", quiet)
        device_type_arg = keyword(node, "device_type")
        if not device_type_arg and resolves_to(self, node.func, DEVICE_TYPE_FIRST):
            device_type_arg = positional(node, 0)
        if device_type_arg and is_cuda_device_literal(device_type_arg.value):
            callee = f"`{dotted_name(node.func)}`" if dotted_name(node.func) else "the call"
            kind = f"The type of the device in use: `{device_type(message_device(self, node))}`."
            message = f'{callee} hardcodes `"cuda"`; pass the device type in use'
            detail = f"{TYPE_OFF_CUDA} {kind}"
            if resolves_to(self, node.func, AUTOCASTS) and forces_float32(node):
                message = (
                    f"{callee} to float32 works on CUDA only; use `enabled=False` and `.float()`"
                )
                detail = (
                    "Off CUDA an autocast to float32 warns and turns itself off: to compute in"
                    " float32 on every device, turn autocast off (`enabled=False`) and cast the"
                    f" inputs with `.float()`. {kind}"
                )
            self.report(device_type_arg.value, message, quiet=quiet, detail=detail)

    def visit_Assign(self, node: cst.Assign) -> None:
        report_named_devices(self, [t.target for t in node.targets], node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            report_named_devices(self, [node.target], node.value)

    def _type_compared(self, node: cst.Call) -> bool:
        """``torch.device("cuda").type == t``: the string ``"cuda"``, compared (a test, as
        ``t == "cuda"`` is), places nothing."""
        attribute = self.get_metadata(ParentProvider, node, None)
        if not isinstance(attribute, cst.Attribute) or attribute.attr.value != "type":
            return False
        parent = self.get_metadata(ParentProvider, attribute, None)
        return isinstance(parent, (cst.Comparison, cst.ComparisonTarget))

    def visit_Param(self, node: cst.Param) -> None:
        report_device_parameter(self, node)
