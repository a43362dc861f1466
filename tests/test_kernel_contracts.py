"""The kernel contract portlint infers (portlint.index.kernels) agrees with what Triton's own front
end accepts: each kernel of tests/fixtures/triton_contracts.py is compiled for an sm_90 GPU on the
CPU with each pointer parameter given as int64 in turn, and fails to compile exactly where
portlint says that parameter needs int32."""

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


def _compile(kernel, wide: str | None) -> str | None:
    """Compile ``kernel`` with pointer ``wide`` as int64 (the others int32): None, or the error."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, parameters, _ = CONTRACTS[kernel.__name__]
    signature = {
        p: ("*i64" if p == wide else "*i32") if p.endswith("_ptr") else "i32" for p in parameters
    }
    try:
        triton.compile(
            ASTSource(kernel, signature, constexprs={}), target=GPUTarget("cuda", 90, 32)
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
