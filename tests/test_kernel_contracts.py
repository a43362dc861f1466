"""The kernel contract portlint infers (portlint.index.kernels) agrees with what Triton's own front
end accepts: each kernel of tests/fixtures/triton_contracts.py, of SHAPES below and the reference
implementation's eagle-input kernel is compiled for an sm_90 GPU on the CPU with each pointer
parameter given as int64 in turn, and fails to compile exactly where portlint says that parameter
needs int32."""

from __future__ import annotations

import ast
import importlib.util
import re

import pytest

from portlint.index.kernels import kernels_in
from tests.helpers import REPO

# How Triton's front end words a variable whose type differs where two paths meet.
MERGE_ERRORS = (
    "initial value for `{}` is of type",  # an `if` rebinding it
    "Mismatched type for {} between then block",  # both branches binding it
    "Loop-carried variable {} has initial type",  # a loop rebinding it
)
FIXTURE = REPO / "tests" / "fixtures" / "triton_contracts.py"
TREE = ast.parse(FIXTURE.read_text())
CONTRACTS = kernels_in(TREE)
DOCUMENTED = {
    node.name: set(re.findall(r"\w+_ptr", (ast.get_docstring(node) or "").split("(")[0]))
    for node in TREE.body
    if isinstance(node, ast.FunctionDef)
}


def test_every_fixture_kernel_is_found_with_its_parameters():
    assert sorted(CONTRACTS) == sorted(DOCUMENTED)
    line, parameters, _ = CONTRACTS["two_pointers"]
    assert parameters == ["a_ptr", "b_ptr", "out_ptr", "n"]
    assert FIXTURE.read_text().splitlines()[line - 1].startswith("def two_pointers(")


@pytest.mark.parametrize("kernel", sorted(DOCUMENTED))
def test_the_contract_is_the_documented_one(kernel):
    assert set(CONTRACTS[kernel][2]) == DOCUMENTED[kernel]


def _compile(
    kernel, wide: str | None, parameters: list[str] | None = None, constexprs: dict | None = None
) -> str | None:
    """Compile ``kernel`` with pointer ``wide`` as int64 (the other pointers int32, the other
    parameters i32 but for ``constexprs``): None, or the error."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constexprs = constexprs or {}
    if parameters is None:
        parameters = CONTRACTS[kernel.__name__][1]
    signature = {}
    for p in parameters:
        if p in constexprs:
            signature[p] = "constexpr"
        elif p.endswith("_ptr"):
            signature[p] = "*i64" if p == wide else "*i32"
        else:
            signature[p] = "i32"
    try:
        triton.compile(
            ASTSource(kernel, signature, constexprs=constexprs), target=GPUTarget("cuda", 90, 32)
        )
    except triton.compiler.errors.CompilationError as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def compiled_kernels():
    pytest.importorskip("triton")
    spec = importlib.util.spec_from_file_location("triton_contracts", FIXTURE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kernel", sorted(DOCUMENTED))
def test_triton_refuses_int64_exactly_where_the_contract_needs_int32(compiled_kernels, kernel):
    function = getattr(compiled_kernels, kernel)
    assert _compile(function, None) is None  # all int32: every kernel compiles
    _, parameters, needs = CONTRACTS[kernel]
    for pointer in (p for p in parameters if p.endswith("_ptr")):
        error = _compile(function, pointer)
        if pointer in needs:
            variable = needs[pointer][0]
            assert error is not None and any(
                shape.format(variable) in error for shape in MERGE_ERRORS
            ), (pointer, error)
        else:
            assert error is None, (pointer, error)


# --- Issue #48: more shapes, each pointer compiled as *i64 and as *i32 -------------------------
# Written to a file at test time (Triton reads a kernel's source from its file); each kernel's
# docstring says what the contract must be, as in tests/fixtures/triton_contracts.py.
SHAPES = """
import triton
import triton.language as tl


@triton.jit
def loaded_value_only_stored(count_ptr, out_ptr, n):
    '''needs: - (a) a loaded value that only reaches a store'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid)
    tl.store(out_ptr + pid, i)


@triton.jit
def for_carries_loaded_rebound_to_int32(count_ptr, out_ptr, n):
    '''needs: count_ptr (b) a for loop carries a loaded value and rebinds it to an int32'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid)
    for k in range(n):
        i = k + pid
    tl.store(out_ptr + pid, i)


@triton.jit
def for_carries_loaded_rebound_in_if(count_ptr, out_ptr, n):
    '''needs: count_ptr (b) the rebinding inside an if inside the loop'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid)
    for k in range(n):
        if k > pid:
            i = pid
    tl.store(out_ptr + pid, i)


@triton.jit
def while_carries_loaded_rebound_to_int32(count_ptr, out_ptr, n):
    '''needs: count_ptr (b) the while form: Triton treats it alike'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid)
    while i < n:
        i = pid + n
    tl.store(out_ptr + pid, i)


@triton.jit
def while_int32_carried_gets_loaded(count_ptr, out_ptr, n):
    '''needs: count_ptr (b) an int32 carried by a while loop that adds a loaded value'''
    pid = tl.program_id(0)
    i = pid
    while i < n:
        i = i + tl.load(count_ptr + pid)
    tl.store(out_ptr + pid, i)


@triton.jit
def while_loaded_grows(count_ptr, out_ptr, n):
    '''needs: - (b) a loaded value carried by a while loop stays loaded'''
    i = tl.load(count_ptr)
    while i < n:
        i = i + 1
    tl.store(out_ptr, i)


@triton.jit
def for_variable_over_loaded_bound(count_ptr, out_ptr, n):
    '''needs: count_ptr (the seed's shape: a loop over a length less a loaded count, its
    variable rebound by an int32 loop in an if)'''
    pid = tl.program_id(0)
    length = n - tl.load(count_ptr + pid)
    for i in range(0, length, 4):
        tl.store(out_ptr + i + tl.arange(0, 4), pid)
    if pid > 0:
        for i in range(0, 8, 4):
            tl.store(out_ptr + i + tl.arange(0, 4), pid)


@triton.jit
def for_variable_over_loaded_bound_rebound_in_body(count_ptr, out_ptr, n):
    '''needs: count_ptr (the loop's variable, int64, rebound in an if of its body)'''
    pid = tl.program_id(0)
    for i in tl.range(0, tl.load(count_ptr), 1):
        if pid > 0:
            i = pid
        tl.store(out_ptr + i, pid)


@triton.jit
def for_variable_over_loaded_bound_in_one_branch(count_ptr, out_ptr, n):
    '''needs: count_ptr (the loop's variable stays bound: the branches disagree on it)'''
    pid = tl.program_id(0)
    if pid > 0:
        for i in range(tl.load(count_ptr)):
            tl.store(out_ptr + i, pid)
    else:
        for i in range(n):
            tl.store(out_ptr + i, pid)
    tl.store(out_ptr, pid)


@triton.jit
def for_variable_over_loaded_bound_rebound_in_sequence(count_ptr, out_ptr, n):
    '''needs: - (the loop's variable is bound afresh: no merge with before, none in straight code)'''
    pid = tl.program_id(0)
    i = pid
    for i in range(tl.load(count_ptr)):
        i = pid
        tl.store(out_ptr + i, pid)
    tl.store(out_ptr, i)


@triton.jit
def loaded_plus_program_id_rebound(count_ptr, out_ptr, n):
    '''needs: count_ptr (c) a loaded value plus the program id, rebound to it in an if'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid) + pid
    if pid > 0:
        i = pid
    tl.store(out_ptr + pid, i)


@triton.jit
def loaded_or_program_id(count_ptr, out_ptr, n):
    '''needs: count_ptr (c) a loaded value in one branch, the program id in the else'''
    pid = tl.program_id(0)
    if pid > 0:
        i = tl.load(count_ptr + pid)
    else:
        i = tl.program_id(0)
    tl.store(out_ptr + pid, i)


@triton.jit
def cast_before_the_loop(count_ptr, out_ptr, n):
    '''needs: - (d) cast to int32 before a loop rebinds it'''
    pid = tl.program_id(0)
    i = tl.load(count_ptr + pid).to(tl.int32)
    for k in range(n):
        i = k
    tl.store(out_ptr + pid, i)


@triton.jit
def cast_in_one_branch(count_ptr, out_ptr, n):
    '''needs: - (d) cast to int32 in one branch, the program id in the else'''
    pid = tl.program_id(0)
    if pid > 0:
        i = tl.load(count_ptr + pid).to(tl.int32)
    else:
        i = tl.program_id(0)
    tl.store(out_ptr + pid, i)


@triton.jit
def cast_after_adding_the_program_id(count_ptr, out_ptr, n):
    '''needs: - (d) combined with the program id, then cast'''
    pid = tl.program_id(0)
    i = (tl.load(count_ptr + pid) + pid).to(tl.int32)
    if pid > 0:
        i = pid
    tl.store(out_ptr + pid, i)


@triton.jit
def unrolled_accumulator(count_ptr, out_ptr, n):
    '''needs: - (a static_range loop is unrolled: straight-line code, nothing merges)'''
    acc = 0
    for j in tl.static_range(4):
        acc += tl.load(count_ptr + j)
    tl.store(out_ptr, acc)


@triton.jit
def unrolled_if_rebinds(count_ptr, out_ptr, n):
    '''needs: count_ptr (an if in an unrolled body merges with what came before)'''
    pid = tl.program_id(0)
    x = 0
    for j in tl.static_range(2):
        if pid > j:
            x = tl.load(count_ptr + j)
    tl.store(out_ptr, x)


@triton.jit
def unrolled_next_iteration(count_ptr, out_ptr, n):
    '''needs: count_ptr (the second copy's if meets the first copy's load)'''
    pid = tl.program_id(0)
    for j in tl.static_range(2):
        if pid > j:
            x = pid
        x = tl.load(count_ptr + j)
    tl.store(out_ptr, x)
"""
SHAPES_TREE = ast.parse(SHAPES)
SHAPE_CONTRACTS = kernels_in(SHAPES_TREE)
SHAPE_NEEDS = {
    node.name: set(re.findall(r"\w+_ptr", (ast.get_docstring(node) or "").split("(")[0]))
    for node in SHAPES_TREE.body
    if isinstance(node, ast.FunctionDef)
}


@pytest.fixture(scope="module")
def shape_kernels(tmp_path_factory):
    pytest.importorskip("triton")
    path = tmp_path_factory.mktemp("shapes") / "kernel_shapes.py"
    path.write_text(SHAPES)
    spec = importlib.util.spec_from_file_location("kernel_shapes", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_agrees(function, parameters, needs, constexprs=None) -> None:
    """Every pointer *i32: it compiles. Each pointer *i64 in turn: a merge error on the
    contract's variable where the contract needs int32 for it, and it compiles elsewhere."""
    assert _compile(function, None, parameters, constexprs) is None
    for pointer in (p for p in parameters if p.endswith("_ptr")):
        error = _compile(function, pointer, parameters, constexprs)
        if pointer in needs:
            variable = needs[pointer][0]
            assert error is not None and any(
                shape.format(variable) in error for shape in MERGE_ERRORS
            ), (pointer, error)
        else:
            assert error is None, (pointer, error)


def test_every_shape_is_read_as_a_kernel():
    assert sorted(SHAPE_CONTRACTS) == sorted(SHAPE_NEEDS)


@pytest.mark.parametrize("kernel", sorted(SHAPE_NEEDS))
def test_shape_contract_agrees_with_triton_as_i64_and_as_i32(shape_kernels, kernel):
    _, parameters, needs = SHAPE_CONTRACTS[kernel]
    assert set(needs) == SHAPE_NEEDS[kernel]
    _assert_agrees(getattr(shape_kernels, kernel), parameters, needs)


def test_reference_eagle_kernel_contract_agrees_with_triton():
    """The reference implementation's eagle-input kernel (the seed's real kernel): the loaded
    count and start offsets reach the loop variable `i` (a loop over `query_len`, later rebound by
    an int32 loop in an `if`), the prefill token reaches `next_token` (an int32 in the other
    branch); each pointer as *i64 fails to compile exactly there."""
    pytest.importorskip("triton")
    path = REPO / "reference_impl" / "kernels.py"
    _, parameters, needs = kernels_in(ast.parse(path.read_text()))["prepare_eagle_inputs_kernel"]
    assert {p: n[0] for p, n in needs.items()} == {
        "num_rejected_ptr": "i",
        "query_start_loc_ptr": "i",
        "next_prefill_tokens_ptr": "next_token",
    }
    from reference_impl.kernels import prepare_eagle_inputs_kernel

    _assert_agrees(
        prepare_eagle_inputs_kernel, parameters, needs, {"NUM_SPEC": 3, "BLOCK_SIZE": 16}
    )
