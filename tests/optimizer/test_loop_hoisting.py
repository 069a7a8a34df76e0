"""LoopProjectionHoisting: a Loop body's MatMul(Gather(X, i), W) becomes one product before the Loop."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.errors import OnnxplugError
from onnxplug.optimizer.passes.loop_projection_hoisting import LoopProjectionHoisting
from onnxplug.optimizer.passes.matmul_add_to_gemm import MatMulAddToGemm

from onnxplug.testing.model_suite import build, sample_inputs

from .util import (F, I64, assert_close, assert_equivalent, model, node, op_types, ort_run, ours_unoptimized, rand,
                   run_passes)

B = TensorProto.BOOL


def _rnn_loop(*, weight_shape=(4, 5), trips: str = "trips", extra_body_nodes=(), step_output: bool = False,
              sequence_in_body: bool = False) -> onnx.ModelProto:
    """h_t = tanh(x[i] @ w + h @ u) over a [3, batch, 4] sequence, a Loop with outer x, w and u."""
    nodes = [node("Gather", ["x", "i"], ["x_t"], axis=0), node("MatMul", ["x_t", "w"], ["p"]),
             node("MatMul", ["h", "u"], ["r"]), node("Add", ["p", "r"], ["pre"]), node("Tanh", ["pre"], ["h_next"]),
             node("Identity", ["cond"], ["cond_out"]), *extra_body_nodes]
    if sequence_in_body:  # the sequence is computed inside the body: nothing to hoist
        nodes.insert(0, node("Identity", ["x_outer"], ["x"]))
    outputs = [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("h_next", F, ["batch", 5])]
    if step_output:
        outputs.append(helper.make_tensor_value_info("x_t", F, ["batch", 4]))
    body = helper.make_graph(
        nodes, "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond", B, []),
                        helper.make_tensor_value_info("h", F, ["batch", 5])], outputs)
    loop_outputs = ["h_final"] + (["steps"] if step_output else [])
    graph_outputs = [("h_final", F, ["batch", 5])] + ([("steps", F, None)] if step_output else [])
    return model([node("Loop", [trips, "", "h0"], loop_outputs, body=body)],
                 [("x_outer" if sequence_in_body else "x", F, [3, "batch", 4]), ("trips", I64, []),
                  ("h0", F, ["batch", 5])],
                 graph_outputs, {"w": rand(*weight_shape), "u": rand(5, 5, seed=3) * 0.3})


def _feeds(proto: onnx.ModelProto, trips: int = 3) -> dict[str, np.ndarray]:
    first = proto.graph.input[0].name
    return {first: rand(3, 2, 4, seed=5), "trips": np.array(trips, np.int64), "h0": rand(2, 5, seed=1)}


def test_projection_is_one_product_before_the_loop_and_results_match_onnxruntime():
    proto = _rnn_loop()
    m, reports = run_passes(proto, LoopProjectionHoisting)
    assert reports["LoopProjectionHoisting"].counts == {"hoisted": 1}
    assert [n.op_type for n in m.graph.nodes] == ["MatMul", "Loop"]
    before = m.graph.nodes[0]
    assert before.inputs == ["x", "w"]
    body = m.graph.nodes[1].attr("body")
    assert [n.op_type for n in body.nodes] == ["Gather", "MatMul", "Add", "Tanh", "Identity"]
    gather = body.nodes[0]
    assert gather.inputs == [before.outputs[0], "i"] and gather.outputs == ["p"]
    assert_equivalent(proto, m, _feeds(proto))


def test_hoisting_runs_before_matmul_add_to_gemm_which_then_fuses_the_state_product():
    proto = _rnn_loop()
    m, _ = run_passes(proto, LoopProjectionHoisting, MatMulAddToGemm)
    body = m.graph.nodes[1].attr("body")
    assert [n.op_type for n in body.nodes] == ["Gather", "Gemm", "Tanh", "Identity"]
    assert_equivalent(proto, m, _feeds(proto))


@pytest.mark.parametrize("case", ["batched weight", "no trip count", "step read twice", "step is a body output",
                                  "sequence defined in the body"])
def test_not_hoisted(case):
    proto = {
        # a 3-D weight broadcasts against the sequence's leading axis: not the same product
        "batched weight": lambda: _rnn_loop(weight_shape=(1, 4, 5)),
        # a while-loop may stop long before the sequence ends
        "no trip count": lambda: _rnn_loop(trips=""),
        "step read twice": lambda: _rnn_loop(extra_body_nodes=[node("Relu", ["x_t"], ["unused"])]),
        "step is a body output": lambda: _rnn_loop(step_output=True),
        "sequence defined in the body": lambda: _rnn_loop(sequence_in_body=True),
    }[case]()
    m, reports = run_passes(proto, LoopProjectionHoisting)
    assert not reports["LoopProjectionHoisting"].changed
    assert op_types(m) == {"Loop": 1}


def test_a_trip_count_past_the_sequence_still_fails_naming_the_gather():
    proto = _rnn_loop()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(proto.SerializeToString(), options)
    with pytest.raises(OnnxplugError, match="Gather"):
        session.run(None, _feeds(proto, trips=4))


def test_model_suite_loop_model_is_hoisted_and_matches_onnxruntime():
    proto = build("loop_model")
    m, reports = run_passes(proto, LoopProjectionHoisting)
    assert reports["LoopProjectionHoisting"].counts == {"hoisted": 1, "biases": 1}
    feeds = sample_inputs("loop_model", 2)
    session = ort.InferenceSession(proto.SerializeToString())
    assert_close(session.run(None, feeds), ort_run(proto, feeds))


def _biased_loop(bias_shape=(5,), *, bias_first: bool = False, bias_in_body: bool = False,
                 sum_read_twice: bool = False, sum_is_output: bool = False) -> onnx.ModelProto:
    """_rnn_loop with h_t = tanh(x[i] @ w + h @ u + b), b added after the sum, as torch exports a cell."""
    add = node("Add", ["b", "pre"] if bias_first else ["pre", "b"], ["pre_b"])
    extra = [node("Relu", ["pre"], ["unused"])] if sum_read_twice else []
    proto = _rnn_loop(extra_body_nodes=[add, node("Tanh", ["pre_b"], ["h_biased"]), *extra])
    body = proto.graph.node[0].attribute[0].g
    tanh = next(n for n in body.node if n.op_type == "Tanh" and n.output[0] == "h_next")
    body.node.remove(tanh)
    next(n for n in body.node if n.output[0] == "h_biased").output[0] = "h_next"
    if sum_is_output:
        body.output.append(helper.make_tensor_value_info("pre", F, ["batch", 5]))
        proto.graph.node[0].output.append("pre_steps")
        proto.graph.output.append(helper.make_tensor_value_info("pre_steps", F, None))
    if bias_in_body:
        body.node.insert(0, node("Identity", ["b_outer"], ["b"]))
    bias = (rand(*bias_shape, seed=9) if bias_shape else np.array(rand(1, seed=9)[0]))
    proto.graph.initializer.append(numpy_helper.from_array(bias, "b_outer" if bias_in_body else "b"))
    return proto


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), (1,), ()], ids=["row", "1 x row", "one", "scalar"])
@pytest.mark.parametrize("bias_first", [False, True], ids=["sum + b", "b + sum"])
def test_a_bias_after_the_step_sum_joins_the_hoisted_projection(bias_shape, bias_first):
    proto = _biased_loop(bias_shape, bias_first=bias_first)
    m, reports = run_passes(proto, LoopProjectionHoisting, MatMulAddToGemm)
    assert reports["LoopProjectionHoisting"].counts == {"hoisted": 1, "biases": 1}
    assert [n.op_type for n in m.graph.nodes] == ["MatMul", "Add", "Loop"]
    body = m.graph.nodes[2].attr("body")
    assert sorted(n.op_type for n in body.nodes) == ["Gather", "Gemm", "Identity", "Tanh"]  # no Add left
    assert body.nodes[0].inputs[0] == m.graph.nodes[1].outputs[0]
    assert_equivalent(proto, m, _feeds(proto))


@pytest.mark.parametrize("case", ["bias grows the step", "bias on the sequence axis", "bias defined in the body",
                                  "sum read twice", "sum is a body output"])
def test_bias_not_hoisted(case):
    proto = {
        "bias grows the step": lambda: _biased_loop((3, 1, 5)),  # would broadcast the step to 3 rows
        "bias on the sequence axis": lambda: _biased_loop((3, 2, 5)),  # rank of the whole sequence
        "bias defined in the body": lambda: _biased_loop(bias_in_body=True),
        "sum read twice": lambda: _biased_loop(sum_read_twice=True),
        "sum is a body output": lambda: _biased_loop(sum_is_output=True),
    }[case]()
    m, reports = run_passes(proto, LoopProjectionHoisting)
    assert reports["LoopProjectionHoisting"].counts == {"hoisted": 1}
    assert [n.op_type for n in m.graph.nodes] == ["MatMul", "Loop"]
    feeds = _feeds(proto)
    assert_close(ours_unoptimized(m.to_proto(), feeds), ort_run(proto, feeds))
