"""Gemm transpose folding, MatMul + Add -> Gemm, Reshape chains and runtime Reshape targets."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.passes.gemm_transpose_folding import GemmTransposeFolding
from onnxplug.optimizer.passes.matmul_add_to_gemm import MatMulAddToGemm
from onnxplug.optimizer.passes.reshape_chain import ReshapeChainCollapse
from onnxplug.optimizer.passes.reshape_target_folding import ReshapeTargetFolding
from onnxplug.optimizer.passes.shape_folding import ShapeFolding
from tests.optimizer.util import F, I64, assert_equivalent, model, node, op_types, rand, run_passes

B = TensorProto.BOOL


def test_transposes_before_gemm_become_flags():
    proto = model([node("Transpose", ["a"], ["at"], perm=[1, 0]), node("Transpose", ["b"], ["bt"], perm=[1, 0]),
                   node("Gemm", ["at", "bt", "c"], ["y"], transB=1)],
                  [("a", F, [4, 3]), ("b", F, [4, 5])], [("y", F, [3, 5])], {"c": rand(5)})
    m, _ = run_passes(proto, GemmTransposeFolding, DeadNodeElimination)
    assert op_types(m) == {"Gemm": 1}
    gemm = m.graph.nodes[0]
    assert gemm.attr("transA") == 1 and gemm.attr("transB") == 0
    assert_equivalent(proto, m, {"a": rand(4, 3), "b": rand(4, 5, seed=1)})


def test_transpose_with_other_perm_is_not_folded():
    proto = model([node("Transpose", ["a"], ["at"], perm=[0, 1]), node("Gemm", ["at", "b"], ["y"])],
                  [("a", F, [3, 4]), ("b", F, [4, 5])], [("y", F, [3, 5])])
    m, reports = run_passes(proto, GemmTransposeFolding)
    assert not reports["GemmTransposeFolding"].changed


@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), (3, 5), ()])
def test_2d_matmul_add_becomes_gemm(bias_shape):
    bias = rand(*bias_shape) if bias_shape else np.array(0.5, np.float32)
    proto = model([node("MatMul", ["a", "w"], ["m"]), node("Add", ["bias", "m"], ["y"])],
                  [("a", F, ["rows", 4])], [("y", F, ["rows", 5])], {"w": rand(4, 5), "bias": bias})
    m, _ = run_passes(proto, MatMulAddToGemm)
    if bias_shape == (3, 5):  # rows is symbolic: [3, 5] may not match, so no Gemm
        assert op_types(m) == {"MatMul": 1, "Add": 1}
        return
    assert op_types(m) == {"Gemm": 1}
    assert_equivalent(proto, m, {"a": rand(2, 4, seed=3)})


def test_3d_matmul_and_shared_matmul_output_stay():
    proto = model([node("MatMul", ["a", "w"], ["m"]), node("Add", ["m", "bias"], ["y"]),
                   node("MatMul", ["x2", "w"], ["m2"]), node("Add", ["m2", "bias"], ["y2"]), node("Relu", ["m2"], ["r"])],
                  [("a", F, [2, 3, 4]), ("x2", F, [3, 4])], [("y", F, [2, 3, 5]), ("y2", F, [3, 5]), ("r", F, [3, 5])],
                  {"w": rand(4, 5), "bias": rand(5)})
    m, reports = run_passes(proto, MatMulAddToGemm)
    assert op_types(m) == {"MatMul": 2, "Add": 2, "Relu": 1}


def test_reshape_chain_collapses_unless_second_target_copies_dims():
    proto = model([node("Reshape", ["x", "s1"], ["r1"]), node("Reshape", ["r1", "s2"], ["y"]),
                   node("Reshape", ["x", "s1"], ["q1"]), node("Reshape", ["q1", "s0"], ["z"])],
                  [("x", F, [2, 6])], [("y", F, [3, 4]), ("z", F, [4, 3])],
                  {"s1": np.array([4, 3], np.int64), "s2": np.array([3, -1], np.int64),
                   "s0": np.array([0, 3], np.int64)})
    m, reports = run_passes(proto, ReshapeChainCollapse, DeadNodeElimination)
    assert reports["ReshapeChainCollapse"].counts == {"collapsed": 1}
    assert op_types(m) == {"Reshape": 3}
    assert_equivalent(proto, m, {"x": rand(2, 6)})


def _runtime_target(source: str, data_shape: list, out_shape: list):
    nodes = [node("Shape", [source], ["shape"]),
             node("Gather", ["shape", "i0"], ["d0"], axis=0), node("Unsqueeze", ["d0", "ax"], ["d0v"]),
             node("Gather", ["shape", "i1"], ["d1"], axis=0), node("Unsqueeze", ["d1", "ax"], ["d1v"]),
             node("Concat", ["d0v", "d1v", "tail"], ["target"], axis=0),
             node("Reshape", ["x", "target"], ["y"])]
    inits = {"i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "ax": np.array([0], np.int64),
             "tail": np.array([2, 3], np.int64)}
    return model(nodes, [("x", F, data_shape)] + ([] if source == "x" else [(source, F, ["p", "q"])]),
                 [("y", F, out_shape)], inits)


def test_runtime_reshape_target_from_own_dims_becomes_constant():
    proto = _runtime_target("x", ["b", "s", 6], ["b", "s", 2, 3])
    m, reports = run_passes(proto, ShapeFolding, ReshapeTargetFolding, DeadNodeElimination)
    assert op_types(m) == {"Reshape": 1}
    target = m.graph.initializers[m.graph.nodes[0].inputs[1]]
    assert target.tolist() == [0, 0, 2, 3]
    assert_equivalent(proto, m, {"x": rand(2, 5, 6)})


def test_runtime_target_from_two_foreign_dims_is_kept():
    proto = _runtime_target("other", ["b", "s", 6], ["p", "q", 2, 3])
    m, reports = run_passes(proto, ShapeFolding, ReshapeTargetFolding)
    assert not reports["ReshapeTargetFolding"].changed
    assert op_types(m)["Concat"] == 1


def test_matmul_add_in_a_loop_body_becomes_gemm_from_inferred_body_shapes():
    """The body's MatMul input is computed inside the body (its shape only known from shape
    inference) and its weight and bias come from the outer scope."""
    body = helper.make_graph(
        [node("Gather", ["x", "i"], ["x_t"], axis=0), node("MatMul", ["x_t", "w"], ["m"]),
         node("Add", ["m", "bias"], ["pre"]), node("Add", ["pre", "h"], ["h_next"]),
         node("Identity", ["cond"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond", B, []),
                 helper.make_tensor_value_info("h", F, ["batch", 5])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("h_next", F, ["batch", 5])])
    proto = model([node("Loop", ["trips", "", "h0"], ["h_final"], body=body)],
                  [("x", F, [3, "batch", 4]), ("trips", I64, []), ("h0", F, ["batch", 5])],
                  [("h_final", F, ["batch", 5])], {"w": rand(4, 5), "bias": rand(5, seed=2)})
    m, reports = run_passes(proto, MatMulAddToGemm)
    assert reports["MatMulAddToGemm"].counts == {"fused": 1}
    fused_body = m.graph.nodes[0].attr("body")
    assert [n.op_type for n in fused_body.nodes] == ["Gather", "Gemm", "Add", "Identity"]
    assert_equivalent(proto, m, {"x": rand(3, 2, 4), "trips": np.array(3, np.int64), "h0": rand(2, 5, seed=1)})
