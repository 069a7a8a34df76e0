"""If, Loop and Scan kernels of the numpy provider against onnxruntime / onnx.reference (and, for
Scan-8, a numpy loop written out here): branches, trip count / condition combinations, scan outputs,
loop-carried sequences, outer-scope reads, scan axes and directions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.numpy_provider.single_node_oracle import assert_matches_oracle, run_ours

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RNG = np.random.default_rng(7)


def vi(name, elem, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_v", F, [], [value]))


# --- If -------------------------------------------------------------------------------------
def _branches():
    then_g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["t0"]), helper.make_node("Mul", ["x", "y"], ["t1"])],
                               "then", [], [vi("t0", F, [2, 3]), vi("t1", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "y"], ["e0"]), helper.make_node("Neg", ["x"], ["e1"])],
                               "else", [], [vi("e0", F, [2, 3]), vi("e1", F, [2, 3])])
    return then_g, else_g


@pytest.mark.parametrize("cond", [True, False])
def test_if_reads_outer_scope(cond):
    then_g, else_g = _branches()
    feeds = {"c": np.array(cond), "x": RNG.standard_normal((2, 3)).astype(np.float32),
             "y": RNG.standard_normal((2, 3)).astype(np.float32)}
    assert_matches_oracle("If", feeds, n_outputs=2, opset=16, input_names=["c"], then_branch=then_g, else_branch=else_g)


def test_if_nested_in_if():
    inner_then, inner_else = _branches()
    inner = helper.make_node("If", ["c2"], ["i0", "i1"], then_branch=inner_then, else_branch=inner_else)
    outer_then = helper.make_graph([inner], "outer_then", [], [vi("i0", F, [2, 3]), vi("i1", F, [2, 3])])
    outer_else = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"]), helper.make_node("Identity", ["y"], ["o1"])],
                                   "outer_else", [], [vi("o0", F, [2, 3]), vi("o1", F, [2, 3])])
    for c1, c2 in [(True, False), (True, True), (False, True)]:
        feeds = {"c": np.array(c1), "c2": np.array(c2), "x": RNG.standard_normal((2, 3)).astype(np.float32),
                 "y": RNG.standard_normal((2, 3)).astype(np.float32)}
        assert_matches_oracle("If", feeds, n_outputs=2, opset=16, input_names=["c"], then_branch=outer_then, else_branch=outer_else)


# --- Loop -----------------------------------------------------------------------------------
def _loop_body(limit: float | None = None):
    """carried s += x * i (x from the outer scope); scan output s; cond = sum(s) < limit (or passes through)."""
    nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"]),
             helper.make_node("Add", ["s_in", "xi"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["scan"])]
    if limit is None:
        nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    else:
        nodes += [helper.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0), const("lim", limit),
                  helper.make_node("Less", ["total", "lim"], ["cond_out"])]
    return helper.make_graph(nodes, "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
                             [vi("cond_out", B, []), vi("s_out", F, [3]), vi("scan", F, [3])])


@pytest.mark.parametrize("trips,cond,limit", [
    (5, True, None),       # trip count only (cond passes through)
    (None, True, 20.0),    # condition only
    (10, True, 12.0),      # both: the condition stops it first
    (2, True, 1000.0),     # both: the trip count stops it first
    (0, True, None),       # zero iterations: carried value unchanged, empty scan output
    (4, False, 50.0),      # false initial condition: no iteration
])
def test_loop_trip_count_and_condition(trips, cond, limit):
    feeds = {"x": np.array([1.0, 2.0, 0.5], np.float32), "s0": np.array([0.5, -1.0, 2.0], np.float32)}
    names = ["", "c", "s0"]
    if trips is not None:
        feeds["m"] = np.array(trips, np.int64)
        names[0] = "m"
    feeds["c"] = np.array(cond)
    assert_matches_oracle("Loop", feeds, n_outputs=2, opset=16, input_names=names, body=_loop_body(limit))


def test_loop_carries_a_sequence():
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"]),
         helper.make_node("SequenceInsert", ["seq_in", "xi"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []),
                 helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [vi("cond_out", B, []), helper.make_tensor_sequence_value_info("seq_out", F, None)])
    empty = helper.make_node("SequenceEmpty", [], ["seq0"], dtype=F)
    loop = helper.make_node("Loop", ["m", "", "seq0"], ["seq"], body=body)
    graph = helper.make_graph([empty, loop], "g", [vi("m", I64, []), vi("x", F, [2])],
                              [helper.make_tensor_sequence_value_info("seq", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    x = np.array([1.5, -2.0], np.float32)
    (seq,) = run_ours(model, {"m": np.array(4, np.int64), "x": x})
    assert isinstance(seq, list) and len(seq) == 4
    for i, item in enumerate(seq):
        np.testing.assert_array_equal(item, x * i)
        assert item.dtype == np.float32


# --- Scan -----------------------------------------------------------------------------------
def _cumsum_body():
    return helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "w"], ["y_t"])],
        "body", [vi("acc_in", F, [2]), vi("x_t", F, [2])], [vi("acc_out", F, [2]), vi("y_t", F, [2])])


@pytest.mark.parametrize("in_axis,in_dir,out_axis,out_dir", [(0, 0, 0, 0), (1, 1, 0, 0), (0, 0, 1, 1), (1, 1, 1, 0)])
def test_scan_axes_and_directions(in_axis, in_dir, out_axis, out_dir):
    xs = RNG.standard_normal((4, 2)).astype(np.float32)
    xs = xs.T.copy() if in_axis == 1 else xs
    feeds = {"acc0": np.zeros(2, np.float32), "xs": xs, "w": np.array([2.0, -1.0], np.float32)}
    assert_matches_oracle("Scan", feeds, n_outputs=2, rtol=1e-6, atol=1e-6, opset=16, input_names=["acc0", "xs"],
          body=_cumsum_body(), num_scan_inputs=1, scan_input_axes=[in_axis], scan_input_directions=[in_dir],
          scan_output_axes=[out_axis], scan_output_directions=[out_dir])


def test_scan8_batch_axis_and_sequence_lens():
    batch, seq = 3, 5
    xs = RNG.standard_normal((batch, seq, 2)).astype(np.float32)
    acc0 = RNG.standard_normal((batch, 2)).astype(np.float32)
    lens = np.array([5, 2, 3], np.int32)
    w = np.array([0.5, 3.0], np.float32)
    node = helper.make_node("Scan", ["lens", "acc0", "xs"], ["acc", "ys"], body=_cumsum_body(), num_scan_inputs=1,
                            directions=[1])
    graph = helper.make_graph([node], "g", [vi("lens", TensorProto.INT32, [batch]), vi("acc0", F, [batch, 2]),
                                            vi("xs", F, [batch, seq, 2]), vi("w", F, [2])],
                              [vi("acc", F, [batch, 2]), vi("ys", F, [batch, seq, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    acc, ys = run_ours(model, {"lens": lens, "acc0": acc0, "xs": xs, "w": w})
    for b in range(batch):  # the Scan-8 contract written as a plain loop
        state = acc0[b].copy()
        for t, x_t in enumerate(xs[b, :lens[b]][::-1]):
            state = state + x_t
            np.testing.assert_allclose(ys[b, t], state * w, rtol=1e-6)
        np.testing.assert_allclose(acc[b], state, rtol=1e-6)
        assert not ys[b, lens[b]:].any()
