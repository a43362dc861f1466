"""PORT101 on a CUDA device written as the value of a name, or as the default of a device
setting: `device = "cuda"` is as hardcoded as `device="cuda"` passed to a call."""

from __future__ import annotations

import pytest

from tests.helpers import lint

NAMED = [
    ("def f(x):\n    device = 'cuda'\n    return x.to(device)\n", 2, 14, "`device`"),
    ("def f(x, rank):\n    device_name = f'cuda:{rank}'\n    return x.to(device_name)\n", 2, 19,
     "`device_name`"),
    ("class T:\n    def __init__(self):\n        self._device = 'cuda'\n", 3, 24, "`_device`"),
    ("_DEVICE = 'cuda'\n", 1, 11, "`_DEVICE`"),
    ("device: str = 'cuda:0'\n", 1, 15, "`device`"),
    ("d = getattr(args, 'device', 'cuda')\n", 1, 29, "the default of 'device'"),
    ("d = kwargs.get('device', 'cuda')\n", 1, 26, "the default of 'device'"),
    ("p.add_argument('--device', default='cuda:0')\n", 1, 36, "the default of '--device'"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "line", "column", "what"), NAMED)
def test_a_cuda_device_bound_to_a_device_name_is_reported_without_a_fix(source, line, column, what):
    (found,) = lint(source, "PORT101", fix_edits=True)
    assert (found.line, found.col) == (line, column)
    assert found.message.startswith(f"{what} hardcodes CUDA")
    assert found.fix is None and found.confidence == "likely"


@pytest.mark.parametrize(
    "source",
    [
        "backend = 'cuda'\n",  # (not named for a device)
        "device = 'cpu'\n",
        "d = getattr(args, 'backend', 'cuda')\n",
        "d = kwargs.get('device')\n",
        "p.add_argument('--device', choices=['cuda', 'cpu'])\n",
        "def f(x):\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n",  # (the check)
    ],
)
def test_no_device_or_a_checked_one_is_not_reported_as_a_name(source):
    assert [v for v in lint(f"import torch\n{source}", "PORT101")] == []
