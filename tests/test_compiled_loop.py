"""A Loop body compiled with its loop (plan_compiler.CompiledLoop, SubgraphPlan.run_loop): the same
results as onnxruntime and as the body called once per iteration, for the bodies whose bookkeeping
the generated loop does itself (carried values that trade places or pass through, outputs listed
twice, outer-scope values read every iteration, the condition read by the body, nested loops), and
errors that still name the body's node."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug import errors
from onnxplug.providers.numpy.ops.ai_onnx.op_loop import Loop

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
X = np.array([1.0, -2.0, 0.5], np.float32)


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def loop_model(body, carried, outputs, trips="m", cond="c", extra_nodes=(), extra_inputs=()):
    """A graph ``Loop(trips, cond, *carried)`` over the inputs m (int64), c (bool), x [3] and the
    carried initial values [3] named in ``carried``; ``outputs`` (name, elem, shape) in order."""
    loop = helper.make_node("Loop", [trips, cond, *carried], [o[0] for o in outputs], body=body, name="the_loop")
    inputs = [vi("m", I64, []), vi("c", B, []), vi("x", F, [3]), *[vi(c, F, [3]) for c in carried], *extra_inputs]
    graph = helper.make_graph([*extra_nodes, loop], "g", inputs, [vi(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


def feeds_for(model, trips=4, cond=True):
    rng = np.random.default_rng(3)
    feeds = {"m": np.array(trips, np.int64), "c": np.array(cond), "x": X}
    for inp in model.graph.input[3:]:
        feeds[inp.name] = rng.standard_normal(3).astype(np.float32)
    return feeds


def run_both_ways(model, feeds):
    """Our outputs with the compiled loop and with the body called per iteration (the kernel's path for
    runners without ``run_loop``)."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["numpy"])
    compiled = session.run(None, feeds)
    loops = [s.kernel for s in session.engine.plan.steps if isinstance(s.kernel, Loop)]
    assert loops and all(k.run_loop is not None for k in loops)
    for kernel in loops:
        kernel.run_loop = None
    return compiled, session.run(None, feeds)


def assert_matches_onnxruntime(model, feeds):
    compiled, per_iteration = run_both_ways(model, feeds)
    expected = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for ours, stepped, exp in zip(compiled, per_iteration, expected):
        np.testing.assert_array_equal(ours, stepped)
        assert ours.dtype == exp.dtype and ours.shape == exp.shape
        np.testing.assert_allclose(ours, exp, rtol=1e-6, atol=1e-6)
    return compiled


def test_carried_values_that_trade_places():
    # a_out = b_in, b_out = a_in + x: each reads the other's old value
    body = helper.make_graph(
        [helper.make_node("Identity", ["b_in"], ["a_out"]), helper.make_node("Add", ["a_in", "x"], ["b_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("a_in", F, [3]), vi("b_in", F, [3])],
        [vi("cond_out", B, []), vi("a_out", F, [3]), vi("b_out", F, [3])])
    model = loop_model(body, ["a0", "b0"], [("a", F, [3]), ("b", F, [3])])
    for trips in (0, 1, 2, 5):
        feeds = feeds_for(model, trips)
        a, b = assert_matches_onnxruntime(model, feeds)
        # two iterations give back a0 + x and b0 + x
        if trips == 2:
            np.testing.assert_allclose(a, feeds["a0"] + X)
            np.testing.assert_allclose(b, feeds["b0"] + X)


def test_outputs_read_straight_from_inputs_outer_values_and_constants():
    # the carried value passes through untouched, a scan output is the outer x, another a body constant
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["k"], value=helper.make_tensor("kv", F, [3], [7.0, 8.0, 9.0])),
         helper.make_node("Mul", ["x", "x"], ["x2"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_in", F, [3]), vi("x2", F, [3]), vi("k", F, [3])])
    model = loop_model(body, ["s0"], [("s", F, [3]), ("xs", F, [None, 3]), ("ks", F, [None, 3])])
    feeds = feeds_for(model, 3)
    s, xs, ks = assert_matches_onnxruntime(model, feeds)
    np.testing.assert_array_equal(s, feeds["s0"])
    np.testing.assert_array_equal(xs, np.stack([X * X] * 3))
    np.testing.assert_array_equal(ks, np.tile(np.array([7, 8, 9], np.float32), (3, 1)))


def test_iteration_numbers_are_fresh_tensors_each_iteration():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Identity", ["i"], ["i_scan"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("Add", ["s_in", "xi"], ["s_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3]), vi("i_scan", I64, [])])
    model = loop_model(body, ["s0"], [("s", F, [3]), ("iters", I64, [None])])
    s, iters = assert_matches_onnxruntime(model, feeds_for(model, 6))
    np.testing.assert_array_equal(iters, np.arange(6))


def test_the_condition_read_by_the_body_and_outer_values_read_every_iteration():
    # cond_out = cond_in and (sum(s) < 6): the body reads its condition input; x comes from outside
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x"], ["s_out"]),
         helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
         helper.make_node("Constant", [], ["limit"], value=helper.make_tensor("lv", F, [], [6.0])),
         helper.make_node("Less", ["total", "limit"], ["below"]),
         helper.make_node("And", ["cond_in", "below"], ["cond_out"]),
         helper.make_node("Identity", ["s_out"], ["scan"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3]), vi("scan", F, [3])])
    model = loop_model(body, ["s0"], [("s", F, [3]), ("scans", F, [None, 3])])
    feeds = feeds_for(model, 50)
    feeds["s0"] = np.zeros(3, np.float32)
    feeds["x"] = np.array([1.0, 0.5, 0.5], np.float32)  # sum grows by 2 an iteration: stops at the 3rd
    s, scans = assert_matches_onnxruntime(model, feeds)
    assert scans.shape == (3, 3)
    feeds["c"] = np.array(False)
    s, scans = assert_matches_onnxruntime(model, feeds)
    assert scans.shape == (0, 3)
    np.testing.assert_array_equal(s, feeds["s0"])


def test_condition_only_and_no_carried_values():
    # no trip count; only a scan output; the condition turns false at iteration 3
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["two"], value=helper.make_tensor("tv", I64, [], [2])),
         helper.make_node("Less", ["i", "two"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"])],
        "body", [vi("i", I64, []), vi("cond_in", B, [])], [vi("cond_out", B, []), vi("xi", F, [3])])
    model = loop_model(body, [], [("xs", F, [None, 3])], trips="")
    (xs,) = assert_matches_onnxruntime(model, feeds_for(model))
    np.testing.assert_array_equal(xs, np.stack([X * i for i in range(3)]))


def test_a_body_output_listed_twice():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["s_in", "x"], ["s_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3]), vi("s_out", F, [3])])
    model = loop_model(body, ["s0"], [("s", F, [3]), ("scans", F, [None, 3])])
    feeds = feeds_for(model, 4)
    compiled, per_iteration = run_both_ways(model, feeds)
    expected = [feeds["s0"] + X * (k + 1) for k in range(4)]
    np.testing.assert_allclose(compiled[0], expected[-1], rtol=1e-6)
    np.testing.assert_allclose(compiled[1], np.stack(expected), rtol=1e-6)
    for a, b in zip(compiled, per_iteration):
        np.testing.assert_array_equal(a, b)


def test_nested_loops_read_both_outer_scopes():
    inner = helper.make_graph(
        [helper.make_node("Identity", ["ci"], ["co"]), helper.make_node("Add", ["t_in", "x"], ["t_sum"]),
         helper.make_node("Mul", ["t_sum", "scale"], ["t_out"])],
        "inner", [vi("j", I64, []), vi("ci", B, []), vi("t_in", F, [3])], [vi("co", B, []), vi("t_out", F, [3])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["three"], value=helper.make_tensor("three_v", I64, [], [3])),
         helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Constant", [], ["half"],
                                                                         value=helper.make_tensor("hv", F, [], [0.5])),
         helper.make_node("Mul", ["fi", "half"], ["scale"]),  # read by the inner body from this scope
         helper.make_node("Loop", ["three", "", "s_in"], ["s_out"], body=inner)],
        "outer", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3])])
    model = loop_model(outer, ["s0"], [("s", F, [3])])
    assert_matches_onnxruntime(model, feeds_for(model, 4))


def test_an_error_in_the_body_names_its_node():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Reshape", ["s_in", "bad_shape"], ["s_out"], name="bad_reshape")],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3])],
        initializer=[helper.make_tensor("bad_shape", I64, [1], [4])])
    model = loop_model(body, ["s0"], [("s", F, [3])])
    session = ort.InferenceSession(model.SerializeToString(), providers=["numpy"])
    with pytest.raises(errors.KernelError, match="bad_reshape"):
        session.run(None, feeds_for(model, 2))
    # no iteration: nothing fails
    np.testing.assert_array_equal(session.run(None, feeds_for(model, 0))[0], feeds_for(model, 0)["s0"])


def test_a_body_with_copies_between_devices():
    # the body's Add runs on the mixing provider's second device: its plan has copy steps, named in
    # the generated loop beside the scan outputs' lists
    from onnxplug.plugins import get_catalog
    from tests.mixing_provider import MixingProvider

    get_catalog().register(MixingProvider, "tests")
    try:
        body = helper.make_graph(
            [helper.make_node("Add", ["s_in", "x"], ["s_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Neg", ["s_out"], ["neg"])],
            "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
            [vi("cond_out", B, []), vi("s_out", F, [3]), vi("neg", F, [3]), vi("s_out", F, [3])])
        model = loop_model(body, ["s0"], [("s", F, [3]), ("negs", F, [None, 3]), ("sums", F, [None, 3])])
        session = ort.InferenceSession(model.SerializeToString(), providers=[("mixing", {"claim": "Add"})])
        (loop,) = [s.kernel for s in session.engine.plan.steps if isinstance(s.kernel, Loop)]
        assert any(step.kind == "copy" for step in loop.body.plan.steps)
        feeds = feeds_for(model, 3)
        s, negs, sums = session.run(None, feeds)
        expected = [feeds["s0"] + X * (k + 1) for k in range(3)]
        np.testing.assert_allclose(s, expected[-1], rtol=1e-6)
        np.testing.assert_allclose(sums, np.stack(expected), rtol=1e-6)
        np.testing.assert_allclose(negs, -np.stack(expected), rtol=1e-6)
    finally:
        get_catalog().providers.pop("mixing", None)
