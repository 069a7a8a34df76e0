"""Identity, Dropout, no-op, Unsqueeze/Squeeze-pair and dead-node elimination."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto
import pytest

from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.passes.dropout_elimination import DropoutElimination
from onnxplug.optimizer.passes.identity_elimination import IdentityElimination
from onnxplug.optimizer.passes.noop_elimination import NoOpElimination
from onnxplug.optimizer.passes.unsqueeze_squeeze_elimination import UnsqueezeSqueezeElimination
from tests.optimizer.util import F, assert_equivalent, model, node, op_types, rand, run_passes


def test_identity_is_removed_even_before_a_graph_output():
    proto = model([node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["i"]), node("Neg", ["i"], ["n"]),
                   node("Identity", ["n"], ["y"])], [("x", F, [3])], [("y", F, [3])])
    m, _ = run_passes(proto, IdentityElimination)
    assert op_types(m) == {"Relu": 1, "Neg": 1}
    assert m.graph.nodes[-1].outputs == ["y"]  # Neg now computes the graph output itself
    assert_equivalent(proto, m, {"x": rand(3)})


def test_identity_between_graph_input_and_output_or_two_outputs_stays():
    proto = model([node("Identity", ["x"], ["y"]), node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["z"])],
                  [("x", F, [3])], [("y", F, [3]), ("r", F, [3]), ("z", F, [3])])
    m, _ = run_passes(proto, IdentityElimination)
    assert op_types(m) == {"Identity": 2, "Relu": 1}


def test_inference_dropout_is_removed():
    proto = model([node("Dropout", ["x", "ratio"], ["d"]), node("Relu", ["d"], ["y"])],
                  [("x", F, [4])], [("y", F, [4])], {"ratio": np.array(0.5, np.float32)})
    m, _ = run_passes(proto, DropoutElimination)
    assert op_types(m) == {"Relu": 1}
    assert_equivalent(proto, m, {"x": rand(4)})


@pytest.mark.parametrize("case", ["mask_used", "training"])
def test_dropout_with_used_mask_or_training_mode_stays(case):
    if case == "mask_used":
        nodes = [node("Dropout", ["x"], ["d", "mask"]), node("Cast", ["mask"], ["m"], to=F),
                 node("Add", ["d", "m"], ["y"])]
        inits = {}
    else:
        nodes = [node("Dropout", ["x", "ratio", "train"], ["d"]), node("Relu", ["d"], ["y"])]
        inits = {"ratio": np.array(0.5, np.float32), "train": np.array(True)}
    m, _ = run_passes(model(nodes, [("x", F, [4])], [("y", F, [4])], inits), DropoutElimination)
    assert op_types(m)["Dropout"] == 1


NOOPS = {
    "Cast": ([node("Cast", ["x"], ["n"], to=F)], {}),
    "Reshape": ([node("Reshape", ["x", "shape"], ["n"])], {"shape": np.array([0, -1], np.int64)}),
    "Transpose": ([node("Transpose", ["x"], ["n"], perm=[0, 1])], {}),
    "Pad": ([node("Pad", ["x", "pads"], ["n"])], {"pads": np.zeros(4, np.int64)}),
    "Slice": ([node("Slice", ["x", "starts", "ends", "axes"], ["n"])],
              {"starts": np.array([0], np.int64), "ends": np.array([2**62], np.int64), "axes": np.array([1], np.int64)}),
    "Expand": ([node("Expand", ["x", "shape"], ["n"])], {"shape": np.array([1, 6], np.int64)}),
}
NOT_NOOPS = {
    "Cast": ([node("Cast", ["x"], ["n"], to=TensorProto.DOUBLE), node("Cast", ["n"], ["n2"], to=F)], {}),
    "Reshape": ([node("Reshape", ["x", "shape"], ["n"])], {"shape": np.array([-1, 3], np.int64)}),
    "Transpose": ([node("Transpose", ["x"], ["n0"], perm=[1, 0]), node("Transpose", ["n0"], ["n"], perm=[1, 0])], {}),
    "Pad": ([node("Pad", ["x", "pads"], ["p"]), node("Slice", ["p", "s", "e", "a"], ["n"])],
            {"pads": np.array([0, 1, 0, 0], np.int64), "s": np.array([1], np.int64),
             "e": np.array([7], np.int64), "a": np.array([1], np.int64)}),
    "Slice": ([node("Slice", ["x", "starts", "ends", "axes"], ["s"]), node("Pad", ["s", "pads"], ["n"])],
              {"starts": np.array([1], np.int64), "ends": np.array([6], np.int64), "axes": np.array([1], np.int64),
               "pads": np.array([0, 1, 0, 0], np.int64)}),
    "Expand": ([node("Expand", ["x", "shape"], ["e"]), node("ReduceSum", ["e", "ax"], ["n"], keepdims=0)],
               {"shape": np.array([2, 1, 6], np.int64), "ax": np.array([0], np.int64)}),
}


@pytest.mark.parametrize("op", sorted(NOOPS))
def test_noop_is_removed_and_a_real_one_stays(op):
    nodes, inits = NOOPS[op]
    proto = model([*nodes, node("Relu", ["n"], ["y"])], [("x", F, ["batch", 6])], [("y", F, ["batch", 6])], inits)
    m, reports = run_passes(proto, NoOpElimination)
    assert op_types(m) == {"Relu": 1}, reports
    assert_equivalent(proto, m, {"x": rand(2, 6)})

    nodes, inits = NOT_NOOPS[op]
    proto = model([*nodes, node("Relu", ["n"], ["y"])], [("x", F, [2, 6])], [("y", F, ["d0", "d1"])], inits)
    m, _ = run_passes(proto, NoOpElimination)
    assert op in op_types(m)


def test_reshape_of_dynamic_shape_to_static_target_stays():
    proto = model([node("Reshape", ["x", "shape"], ["y"])], [("x", F, ["a", "b"])], [("y", F, [2, 6])],
                  {"shape": np.array([2, 6], np.int64)})
    m, _ = run_passes(proto, NoOpElimination)
    assert op_types(m) == {"Reshape": 1}


def test_unsqueeze_squeeze_pairs_cancel_on_equal_axes_only():
    proto = model([node("Unsqueeze", ["x", "a1"], ["u"]), node("Squeeze", ["u", "a1neg"], ["s"]),  # cancels
                   node("Unsqueeze", ["s", "a1"], ["u2"]), node("Squeeze", ["u2", "a0"], ["y"])],  # other axis: stays
                  [("x", F, [1, 3])], [("y", F, [1, 3])],
                  {"a1": np.array([1], np.int64), "a1neg": np.array([-2], np.int64), "a0": np.array([0], np.int64)})
    m, reports = run_passes(proto, UnsqueezeSqueezeElimination, DeadNodeElimination)
    assert reports["UnsqueezeSqueezeElimination"].counts == {"pairs": 1}
    assert op_types(m) == {"Unsqueeze": 1, "Squeeze": 1}
    assert_equivalent(proto, m, {"x": rand(1, 3)})


def test_dead_nodes_and_unused_initializers_are_removed_but_subgraph_reads_are_kept():
    from onnx import helper

    then_g = helper.make_graph([node("Add", ["x", "w_if"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [2])])
    else_g = helper.make_graph([node("Sub", ["x", "w_if"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [2])])
    proto = model([node("Neg", ["x"], ["unused"]), node("Exp", ["unused"], ["unused2"]),
                   node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                  [("x", F, [2]), ("cond", 9, [])], [("y", F, [2])],
                  {"w_if": np.ones(2, np.float32), "w_dead": np.ones(2, np.float32)})
    m, reports = run_passes(proto, DeadNodeElimination)
    assert op_types(m) == {"If": 1}
    assert set(m.graph.initializers) == {"w_if"}
    assert reports["DeadNodeElimination"].counts == {"nodes": 2, "initializers": 1}
    assert_equivalent(proto, m, {"x": rand(2), "cond": np.array(True)})
