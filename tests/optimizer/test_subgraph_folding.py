"""ConstantFolding inside If and Loop bodies: chains of constants (body Constant nodes, outer-scope
initializers) become body initializers; values a feed or the outer graph computes stay computed."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.optimizer.passes.constant_folding import MAX_GROWTH_BYTES, ConstantFolding
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from tests.optimizer.util import (F, I64, assert_close, assert_equivalent, const, model, node, ort_run, rand,
                                  run_passes)

B = TensorProto.BOOL


def _weight_chain(prefix: str, outer: str) -> list[onnx.NodeProto]:
    """w = Transpose(Concat(Unsqueeze(outer, 0), Unsqueeze(2 * outer, 0))[0]) built from constants."""
    p = prefix
    return [const(f"{p}two", 2.0), const(f"{p}axes", [0], np.int64),
            node("Mul", [outer, f"{p}two"], [f"{p}w2"]),
            node("Unsqueeze", [outer, f"{p}axes"], [f"{p}u1"]), node("Unsqueeze", [f"{p}w2", f"{p}axes"], [f"{p}u2"]),
            node("Concat", [f"{p}u1", f"{p}u2"], [f"{p}cat"], axis=0),
            const(f"{p}starts", [1], np.int64), const(f"{p}ends", [2], np.int64),
            node("Slice", [f"{p}cat", f"{p}starts", f"{p}ends", f"{p}axes"], [f"{p}sl"]),
            node("Squeeze", [f"{p}sl", f"{p}axes"], [f"{p}sq"]),
            node("Transpose", [f"{p}sq"], [f"{p}w"], perm=[1, 0])]


def _if_model(outer_weight_is_input: bool = False) -> onnx.ModelProto:
    then_nodes = [*_weight_chain("t_", "w_outer"), node("MatMul", ["x", "t_w"], ["t_y"])]
    else_nodes = [const("e_big", rand(4, 4, seed=4) * 0.5), node("Neg", ["e_big"], ["e_neg"]),
                  node("MatMul", ["x", "e_neg"], ["e_y"])]
    then_branch = helper.make_graph(then_nodes, "then", [], [helper.make_tensor_value_info("t_y", F, [3, 4])])
    else_branch = helper.make_graph(else_nodes, "else", [], [helper.make_tensor_value_info("e_y", F, [3, 4])])
    inputs = [("x", F, [3, 4]), ("flag", B, [])]
    inits = {"w_outer": rand(4, 4, seed=1)}
    if outer_weight_is_input:
        inputs.append(("w_outer", F, [4, 4]))  # an initializer a feed may override: not a constant
    return model([node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)],
                 inputs, [("y", F, [3, 4])], inits)


def _branches(m) -> tuple:
    if_node = next(n for n in m.graph.nodes if n.op_type == "If")
    return if_node.attr("then_branch"), if_node.attr("else_branch")


def test_if_branches_fold_their_constant_chains_and_match_onnxruntime():
    proto = _if_model()
    m, reports = run_passes(proto, ConstantFolding, DeadNodeElimination)
    then_branch, else_branch = _branches(m)
    assert [n.op_type for n in then_branch.nodes] == ["MatMul"]
    assert [n.op_type for n in else_branch.nodes] == ["MatMul"]
    assert reports["ConstantFolding"].changed
    folded = then_branch.nodes[0].inputs[1]
    assert folded in then_branch.initializers
    for flag in (True, False):
        assert_equivalent(proto, m, {"x": rand(3, 4, seed=2), "flag": np.array(flag)})


def test_an_overridable_outer_initializer_is_not_folded_into_a_branch():
    proto = _if_model(outer_weight_is_input=True)
    m, _ = run_passes(proto, ConstantFolding, DeadNodeElimination)
    then_branch, _ = _branches(m)
    ops = [n.op_type for n in then_branch.nodes]
    assert ops == ["Mul", "Unsqueeze", "Unsqueeze", "Concat", "Slice", "Squeeze", "Transpose", "MatMul"]
    feeds = {"x": rand(3, 4, seed=2), "flag": np.array(True), "w_outer": rand(4, 4, seed=9)}
    assert_equivalent(proto, m, feeds)


def test_a_branch_reading_a_value_the_outer_graph_computes_is_not_folded():
    then_nodes = [const("two", 2.0), node("Mul", ["h", "two"], ["h2"]), node("Add", ["x", "h2"], ["t_y"])]
    then_branch = helper.make_graph(then_nodes, "then", [], [helper.make_tensor_value_info("t_y", F, [3, 4])])
    else_branch = helper.make_graph([node("Identity", ["x"], ["e_y"])], "else", [],
                                    [helper.make_tensor_value_info("e_y", F, [3, 4])])
    proto = model([node("Relu", ["x"], ["h"]),
                   node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)],
                  [("x", F, [3, 4]), ("flag", B, [])], [("y", F, [3, 4])])
    m, _ = run_passes(proto, ConstantFolding, DeadNodeElimination)
    then_branch, _ = _branches(m)
    assert [n.op_type for n in then_branch.nodes] == ["Mul", "Add"]
    assert then_branch.nodes[0].inputs[0] == "h"
    assert_equivalent(proto, m, {"x": rand(3, 4, seed=2), "flag": np.array(True)})


def _loop_model() -> onnx.ModelProto:
    """h_t = tanh(h @ W) with W built inside the body from an outer initializer and Constant nodes;
    the body also adds the loop counter (a body input) cast to float: that stays computed."""
    body_nodes = [*_weight_chain("b_", "u_outer"), node("MatMul", ["h", "b_w"], ["p"]),
                  node("Cast", ["i"], ["i_f"], to=F), const("b_tenth", 0.1), node("Mul", ["i_f", "b_tenth"], ["i_s"]),
                  node("Add", ["p", "i_s"], ["pre"]), node("Tanh", ["pre"], ["h_next"]),
                  node("Identity", ["cond"], ["cond_out"])]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond", B, []),
         helper.make_tensor_value_info("h", F, [2, 4])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("h_next", F, [2, 4])])
    return model([node("Loop", ["trips", "", "h0"], ["h_final"], body=body)],
                 [("trips", I64, []), ("h0", F, [2, 4])], [("h_final", F, [2, 4])],
                 {"u_outer": rand(4, 4, seed=3) * 0.3})


def test_loop_body_folds_its_constant_chain_and_keeps_reads_of_body_inputs():
    proto = _loop_model()
    before = len(proto.graph.node[0].attribute[0].g.node)
    m, _ = run_passes(proto, ConstantFolding, DeadNodeElimination)
    body = m.graph.nodes[0].attr("body")
    ops = [n.op_type for n in body.nodes]
    assert ops == ["MatMul", "Cast", "Mul", "Add", "Tanh", "Identity"]
    assert len(ops) < before
    assert body.nodes[0].inputs[1] in body.initializers
    feeds = {"trips": np.array(3, np.int64), "h0": rand(2, 4, seed=5)}
    assert_equivalent(proto, m, feeds)


def test_a_large_constant_node_in_a_body_becomes_an_initializer():
    big = rand(160, 128, seed=6)  # more than MAX_GROWTH_BYTES, already in the model
    assert big.nbytes > MAX_GROWTH_BYTES
    then_branch = helper.make_graph([const("wbig", big), node("MatMul", ["x", "wbig"], ["t_y"])], "then", [],
                                    [helper.make_tensor_value_info("t_y", F, [3, 128])])
    else_branch = helper.make_graph([node("MatMul", ["x", "w_outer"], ["e_y"])], "else", [],
                                    [helper.make_tensor_value_info("e_y", F, [3, 128])])
    proto = model([node("If", ["flag"], ["y"], then_branch=then_branch, else_branch=else_branch)],
                  [("x", F, [3, 160]), ("flag", B, [])], [("y", F, [3, 128])], {"w_outer": rand(160, 128, seed=7)})
    m, reports = run_passes(proto, ConstantFolding)
    then_branch, _ = _branches(m)
    assert [n.op_type for n in then_branch.nodes] == ["MatMul"]
    np.testing.assert_array_equal(then_branch.initializers["wbig"], big)
    assert reports["ConstantFolding"].counts == {"constants": 1}
    assert_equivalent(proto, m, {"x": rand(3, 160, seed=8), "flag": np.array(True)})


def test_session_saves_a_valid_model_with_folded_bodies(tmp_path):
    path = tmp_path / "opt.onnx"
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(path)
    proto = _loop_model()
    feeds = {"trips": np.array(4, np.int64), "h0": rand(2, 4, seed=5)}
    sess = ort.InferenceSession(proto, so)
    saved = onnx.load(str(path))
    onnx.checker.check_model(saved, full_check=True)
    body = next(a.g for a in saved.graph.node[0].attribute if a.name == "body")
    assert not any(n.op_type in ("Constant", "Concat", "Slice", "Transpose") for n in body.node)
    expected = ort_run(proto, feeds)
    assert_close(sess.run(None, feeds), expected)
    assert_close(ort_run(saved, feeds), expected)
