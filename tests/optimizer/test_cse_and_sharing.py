"""Common subexpression elimination and constant sharing."""

from __future__ import annotations

import numpy as np

from onnxplug.optimizer.passes.common_subexpression_elimination import CommonSubexpressionElimination
from onnxplug.optimizer.passes.constant_sharing import ConstantSharing
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from tests.optimizer.util import F, assert_equivalent, model, node, op_types, rand, run_passes


def test_duplicate_nodes_are_merged_including_commuted_inputs():
    proto = model([node("Add", ["x", "b"], ["a1"]), node("Add", ["b", "x"], ["a2"]),  # same, commuted
                   node("Relu", ["a1"], ["r1"]), node("Relu", ["a2"], ["r2"]),
                   node("Mul", ["r1", "r2"], ["y"])],
                  [("x", F, [3]), ("b", F, [3])], [("y", F, [3])])
    m, reports = run_passes(proto, CommonSubexpressionElimination)
    assert op_types(m) == {"Add": 1, "Relu": 1, "Mul": 1}
    assert reports["CommonSubexpressionElimination"].counts == {"merged": 2}
    assert_equivalent(proto, m, {"x": rand(3), "b": rand(3, seed=1)})


def test_different_attributes_random_ops_and_graph_outputs_are_not_merged():
    proto = model([node("LeakyRelu", ["x"], ["l1"], alpha=0.1), node("LeakyRelu", ["x"], ["l2"], alpha=0.2),
                   node("RandomNormalLike", ["x"], ["n1"]), node("RandomNormalLike", ["x"], ["n2"]),
                   node("Neg", ["x"], ["y1"]), node("Neg", ["x"], ["y2"]),
                   node("Sum", ["l1", "l2", "n1", "n2"], ["s"])],
                  [("x", F, [3])], [("s", F, [3]), ("y1", F, [3]), ("y2", F, [3])])
    m, reports = run_passes(proto, CommonSubexpressionElimination)
    assert op_types(m) == {"LeakyRelu": 2, "RandomNormalLike": 2, "Neg": 2, "Sum": 1}
    assert not reports["CommonSubexpressionElimination"].changed


def test_equal_constants_are_shared_so_cse_can_merge_their_readers():
    proto = model([node("Add", ["x", "c1"], ["a1"]), node("Add", ["x", "c2"], ["a2"]),
                   node("Add", ["x", "c3"], ["a3"]), node("Sum", ["a1", "a2", "a3"], ["y"])],
                  [("x", F, [2])], [("y", F, [2])],
                  {"c1": np.array([1, 2], np.float32), "c2": np.array([1, 2], np.float32),
                   "c3": np.array([1, 2], np.float64).astype(np.float32) + np.float32(1e-6)})
    m, reports = run_passes(proto, ConstantSharing, CommonSubexpressionElimination, DeadNodeElimination)
    assert reports["ConstantSharing"].counts == {"shared": 1}  # c3 differs in its last bits
    assert set(m.graph.initializers) == {"c1", "c3"}
    assert op_types(m) == {"Add": 2, "Sum": 1}
    assert_equivalent(proto, m, {"x": rand(2)})
