"""Regressions found by the model zoo: small graphs with the pattern a real model carried, each
compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from numba_test_helpers import assert_close, run_numba, run_onnxruntime


def _model(nodes, inputs, outputs, initializers=(), opset=17, infer=True):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model) if infer else model


def test_conv_relu_group_on_an_input_of_unknown_rank(rng):
    """A Conv + Relu group whose data input has no inferred shape (the weight gives the rank)."""
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["c"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [onnx.numpy_helper.from_array(w, "w")])
    feeds = {"x": rng.standard_normal((1, 2, 5, 7)).astype(np.float32)}
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]


def test_chain_of_two_branches_whose_shapes_do_not_broadcast_together(rng):
    """A computed scalar added to two tensors of unrelated shapes: one chain, two outputs (Faster
    R-CNN's per-level index offsets)."""
    model = _model([helper.make_node("Add", ["s", "s"], ["t"]), helper.make_node("Add", ["a", "t"], ["y0"]),
                    helper.make_node("Add", ["b", "t"], ["y1"])],
                   [helper.make_tensor_value_info("a", TensorProto.INT64, ("n", "m")),
                    helper.make_tensor_value_info("b", TensorProto.INT64, ("p", "q")),
                    helper.make_tensor_value_info("s", TensorProto.INT64, ())],
                   [helper.make_tensor_value_info("y0", TensorProto.INT64, None),
                    helper.make_tensor_value_info("y1", TensorProto.INT64, None)])
    feeds = {"a": rng.integers(0, 100, (1, 150)), "b": rng.integers(0, 100, (1, 135)), "s": np.array(7)}
    got, session = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds))
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]


def _special_inputs() -> np.ndarray:
    rng = np.random.default_rng(11)
    spread = [rng.standard_normal(20_000) * s for s in (0.01, 1.0, 4.0, 12.0, 30.0)]
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 9.0, -9.0, 18.0, -18.0, np.inf, -np.inf, np.nan]
    return np.concatenate([*spread, np.linspace(-20, 20, 4001), special]).astype(np.float32)


@pytest.mark.parametrize("op_type", ["Sigmoid", "Tanh"])
def test_float32_sigmoid_and_tanh_are_onnxruntimes_bit_for_bit(op_type):
    model = _model([helper.make_node(op_type, ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ("n",))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n",))])
    feeds = {"x": _special_inputs()}
    got, _ = run_numba(model, feeds)
    np.testing.assert_array_equal(got[0], run_onnxruntime(model, feeds)[0])


def test_swish_before_dynamic_quantize_linear_gives_onnxruntimes_steps(rng):
    """x * Sigmoid(x) (one fused chain) quantized by DynamicQuantizeLinear: a sigmoid an ulp off
    moved quantization steps (ddddocr's quantized OCR model)."""
    model = _model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["m"]),
                    helper.make_node("DynamicQuantizeLinear", ["m"], ["y", "scale", "zero"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 96, 1024))],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, None),
                    helper.make_tensor_value_info("scale", TensorProto.FLOAT, None),
                    helper.make_tensor_value_info("zero", TensorProto.UINT8, None)])
    x = rng.uniform(-4, 4, (1, 96, 1024)).astype(np.float32)
    x[0, 7, 11] = 5.0  # the maximum, which sets the scale: 5 * sigmoid(5) is where an ulp showed
    feeds = {"x": x}
    got, session = run_numba(model, feeds, fallback=True)
    assert any(s.kind == "fused" and s.provider.name == "numba" for s in session.engine.plan.steps)
    for a, e in zip(got, run_onnxruntime(model, feeds)):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("act", ["Sigmoid", "Tanh"])
def test_conv_with_a_sigmoid_or_tanh_epilogue(rng, act):
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node(act, ["c"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [onnx.numpy_helper.from_array(w, "w")])
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    got, session = run_numba(model, feeds)
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    assert_close(got, run_onnxruntime(model, feeds), rtol=1e-5, atol=1e-6)


def test_mul_then_add_chain_rounds_each_op_as_onnxruntime(rng):
    """A fused Mul -> Add -> Floor: each op rounds to float32 on its own, as onnxruntime's kernels
    do (a fused multiply-add moved a Floor by a whole step in ddddocr's fake-quantized model)."""
    model = _model([helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
                    helper.make_node("Floor", ["s"], ["y"])],
                   [helper.make_tensor_value_info(n, TensorProto.FLOAT, (64, 1024)) for n in ("x", "a", "b")],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    x = rng.uniform(-100, 100, (64, 1024)).astype(np.float32)
    a = rng.uniform(-100, 100, (64, 1024)).astype(np.float32)
    b = np.floor(-x.astype(np.float64) * a).astype(np.float32)  # x * a + b near a whole number
    feeds = {"x": x, "a": a, "b": b}
    got, session = run_numba(model, feeds)
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    np.testing.assert_array_equal(got[0], run_onnxruntime(model, feeds)[0])
