"""float32 Sigmoid and Tanh (MLAS's rational approximations with single-rounding fused multiply-adds)
equal onnxruntime's bit for bit over a dense sweep of their inputs, alone and in a fused Swish chain."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import run_numba, run_onnxruntime
from onnx import TensorProto, helper


def _sweep(limit: float) -> np.ndarray:
    """Every 509th float32 bit pattern with |x| <= limit, both signs, plus infinities and NaN."""
    top = int(np.float32(limit).view(np.uint32))
    bits = np.arange(0, top + 1, 509, dtype=np.uint32)
    x = bits.view(np.float32)
    return np.concatenate([x, -x, np.array([np.inf, -np.inf, np.nan, limit, -limit], np.float32)])


def _model(nodes, shape):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("op_type, limit", [("Sigmoid", 20.0), ("Tanh", 10.0)])
def test_dense_sweep_bit_for_bit(op_type, limit):
    x = _sweep(limit)
    model = _model([helper.make_node(op_type, ["x"], ["y"])], ("n",))
    got, _ = run_numba(model, {"x": x})
    np.testing.assert_array_equal(got[0], run_onnxruntime(model, {"x": x})[0])


@pytest.mark.parametrize("threads", [1, 2])
def test_swish_chain_is_one_fused_step_bit_for_bit(threads, rng):
    shape = (2, 24, 56, 57)  # large enough to be shared over two threads
    x = (rng.standard_normal(shape) * 6).astype(np.float32)
    model = _model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])], shape)
    model = onnx.shape_inference.infer_shapes(model)
    got, session = run_numba(model, {"x": x}, threads=threads)
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    np.testing.assert_array_equal(got[0], run_onnxruntime(model, {"x": x})[0])
