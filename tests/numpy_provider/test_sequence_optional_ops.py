"""Sequence, optional and SequenceMap kernels of the numpy provider against onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxplug
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, assert_same, kernels_only, node_model, run_ours

RNG = np.random.default_rng(3)
SEQ = [RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]


def test_sequence_construct_and_length():
    assert_matches_oracle("SequenceConstruct", {"a": SEQ[0], "b": SEQ[1], "c": SEQ[2]}, oracle="ref")
    assert_matches_oracle("SequenceLength", {"s": SEQ}, oracle="ref")


@pytest.mark.parametrize("pos", [0, 2, -1, -4])
def test_sequence_at(pos):
    assert_matches_oracle("SequenceAt", {"s": SEQ, "p": np.array(pos, np.int64)}, oracle="ref")


@pytest.mark.parametrize("pos", [None, 0, 4, -1])
def test_sequence_insert(pos):
    feeds = {"s": SEQ, "t": SEQ[0] + 1}
    if pos is not None:
        feeds["p"] = np.array(pos, np.int64)
    assert_matches_oracle("SequenceInsert", feeds, oracle="ort")  # onnx.reference inserts pos == len at the front


@pytest.mark.parametrize("pos", [None, 0, -2])
def test_sequence_erase(pos):
    feeds = {"s": SEQ} if pos is None else {"s": SEQ, "p": np.array(pos, np.int64)}
    assert_matches_oracle("SequenceErase", feeds, oracle="ref")


def test_sequence_at_out_of_range_names_node():
    feeds = {"s": SEQ, "p": np.array(7, np.int64)}
    model = node_model("SequenceAt", feeds)
    with pytest.raises(onnxplug.errors.KernelError, match=r"SequenceAt.*position 7 is out of range"):
        run_ours(model, feeds, like=[SEQ[0]])


@pytest.mark.parametrize("split,keepdims", [(None, 1), (None, 0), (np.array(2, np.int64), 1),
                                            (np.array([1, 3, 1], np.int64), 1)])
def test_split_to_sequence(split, keepdims):
    feeds = {"x": RNG.standard_normal((5, 3)).astype(np.float32)}
    if split is not None:
        feeds["split"] = split
    assert_matches_oracle("SplitToSequence", feeds, oracle="ref", axis=0, keepdims=keepdims)


@pytest.mark.parametrize("axis,new_axis", [(0, 0), (1, 0), (-1, 1), (0, 1), (2, 1)])
def test_concat_from_sequence(axis, new_axis):
    assert_matches_oracle("ConcatFromSequence", {"s": SEQ}, oracle="ref", axis=axis, new_axis=new_axis)


def test_sequence_empty_then_insert():
    nodes = [helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT),
             helper.make_node("SequenceInsert", ["e", "x"], ["s"]),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (n,) = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"]).run(None, {"x": SEQ[0][0]})
    assert n.dtype == np.int64 and n.shape == () and int(n) == 1


def _sequence_map_model():
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Shape", ["c"], ["shape"])], "body",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [None])])
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    seq_i = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None))
    node = helper.make_node("SequenceMap", ["s", "t"], ["out", "shapes"], body=body)
    graph = helper.make_graph([node], "g", [helper.make_value_info("s", seq_t),
                                            helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])],
                              [helper.make_value_info("out", seq_t), helper.make_value_info("shapes", seq_i)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_sequence_map_with_tensor_input_runs_body_on_numpy():
    from onnx.reference import ReferenceEvaluator

    model = _sequence_map_model()
    seq = [RNG.standard_normal((k, 3)).astype(np.float32) for k in (1, 2, 4)]
    feeds = {"s": seq, "t": np.array([1, 2, 3], np.float32)}
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])
    ours = session.run(None, feeds)
    expected = ReferenceEvaluator(model).run(None, feeds)
    for a, e in zip(ours, expected):
        assert_same(a, e, where="SequenceMap")
    assert [a.op_type for a in session.get_node_assignments()] == ["SequenceMap"]


def _optional_model(op, input_type, empty=False):
    inputs = [] if empty else [helper.make_value_info("x", input_type)]
    opt_type = helper.make_optional_type_proto(input_type)
    nodes = [helper.make_node("Optional", [] if empty else ["x"], ["o"], **({"type": input_type} if empty else {})),
             helper.make_node(op, ["o"], ["y"])]
    out_type = helper.make_tensor_type_proto(TensorProto.BOOL, []) if op == "OptionalHasElement" else input_type
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_value_info("y", out_type)],
                              value_info=[helper.make_value_info("o", opt_type)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("op", ["OptionalHasElement", "OptionalGetElement"])
@pytest.mark.parametrize("kind", ["tensor", "sequence"])
def test_optional_roundtrip(op, kind):
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])
    input_type = t if kind == "tensor" else helper.make_sequence_type_proto(t)
    value = SEQ[0] if kind == "tensor" else SEQ[:2]
    model = _optional_model(op, input_type)
    (y,) = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"]).run(None, {"x": value})
    if op == "OptionalHasElement":
        assert y.dtype == np.bool_ and y.shape == () and bool(y)
    else:
        assert_same(y, value, where=op)


def test_empty_optional_has_no_element_and_get_element_fails():
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    model = _optional_model("OptionalHasElement", t, empty=True)
    (y,) = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"]).run(None, {})
    assert y.dtype == np.bool_ and not bool(y)
    model = _optional_model("OptionalGetElement", t, empty=True)
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"])
    with pytest.raises(onnxplug.errors.KernelError, match="OptionalGetElement"):
        session.run(None, {})
