"""MatMul followed by the Add of a constant bias vector: one fused step, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from numba_test_helpers import assert_close, run_numba, run_onnxruntime


def linear_model(a_shape, b_shape, bias_shape, *, bias_first=False, bias_is_input=False,
                 dtype=np.float32) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """y = a @ w + bias, with w and (unless ``bias_is_input``) bias as initializers."""
    rng = np.random.default_rng(1)
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    feeds = {"a": rng.standard_normal(a_shape).astype(dtype)}
    w = rng.standard_normal(b_shape).astype(dtype)
    bias = rng.standard_normal(bias_shape).astype(dtype)
    inits = [onnx.numpy_helper.from_array(w, "w")]
    inputs = [helper.make_tensor_value_info("a", elem, a_shape)]
    if bias_is_input:
        feeds["bias"] = bias
        inputs.append(helper.make_tensor_value_info("bias", elem, bias_shape))
    else:
        inits.append(onnx.numpy_helper.from_array(bias, "bias"))
    add_inputs = ["bias", "p"] if bias_first else ["p", "bias"]
    nodes = [helper.make_node("MatMul", ["a", "w"], ["p"]), helper.make_node("Add", add_inputs, ["y"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model), feeds


@pytest.mark.parametrize("a_shape,b_shape,bias_shape", [
    ((2, 5, 7), (7, 9), (9,)),
    ((5, 7), (7, 9), (1, 9)),
    ((1024, 256), (256, 160), (160,)),  # large enough to share: row bands
    ((48, 512), (512, 1536), (1536,)),  # few rows: column bands, each with its slice of the bias
    ((3, 128, 256), (256, 400), (400,)),  # batched rows
])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_bias_is_one_fused_step(a_shape, b_shape, bias_shape, threads, bias_first):
    model, feeds = linear_model(a_shape, b_shape, bias_shape, bias_first=bias_first)
    got, session = run_numba(model, feeds, threads=threads)
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    assert_close(got, run_onnxruntime(model, feeds))


def test_float64_matches_numpy():
    model, feeds = linear_model((6, 4), (4, 3), (3,), dtype=np.float64)
    (got,), session = run_numba(model, feeds)
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]
    init = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_allclose(got, feeds["a"] @ init["w"] + init["bias"], rtol=1e-12)


@pytest.mark.parametrize("bias_shape", [(4, 9), (1, 1, 9)])  # not a vector over the last axis
def test_other_adds_are_not_fused(bias_shape):
    model, feeds = linear_model((4, 7), (7, 9), bias_shape)
    got, session = run_numba(model, feeds)
    assert [s.kind for s in session.engine.plan.steps] != ["fused"]
    assert_close(got, run_onnxruntime(model, feeds))


def test_bias_from_a_graph_input_is_not_fused():
    model, feeds = linear_model((4, 7), (7, 9), (9,), bias_is_input=True)
    got, session = run_numba(model, feeds)
    assert len(session.engine.plan.steps) == 2
    assert_close(got, run_onnxruntime(model, feeds))


def test_chain_around_a_fused_pair():
    """a = x * 2; q = a @ w + bias (one fused pair); y = relu(a + q): elementwise nodes on both
    sides of the pair (the provider hands the pair to the chain finder as a fixed group)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(rng.standard_normal((6, 6)).astype(np.float32), "w"),
             onnx.numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "bias"),
             onnx.numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    nodes = [helper.make_node("Mul", ["x", "two"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["p"]),
             helper.make_node("Add", ["p", "bias"], ["q"]), helper.make_node("Add", ["a", "q"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    got, session = run_numba(model, {"x": x})
    assert any(s.kind == "fused" and s.name.startswith("numba_matmul_bias") for s in session.engine.plan.steps)
    assert_close(got, run_onnxruntime(model, {"x": x}))


def test_dead_elementwise_chain_runs_as_single_nodes():
    """A chain whose values nobody reads (dead code kept in the graph) has no output to fuse for."""
    rng = np.random.default_rng(3)
    x = np.abs(rng.standard_normal((3, 5))).astype(np.float32)
    nodes = [helper.make_node("Sqrt", ["x"], ["unused_a"]), helper.make_node("Neg", ["unused_a"], ["unused_b"]),
             helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))
    got, session = run_numba(model, {"x": x})
    assert all(s.outputs for s in session.engine.plan.steps)
    assert_close(got, run_onnxruntime(model, {"x": x}))
