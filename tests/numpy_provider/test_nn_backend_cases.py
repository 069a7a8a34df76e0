"""The ONNX backend node test cases of the neural-network ops (including control flow), run with the
numpy provider: every case must pass (outputs as onnx's backend runner compares them)."""

from __future__ import annotations

import pytest

from tests.numpy_provider.backend_node_cases import cases_for, failures
from tests.numpy_provider.test_nn_ops import NN_OPS

RUNNABLE = frozenset(NN_OPS)


@pytest.mark.parametrize("op_type", NN_OPS)
def test_backend_cases_pass(op_type):
    cases = cases_for(op_type, RUNNABLE)
    if not cases:
        pytest.skip(f"onnx has no backend node case for {op_type} alone")
    assert failures(cases) == {}
