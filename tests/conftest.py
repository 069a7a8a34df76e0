"""Shared fixtures of the core tests."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

OPSET = 17


def make_model(nodes, inputs, outputs, initializers=(), opset: int = OPSET, **kwargs) -> onnx.ModelProto:
    """A small model from onnx.helper pieces (inputs/outputs as (name, elem_type, shape))."""
    graph = helper.make_graph(
        nodes, kwargs.pop("graph_name", "g"),
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kwargs)
    model.ir_version = 8
    return model


@pytest.fixture
def add_relu_model() -> onnx.ModelProto:
    """y = Relu(x + b) with x: float[N, 4]."""
    b = onnx.numpy_helper.from_array(np.array([1, -1, 2, -2], np.float32), "b")
    return make_model(
        [helper.make_node("Add", ["x", "b"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, ["N", 4])], [("y", TensorProto.FLOAT, ["N", 4])], [b])
