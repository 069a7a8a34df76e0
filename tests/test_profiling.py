"""Profiling runs an instrumented variant of the compiled plan: the same results, every step timed,
steps of If/Loop/Scan bodies recorded with their parent step."""

from __future__ import annotations

import json

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.executor import RunStats, run_plan
from tests.conftest import make_model

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _control_flow_model():
    """y = If(c, x + 1 then x * 2) summed over a Loop of 3 iterations that adds it to an accumulator."""
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    then_branch = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"], name="then_add")], "then", [],
                                    [helper.make_tensor_value_info("t", F, [3])], [one])
    else_branch = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["e"], name="else_mul")], "else", [],
                                    [helper.make_tensor_value_info("e", F, [3])], [two])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
         helper.make_node("Add", ["acc_in", "b"], ["acc_out"], name="body_add")],
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
         helper.make_tensor_value_info("acc_in", F, [3])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("acc_out", F, [3])])
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    nodes = [helper.make_node("If", ["c"], ["b"], name="branch", then_branch=then_branch, else_branch=else_branch),
             helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)]
    return make_model(nodes, [("c", B, []), ("x", F, [3])], [("y", F, [3])], [trips])


def _feeds():
    return {"c": np.array(True), "x": np.array([1.0, 2.0, 3.0], np.float32)}


def test_profiled_run_times_body_steps_with_their_parent(tmp_path):
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(_control_flow_model(), so, providers=["numpy"])
    (y,) = sess.run(None, _feeds())
    np.testing.assert_array_equal(y, [7.0, 11.0, 15.0])
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    parents = [(e["name"].removesuffix("_kernel_time"), e["args"].get("parent", ""))
               for e in events if e["cat"] == "Node"]
    assert ("then_add", "branch") in parents and ("else_mul", "branch") not in parents
    assert parents.count(("body_add", "loop")) == 3 and parents.count(("body_cond", "loop")) == 3
    assert [name for name, parent in parents if not parent] == ["branch", "loop"]
    assert all(e["dur"] >= 0 and e["args"]["provider"] == "numpy" for e in events if e["cat"] == "Node")


def test_instrumented_plan_gives_the_compiled_plan_results():
    sess = ort.InferenceSession(_control_flow_model(), providers=["numpy"])
    plain = run_plan(sess.engine.plan, _feeds())
    stats = RunStats()
    profiled = run_plan(sess.engine.plan, _feeds(), None, stats)
    np.testing.assert_array_equal(plain["y"], profiled["y"])
    assert [e[0] for e in stats.events if not e[6]] == ["branch", "loop"]
    # the next plain run reports nothing: no profiled run is in progress
    run_plan(sess.engine.plan, _feeds())
    assert sum(1 for e in stats.events if e[0] == "body_add") == 3
