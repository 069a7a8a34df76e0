"""Declared shapes as onnxruntime reads them: negative and zero sizes, empty and absent names, no
shape, no type. For each, onnxplug must take the feeds onnxruntime takes, refuse those it refuses,
and report ``get_inputs()``/``get_outputs()`` as onnxruntime's NodeArgs do (same test, same model).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug import errors

F = TensorProto.FLOAT
NO_SHAPE, NO_TYPE = "no shape", "no type"


def _value_info(name: str, dims, elem_type: int = F) -> onnx.ValueInfoProto:
    """A value info; dims are ints (dim_value, negative ones included), strings (dim_param, '' too),
    None (a dim with neither), or NO_SHAPE / NO_TYPE."""
    vi = onnx.ValueInfoProto(name=name)
    if dims == NO_TYPE:
        return vi
    vi.type.tensor_type.elem_type = elem_type
    if dims == NO_SHAPE:
        return vi
    vi.type.tensor_type.shape.SetInParent()
    for d in dims:
        dim = vi.type.tensor_type.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
    return vi


def _model(x_dims, y_dims=NO_SHAPE, op: str = "Relu") -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="node")], "g",
                              [_value_info("x", x_dims)], [_value_info("y", y_dims)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _sessions(model: onnx.ModelProto):
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return ort.InferenceSession(model, providers=["numpy"]), oracle


def _node_args(sess) -> list[tuple]:
    return [(a.name, a.type, a.shape) for a in sess.get_inputs() + sess.get_outputs()]


FEEDS = [np.zeros((2, 3, 4, 5), np.float32), np.ones((1, 3, 7, 7), np.float32), np.zeros((0, 3, 1, 1), np.float32),
         np.ones((3, 3), np.float32), np.array(2.0, np.float32)]

INPUT_CASES = [
    # (id, declared input dims)
    ("paddleocr-minus-one-and-question-marks", [-1, 3, "?", "?"]),
    ("negative-sizes", [-1, 3, -5, 5]),
    ("zero-size", [0, 3, 4, 5]),
    ("empty-name", ["", 3, 4, 5]),
    ("neither-size-nor-name", [None, 3, 4, 5]),
    ("two-unknown", [None, None, 4, 5]),
    ("named", ["batch", 3, "h", "w"]),
    ("fixed", [2, 3, 4, 5]),
    ("no-shape", NO_SHAPE),
    ("rank-0", []),
]


@pytest.mark.parametrize("dims", [c[1] for c in INPUT_CASES], ids=[c[0] for c in INPUT_CASES])
def test_input_shapes_read_as_onnxruntime(dims):
    sess, oracle = _sessions(_model(dims))
    assert _node_args(sess) == _node_args(oracle)
    for x in FEEDS:
        try:
            expected = oracle.run(None, {"x": x})
        except Exception:  # onnxruntime refuses this feed for this shape: so must onnxplug
            with pytest.raises(errors.InputShapeError, match="'x'"):
                sess.run(None, {"x": x})
            continue
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], expected[0])


def test_paddleocr_input_regression():
    # a detector declared with input [-1, 3, ?, ?] was refused: "input 'x' expects dimension 0 to be -1"
    sess, oracle = _sessions(_model([-1, 3, "?", "?"]))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 48)).astype(np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0])
    assert sess.get_inputs()[0].shape == oracle.get_inputs()[0].shape == [None, 3, "?", "?"]


OUTPUT_CASES = [
    # (id, declared input dims, declared output dims): the reported output merges declared and inferred
    ("no-shape-inferred", ["N", 3, 4, 5], NO_SHAPE),
    ("no-type-inferred", ["N", 3, 4, 5], NO_TYPE),
    ("unknown-filled-by-inferred", ["N", 3, 4, 5], [None, "M", 4, 5]),
    ("negative-filled-by-inferred", ["N", 3, 4, 5], [-1, 3, -1, 5]),
    ("declared-name-kept", [None, 3, 4, 5], ["batch", 3, 4, 5]),
    ("declared-size-over-inferred-name", ["N", 3, 4, 5], [7, 3, 4, 5]),
    ("made-up-names-unknown", [None, None, 4, 5], NO_SHAPE),
    ("all-unknown", [None, None, 4, 5], [None, None, None, None]),
]


@pytest.mark.parametrize("x_dims,y_dims", [c[1:] for c in OUTPUT_CASES], ids=[c[0] for c in OUTPUT_CASES])
def test_output_shapes_reported_as_onnxruntime(x_dims, y_dims):
    sess, oracle = _sessions(_model(x_dims, y_dims))
    assert _node_args(sess) == _node_args(oracle)


@pytest.mark.parametrize("op,x_dims,extra", [
    ("NonZero", ["N", 3], []),
    ("Shape", ["N", 3], []),
    ("Concat", ["N", 3], [("z", ["M", 3])]),
])
def test_inferred_output_shapes_without_made_up_names(op, x_dims, extra):
    inputs = [_value_info("x", x_dims)] + [_value_info(n, d) for n, d in extra]
    attrs = {"axis": 0} if op == "Concat" else {}
    graph = helper.make_graph([helper.make_node(op, [i.name for i in inputs], ["y"], name="node", **attrs)], "g",
                              inputs, [_value_info("y", NO_SHAPE, TensorProto.INT64 if op != "Concat" else F)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess, oracle = _sessions(model)
    assert _node_args(sess) == _node_args(oracle)


@pytest.mark.parametrize("case", ["input-without-type", "input-without-element-type"])
def test_input_without_type_is_refused_as_onnxruntime_refuses_it(case):
    model = _model(NO_TYPE) if case == "input-without-type" else _model([2, 3])
    if case == "input-without-element-type":
        model.graph.input[0].type.tensor_type.elem_type = 0
    with pytest.raises(Exception):
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(errors.ModelValidationError, match="input 'x' has no"):
        ort.InferenceSession(model, providers=["numpy"])


def test_rank_0_input_takes_any_shape_as_onnxruntime():
    sess, oracle = _sessions(_model([], op="Neg"))
    for x in (np.array(2.0, np.float32), np.array([1.0, 2.0], np.float32)):
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0])
