"""An implicitly int64 tensor followed to where it is used, across functions and modules: the
seed's real shape (vLLM #39951), where the int64 `num_sampled` is made in the sampler, only stored
into by the rejection kernel, returned, and loaded by the eagle-input kernel of another module
into a value that a branch rebinds to int32 (issue #48)."""

from __future__ import annotations

import json

from tests.helpers import run_cli, tree

# The rejection kernel only stores into `num_sampled`: any width is fine there.
REJECTION = """\
import triton
import triton.language as tl


@triton.jit
def strict_rejection_kernel(draft_ptr, target_ptr, sampled_ptr, num_sampled_ptr, k):
    pid = tl.program_id(0)
    n = 0
    for i in range(k):
        n += tl.load(draft_ptr + pid * k + i) == tl.load(target_ptr + pid * k + i)
    tl.store(num_sampled_ptr + pid, n + 1)
"""
# The eagle-input kernel loads it into a value that a branch rebinds to int32.
EAGLE = """\
import triton
import triton.language as tl


@triton.jit
def prepare_eagle_inputs_kernel(query_len_ptr, num_sampled_ptr, out_ptr):
    pid = tl.program_id(0)
    query_len = tl.load(query_len_ptr + pid).to(tl.int32)
    i = query_len - tl.load(num_sampled_ptr + pid)
    if pid == 0:
        i = pid
    tl.store(out_ptr + pid, i)
"""
SAMPLER = """\
import torch

from pkg.rejection import strict_rejection_kernel


def strict_sample(draft, target):
    n, k = draft.shape
    sampled = draft.new_empty((n, k + 1), dtype=torch.int64)
    num_sampled = sampled.new_empty(n)
    strict_rejection_kernel[(n,)](draft, target, sampled, num_sampled, k)
    return sampled, num_sampled
"""
STEP = """\
from pkg.eagle import prepare_eagle_inputs_kernel
from pkg.sampler import strict_sample


def step(draft, target, query_lens, out):
    sampled, num_sampled = strict_sample(draft, target)
    prepare_eagle_inputs_kernel[(len(out),)](query_lens, num_sampled, out)
    return sampled
"""


def _findings(root) -> dict[tuple[str, int, int, str], dict]:
    result = run_cli("check", "pkg", "--output-format", "json", "--no-cache", cwd=root)
    assert result.returncode in (0, 1), result.stderr
    items = json.loads(result.stdout)
    return {
        (
            i["filename"].split("pkg/", 1)[1],
            i["location"]["row"],
            i["location"]["column"],
            i["code"],
        ): i
        for i in items
    }


def _project(root, files: dict[str, str]) -> None:
    tree(root, {"pyproject.toml": "[tool.portlint]\n", "pkg/__init__.py": "", **files})


def test_the_seed_across_three_modules_is_flagged_at_the_new_tensor_naming_the_kernel(tmp_path):
    files = {"pkg/rejection.py": REJECTION, "pkg/eagle.py": EAGLE, "pkg/sampler.py": SAMPLER}
    _project(tmp_path, {**files, "pkg/step.py": STEP})
    found = _findings(tmp_path)
    assert sorted(found) == [("sampler.py", 9, 19, "PORT201")]
    finding = found["sampler.py", 9, 19, "PORT201"]
    assert finding["confidence"] == "certain"
    assert finding["detail"].startswith(
        "It is returned by `strict_sample` to `step` (pkg/step.py), and Triton kernel "
        "`prepare_eagle_inputs_kernel` (pkg/eagle.py:11) needs int32 for `num_sampled_ptr`."
    )
    # The fixed form (upstream's: `dtype=torch.int32`) is silent.
    fixed = SAMPLER.replace("new_empty(n)", "new_empty(n, dtype=torch.int32)")
    (tmp_path / "pkg" / "sampler.py").write_text(fixed)
    assert _findings(tmp_path) == {}


def test_the_seed_in_one_module_is_flagged_too(tmp_path):
    one = (
        "from pkg.eagle import prepare_eagle_inputs_kernel\n"
        + SAMPLER
        + "\n\n"
        + STEP.split("\n\n\n", 1)[1]
    )
    _project(tmp_path, {"pkg/rejection.py": REJECTION, "pkg/eagle.py": EAGLE, "pkg/one.py": one})
    found = _findings(tmp_path)
    assert [key[3] for key in found] == ["PORT201"]
    (finding,) = found.values()
    assert finding["confidence"] == "certain"
    assert finding["detail"].startswith("It is returned by `strict_sample` to `step` (pkg/one.py)")


def test_a_returned_tensor_whose_callers_cannot_all_be_seen_is_likely_and_says_where_it_went(
    tmp_path,
):
    opaque_step = STEP.replace(
        "    prepare_eagle_inputs_kernel[(len(out),)](query_lens, num_sampled, out)\n",
        "    out.append(num_sampled)\n",
    )
    files = {"pkg/rejection.py": REJECTION, "pkg/eagle.py": EAGLE, "pkg/sampler.py": SAMPLER}
    for step in (opaque_step, None):  # a caller that stores it; no caller in the project
        _project(tmp_path, {**files, **({"pkg/step.py": step} if step else {})})
        if step is None:
            (tmp_path / "pkg" / "step.py").unlink()
        found = _findings(tmp_path)
        assert sorted(found) == [("sampler.py", 9, 19, "PORT201")], step
        finding = found["sampler.py", 9, 19, "PORT201"]
        assert finding["confidence"] == "likely"
        assert finding["detail"].startswith(
            "It reaches Triton kernel `strict_rejection_kernel` and is returned by "
            "`strict_sample`: portlint cannot see every use of it after that; check that each "
            "takes int64."
        )


def test_a_returned_tensor_whose_every_caller_takes_any_width_is_silent(tmp_path):
    fine_step = STEP.replace(
        "    prepare_eagle_inputs_kernel[(len(out),)](query_lens, num_sampled, out)\n",
        "    total = num_sampled.sum()\n    print(total)\n",
    )
    files = {"pkg/rejection.py": REJECTION, "pkg/eagle.py": EAGLE, "pkg/sampler.py": SAMPLER}
    _project(tmp_path, {**files, "pkg/step.py": fine_step})
    assert _findings(tmp_path) == {}


STORED = """\
import torch

from pkg.eagle import prepare_eagle_inputs_kernel
from pkg.rejection import strict_rejection_kernel


class Sampler:
    def sample(self, draft, target):
        n, k = draft.shape
        sampled = draft.new_empty((n, k + 1), dtype=torch.int64)
        self.num_sampled = sampled.new_empty(n)
        strict_rejection_kernel[(n,)](draft, target, sampled, self.num_sampled, k)
        return sampled

    def prepare(self, query_lens, out):
        prepare_eagle_inputs_kernel[(len(out),)](query_lens, self.num_sampled, out)
"""


def test_a_tensor_stored_on_self_reaches_the_kernels_of_the_methods_that_read_it(tmp_path):
    files = {"pkg/rejection.py": REJECTION, "pkg/eagle.py": EAGLE, "pkg/sampler.py": STORED}
    _project(tmp_path, files)
    found = _findings(tmp_path)
    assert sorted(found) == [("sampler.py", 11, 28, "PORT201")]
    finding = found["sampler.py", 11, 28, "PORT201"]
    assert finding["confidence"] == "certain"
    assert finding["detail"].startswith(
        "It is stored in `self.num_sampled`, which `Sampler.prepare` reads, and Triton kernel "
        "`prepare_eagle_inputs_kernel` (pkg/eagle.py:11) needs int32 for `num_sampled_ptr`."
    )
    # Read by no method of its class (so by someone else): likely, saying where it went.
    unread = STORED.split("    def prepare")[0]
    (tmp_path / "pkg" / "sampler.py").write_text(unread)
    (finding,) = _findings(tmp_path).values()
    assert finding["confidence"] == "likely"
    assert finding["detail"].startswith(
        "It reaches Triton kernel `strict_rejection_kernel` and is stored in `self.num_sampled` "
        "by `Sampler.sample`: portlint cannot see every use of it after that; check that each "
        "takes int64."
    )
    # Read by another method that takes any width: silent.
    summed = STORED.replace(
        "        prepare_eagle_inputs_kernel[(len(out),)](query_lens, self.num_sampled, out)\n",
        "        return self.num_sampled.sum()\n",
    )
    (tmp_path / "pkg" / "sampler.py").write_text(summed)
    assert _findings(tmp_path) == {}


# A Python wrapper of a compiled op that checks the dtype its schema takes (issue #48's misread).
OP_WRAPPER = """\
import torch

from pkg import _C


def gather_slots(ids, slots):
    assert slots.dtype == torch.int64, slots.dtype
    _C.gather_slots(ids, slots)
    return slots
"""
GATHER = """\
import torch

from pkg.ops import gather_slots


def gather(x, n):
    ids = x.new_empty(n, dtype=torch.int64)
    slots = ids.new_empty(n)
    gather_slots(ids, slots)
    torch.ops._C.fill_slots(slots)
"""


def test_a_tensor_given_to_a_consumer_that_requires_int64_is_silent(tmp_path):
    """PORT201 suggests int32 only where nothing it is given to requires int64: a wrapper that
    checks `dtype == torch.int64` (or a `torch.ops` binding) takes int64 on purpose; without the
    check, what the wrapper returns cannot be followed (likely)."""
    _project(tmp_path, {"pkg/ops.py": OP_WRAPPER, "pkg/gather.py": GATHER})
    assert _findings(tmp_path) == {}
    unchecked = OP_WRAPPER.replace("    assert slots.dtype == torch.int64, slots.dtype\n", "")
    (tmp_path / "pkg" / "ops.py").write_text(unchecked)
    found = _findings(tmp_path)
    assert sorted(found) == [("gather.py", 8, 13, "PORT201")]
    assert found["gather.py", 8, 13, "PORT201"]["confidence"] == "likely"


STRICT = """\
import torch


def sample(draft, target):
    n, k = draft.shape
    sampled = draft.new_empty((n, k + 1), dtype=torch.int64)
    num_sampled = torch.zeros(n, dtype=torch.int32, device=draft.device)
    return sampled, num_sampled
"""
PROBABILISTIC = """\
import torch


def sample(draft, target):
    n, k = draft.shape
    sampled = draft.new_empty((n, k + 1), dtype=torch.int64)
    num_sampled = sampled.new_empty(n)
    return sampled, num_sampled
"""


def test_a_count_returned_as_int64_where_its_interface_sibling_returns_int32(tmp_path):
    """The same function in two modules of one package (or one method in two classes there):
    where the sibling returns the count as int32, this one's inherited int64 is what its
    callers do not expect (upstream's reason for the seed's fix)."""
    samplers = {"pkg/samplers/__init__.py": "", "pkg/samplers/strict.py": STRICT}
    _project(tmp_path, {**samplers, "pkg/samplers/probabilistic.py": PROBABILISTIC})
    found = _findings(tmp_path)
    assert sorted(found) == [("samplers/probabilistic.py", 7, 19, "PORT201")]
    finding = found["samplers/probabilistic.py", 7, 19, "PORT201"]
    assert finding["confidence"] == "likely"
    assert finding["detail"].startswith(
        "It is returned by `sample`, and its sibling `sample` (pkg/samplers/strict.py) returns "
        "int32 in its place: the callers of either expect int32."
    )
    for name, text in (("strict.py", STRICT), ("probabilistic.py", PROBABILISTIC)):
        head, body = text.split("\n\n\n")
        method = "class Sampler:\n" + "".join(f"    {line}\n" for line in body.splitlines())
        (tmp_path / "pkg/samplers" / name).write_text(
            f"{head}\n\n\n{method}".replace("(draft", "(self, draft")
        )
    assert [key[3] for key in _findings(tmp_path)] == ["PORT201"]
    # The fixed form, and a sibling that returns the count at another place: silent.
    fixed = PROBABILISTIC.replace("new_empty(n)", "new_empty(n, dtype=torch.int32)")
    (tmp_path / "pkg/samplers/probabilistic.py").write_text(fixed)
    (tmp_path / "pkg/samplers/strict.py").write_text(STRICT)
    assert _findings(tmp_path) == {}
    swapped = STRICT.replace("return sampled, num_sampled", "return num_sampled, sampled")
    (tmp_path / "pkg/samplers/strict.py").write_text(swapped)
    (tmp_path / "pkg/samplers/probabilistic.py").write_text(PROBABILISTIC)
    assert _findings(tmp_path) == {}
