"""Regressions found by the model zoo: small graphs with the pattern a real model carried, each
compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
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
