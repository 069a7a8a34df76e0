"""``helpers.untyped_reason``: why a value has no tensor element type, in the words a Decline uses."""

from __future__ import annotations

import onnxplug as ort
from onnx import TensorProto, helper
from onnxplug_sdk import GraphView
from onnxplug_sdk.helpers import untyped_reason


def _graph(nodes, inputs, outputs):
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    graph = ort.InferenceSession(model.SerializeToString(), options, providers=["numpy"]).engine.model.graph
    return GraphView(graph, graph.nodes)


def test_a_sequence_is_not_a_tensor():
    f = TensorProto.FLOAT
    view = _graph([helper.make_node("SequenceConstruct", ["x", "x"], ["seq"], name="pack"),
                   helper.make_node("SequenceAt", ["seq", "i"], ["y"], name="at")],
                  [helper.make_tensor_value_info("x", f, [2]),
                   helper.make_tensor_value_info("i", TensorProto.INT64, [])],
                  [helper.make_tensor_value_info("y", f, None)])
    assert untyped_reason(view, "seq") == "'seq' is a sequence, not a tensor"


def test_an_untyped_chain_names_the_node_where_inference_stopped():
    f = TensorProto.FLOAT
    view = _graph([helper.make_node("Inverse", ["x"], ["s"], name="inv", domain="com.microsoft"),
                   helper.make_node("Relu", ["s"], ["r"], name="relu"),
                   helper.make_node("Neg", ["r"], ["y"], name="neg")],
                  [helper.make_tensor_value_info("x", f, [1, 2, 2])],
                  [helper.make_tensor_value_info("y", f, None)])
    assert untyped_reason(view, "r") == ("the element type of 'r' is unknown: type inference gives none for the "
                                         "output of node 'inv' (com.microsoft::Inverse, opset 1) "
                                         "(via 's')")
