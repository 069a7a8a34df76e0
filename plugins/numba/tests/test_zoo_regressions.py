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
    assert [s.kind for s in session._plan.steps] == ["fused"]
