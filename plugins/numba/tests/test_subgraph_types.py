"""Element types inside If/Loop bodies, worked out by the provider, against onnx shape inference."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnxplug.ir.loader import load_model
from onnxplug.testing.model_suite import build
from onnxplug_sdk import GraphView, numpy_dtype

from numba_test_helpers import assert_close, run_numba, run_onnxruntime
from onnxplug_numba.subgraph_types import TypedView, infer_element_types


def _oracle_body_types(model: onnx.ModelProto) -> dict[str, np.dtype]:
    """Element types onnx shape inference gives the values of every subgraph."""
    inferred = onnx.shape_inference.infer_shapes(model)
    found: dict[str, np.dtype] = {}
    for node in inferred.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                for vi in attr.g.value_info:
                    found[vi.name] = np.dtype(numpy_dtype(vi.type.tensor_type.elem_type))
    return found


def _bodies(model: onnx.ModelProto) -> list:  # type: ignore[type-arg]
    """The loaded subgraphs without the value infos shape inference gave them, as when inference
    fails on a model (the loader then keeps no inferred types at all)."""
    graph = load_model(model).graph
    bodies = [g for node in graph.nodes for g in node.subgraphs]
    for body in bodies:
        body.value_info.clear()
    return bodies


@pytest.mark.parametrize("name", ["loop_model", "if_model"])
def test_body_types_match_shape_inference(name):
    model = build(name)
    oracle = _oracle_body_types(model)
    found: dict[str, np.dtype] = {}
    for body in _bodies(model):
        found.update(infer_element_types(GraphView(body, body.nodes)))
    assert found, "every body value should get a type from the rules"
    for value, dtype in found.items():
        assert oracle[value] == dtype, value


def test_typed_view_keeps_declared_types_and_leaves_rank_unknown():
    model = build("loop_model")
    body = _bodies(model)[0]
    view = TypedView(GraphView(body, body.nodes))
    declared = body.inputs[2].name  # h_prev, typed by the model
    assert view.type_of(declared) == body.type_of(declared)
    inferred = next(iter(infer_element_types(GraphView(body, body.nodes))))
    assert view.dtype_of(inferred) is not None and view.type_of(inferred).shape is None


def test_loop_body_with_cast_and_comparison_matches_onnxruntime(rng):
    """A Loop whose body casts, compares and selects: every body value needs an inferred type."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=onnx.TensorProto.FLOAT),
         helper.make_node("Mul", ["x_in", "fi"], ["scaled"]),
         helper.make_node("Greater", ["scaled", "x"], ["bigger"]),
         helper.make_node("Where", ["bigger", "scaled", "x_in"], ["picked"]),
         helper.make_node("Tanh", ["picked"], ["x_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body",
        [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", onnx.TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", onnx.TensorProto.FLOAT, None)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.array(5, np.int64), "n")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    types = infer_element_types(GraphView(_bodies(model)[0], _bodies(model)[0].nodes))
    assert types == {"fi": np.dtype(np.float32), "scaled": np.dtype(np.float32), "bigger": np.dtype(bool),
                     "picked": np.dtype(np.float32)}
    got, _ = run_numba(model, {"x": x}, fallback=True)  # the Loop node itself runs on numpy
    assert_close(got, run_onnxruntime(model, {"x": x}))
