"""Element types after onnxruntime's contrib ops, which onnx shape inference does not type: the
values downstream get the type their ops determine, so a provider that checks element types still
takes them, and results keep matching onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxplug
from onnx import TensorProto, helper, numpy_helper
from onnxplug.explain import declined_nodes
from onnxplug.ir.loader import load_model

from tests.oracle import assert_close, ort_outputs


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "gamma"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "beta"),
             numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([0, 2, -1], np.int64), "shape"),
             numpy_helper.from_array(np.array([1], np.int64), "axes")]
    nodes = [
        helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta"], ["ln"], domain="com.microsoft",
                         epsilon=1e-5),
        helper.make_node("FastGelu", ["ln"], ["act"], domain="com.microsoft"),
        helper.make_node("MatMul", ["act", "w"], ["mm"]),
        helper.make_node("Reshape", ["mm", "shape"], ["r"]),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Softmax", ["r"], ["sm"], axis=-1),
        helper.make_node("Unsqueeze", ["sm", "axes"], ["y"]),
        helper.make_node("Greater", ["mm", "skip"], ["g"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3, 8])
                                           for n in ("x", "skip")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("s", TensorProto.INT64, None),
                               helper.make_tensor_value_info("g", TensorProto.BOOL, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def test_values_after_contrib_ops_are_typed():
    graph = load_model(_model().SerializeToString()).graph
    assert graph.type_of("ln").elem_type == TensorProto.FLOAT
    assert graph.type_of("act").elem_type == TensorProto.FLOAT
    assert graph.type_of("mm").elem_type == TensorProto.FLOAT
    assert graph.type_of("r").elem_type == TensorProto.FLOAT
    assert graph.type_of("sm").elem_type == TensorProto.FLOAT


def test_providers_take_the_nodes_after_contrib_ops_and_match_onnxruntime():
    model = _model()
    rng = np.random.default_rng(1)
    feeds = {n: rng.standard_normal((2, 3, 8)).astype(np.float32) for n in ("x", "skip")}
    expected = ort_outputs(model, feeds)
    providers = ["numpy"] + (["numba"] if "numba" in onnxplug.get_available_providers() else [])
    for provider in providers:
        sess = onnxplug.InferenceSession(model.SerializeToString(), providers=[provider])
        assert_close(sess.run(None, feeds), expected)
        declined = {d.op_type for d in declined_nodes(sess.engine)}
        assert not declined & {"MatMul", "Reshape", "Shape", "Softmax", "Unsqueeze", "Greater"}, provider
