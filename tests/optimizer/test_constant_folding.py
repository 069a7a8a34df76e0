"""ConstantFolding and ShapeFolding: what becomes a constant, and what must stay computed."""

from __future__ import annotations

import numpy as np

from onnxplug.optimizer.passes.constant_folding import ConstantFolding
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.passes.shape_folding import ShapeFolding
from tests.optimizer.util import F, assert_equivalent, const, model, node, op_types, rand, run_passes


def test_constant_subgraph_is_folded_into_an_initializer():
    w = rand(4, 4)
    proto = model([const("two", 2.0), node("Mul", ["w", "two"], ["w2"]), node("Transpose", ["w2"], ["wt"], perm=[1, 0]),
                   node("MatMul", ["x", "wt"], ["y"])],
                  [("x", F, [3, 4])], [("y", F, [3, 4])], {"w": w})
    m, reports = run_passes(proto, ConstantFolding, DeadNodeElimination)
    assert op_types(m) == {"MatMul": 1}
    assert reports["ConstantFolding"].counts == {"constants": 1, "folded": 2}
    np.testing.assert_allclose(m.graph.initializers["wt"], (w * 2).T)
    assert_equivalent(proto, m, {"x": rand(3, 4)})


def test_nodes_reading_inputs_random_ops_and_graph_outputs_are_not_folded():
    proto = model([node("Add", ["x", "c"], ["a"]),  # reads a graph input
                   node("RandomNormal", [], ["r"], shape=[2], seed=1.0),
                   node("Neg", ["c"], ["y"])],  # all constant, but its output is a graph output
                  [("x", F, [2])], [("a", F, [2]), ("r", F, [2]), ("y", F, [2])], {"c": np.ones(2, np.float32)})
    m, reports = run_passes(proto, ConstantFolding)
    assert op_types(m) == {"Add": 1, "RandomNormal": 1, "Neg": 1}
    assert not reports["ConstantFolding"].changed


def test_overridable_initializer_is_not_treated_as_constant():
    proto = model([node("Neg", ["c"], ["n"]), node("Add", ["x", "n"], ["y"])],
                  [("x", F, [2]), ("c", F, [2])], [("y", F, [2])], {"c": np.ones(2, np.float32)})
    m, _ = run_passes(proto, ConstantFolding)
    assert op_types(m) == {"Neg": 1, "Add": 1}


def test_results_that_would_grow_the_model_are_not_folded():
    proto = model([node("ConstantOfShape", ["shape"], ["big"], value=__import__("onnx").numpy_helper.from_array(
                       np.ones(1, np.float32))),
                   node("Add", ["x", "big"], ["y"])],
                  [("x", F, [512, 512])], [("y", F, [512, 512])], {"shape": np.array([512, 512], np.int64)})
    m, _ = run_passes(proto, ConstantFolding)
    assert "ConstantOfShape" in op_types(m)


def test_shape_of_static_value_and_static_dims_of_dynamic_value_are_folded():
    proto = model([node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["d1"], axis=0),
                   node("Gather", ["s", "zero"], ["d0"], axis=0),  # the dynamic batch: stays
                   node("Unsqueeze", ["d1", "axes"], ["d1v"]), node("Unsqueeze", ["d0", "axes"], ["d0v"]),
                   node("Concat", ["d0v", "d1v"], ["shape"], axis=0),
                   node("Reshape", ["x", "shape"], ["y"]),
                   node("Shape", ["w"], ["ws"]), node("Cast", ["ws"], ["wsf"], to=F),
                   node("Add", ["wsf", "z"], ["y2"])],
                  [("x", F, ["batch", 6]), ("z", F, [2])], [("y", F, ["batch", 6]), ("y2", F, [2])],
                  {"one": np.array(1, np.int64), "zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
                   "w": np.zeros((3, 5), np.float32)})
    m, reports = run_passes(proto, ShapeFolding, ConstantFolding, DeadNodeElimination)
    counts = op_types(m)
    assert counts["Shape"] == 1 and counts["Gather"] == 1 and "Cast" not in counts
    assert reports["ShapeFolding"].counts == {"shapes": 1, "dims": 1}
    assert_equivalent(proto, m, {"x": rand(2, 6), "z": rand(2)})


def test_dynamic_dims_are_not_folded():
    proto = model([node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["d0"], axis=0),
                   node("Cast", ["d0"], ["y"], to=F)],
                  [("x", F, ["batch", 6])], [("y", F, [])], {"zero": np.array(0, np.int64)})
    m, reports = run_passes(proto, ShapeFolding, ConstantFolding)
    assert op_types(m) == {"Shape": 1, "Gather": 1, "Cast": 1}
    assert not reports["ShapeFolding"].changed
