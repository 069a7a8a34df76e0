"""What the provider claims on sample graphs (no device needed: claiming never touches the GPU).

Expected claims are written by hand from ONNX semantics and the documented op families
(docs/providers/cupy.md), never read back from the provider's tables.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnxplug.ir import load_model
from onnxplug_sdk import GraphView

from onnxplug_cupy.provider import CupyProvider

F = TensorProto.FLOAT


def claims(nodes: Sequence[onnx.NodeProto], inputs: dict[str, tuple[int, list]], outputs: Sequence[str],
           inits: dict[str, np.ndarray] | None = None, opset: int = 17, offered: Sequence[str] | None = None,
           **options: Any) -> tuple[list[tuple[str, ...]], list[str]]:
    """(fused groups as op-type tuples, names of nodes claimed alone) of a fresh provider."""
    graph = helper.make_graph(
        list(nodes), "g", [helper.make_tensor_value_info(k, t, s) for k, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = onnx.shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8))
    g = load_model(model.SerializeToString()).graph
    view_nodes = [n for n in g.nodes if offered is None or n.name in offered]
    found = CupyProvider(options).get_capability(GraphView(g, view_nodes))
    fused = [tuple(n.op_type for n in c.nodes) for c in found if c.fused]
    single = [c.nodes[0].name for c in found if not c.fused]
    return fused, single


def mlp(x_type: int = F) -> tuple[list, dict, list, dict]:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(x_type)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Add", ["h", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "s"], ["y"], name="mul")]
    inits = {"w": np.ones((4, 3), dtype), "b": np.ones(3, dtype), "s": np.ones(3, dtype)}
    return nodes, {"x": (x_type, [2, 4])}, ["y"], inits


def test_elementwise_chain_is_fused_and_matmul_claimed_alone() -> None:
    fused, single = claims(*mlp())
    assert fused == [("Add", "Relu", "Mul")]
    assert single == ["matmul"]


def test_fusion_can_be_switched_off() -> None:
    fused, single = claims(*mlp(), fuse_elementwise="0")
    assert fused == []
    assert single == ["matmul", "add", "relu", "mul"]


def test_float16_nodes_are_claimed_one_by_one_not_fused() -> None:
    fused, single = claims(*mlp(TensorProto.FLOAT16))
    assert fused == []
    assert single == ["matmul", "add", "relu", "mul"]


def test_only_offered_nodes_are_claimed() -> None:
    nodes, inputs, outputs, inits = mlp()
    fused, single = claims(nodes, inputs, outputs, inits, offered=["matmul", "relu"])
    assert fused == [] and single == ["matmul", "relu"]


def test_ops_outside_the_families_or_types_are_left_to_other_providers() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Cast", ["r"], ["bf"], to=TensorProto.BFLOAT16, name="cast_bf16"),  # no bfloat16 on CuPy
        helper.make_node("Identity", ["txt"], ["txt_out"], name="identity_string"),  # strings stay on the host
        helper.make_node("Resize", ["x", "", "scales"], ["big"], mode="nearest", name="resize"),  # not implemented
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),  # data-dependent shape, not implemented
    ]
    fused, single = claims(nodes, {"x": (F, [1, 1, 2, 2]), "txt": (TensorProto.STRING, [2])},
                           ["bf", "txt_out", "big", "nz"],
                           {"scales": np.array([1, 1, 2, 2], np.float32)})
    assert fused == [] and single == ["relu"]


def test_attribute_and_output_restrictions() -> None:
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p1"], kernel_shape=[2, 2], name="maxpool"),
        helper.make_node("MaxPool", ["x"], ["p2", "idx"], kernel_shape=[2, 2], name="maxpool_with_indices"),
        helper.make_node("Dropout", ["x", "ratio", "train"], ["d"], name="dropout_training_input"),
        helper.make_node("Dropout", ["x"], ["d2"], name="dropout_inference"),
        helper.make_node("Pad", ["x", "pads"], ["pd"], mode="reflect", name="pad_reflect"),
        helper.make_node("BatchNormalization", ["x", "c", "c", "c", "c"], ["bn"], name="bn"),
        helper.make_node("BatchNormalization", ["x", "c", "c", "c", "c"], ["bn2", "m", "v"],
                         training_mode=1, name="bn_training"),
    ]
    inits = {"ratio": np.array(0.5, np.float32), "train": np.array(True), "pads": np.zeros(8, np.int64),
             "c": np.ones(1, np.float32)}
    fused, single = claims(nodes, {"x": (F, [1, 1, 4, 4])}, ["p1", "p2", "idx", "d", "d2", "pd", "bn", "bn2", "m", "v"],
                           inits, opset=17)
    assert fused == []
    assert single == ["maxpool", "dropout_inference", "pad_reflect", "bn"]


def test_recurrent_ops_only_with_their_default_activations_and_no_clip() -> None:
    w, r = np.ones((1, 8, 3), np.float32), np.ones((1, 8, 2), np.float32)
    nodes = [helper.make_node("LSTM", ["x", "w", "r"], ["y1"], hidden_size=2, name="lstm"),
             helper.make_node("LSTM", ["x", "w", "r"], ["y2"], hidden_size=2, clip=1.0, name="lstm_clip"),
             helper.make_node("LSTM", ["x", "w", "r"], ["y3"], hidden_size=2, name="lstm_relu",
                              activations=["Relu", "Tanh", "Tanh"])]
    fused, single = claims(nodes, {"x": (F, [5, 1, 3])}, ["y1", "y2", "y3"], {"w": w, "r": r})
    assert single == ["lstm"]


def test_elementwise_dtype_rules() -> None:
    i32 = TensorProto.INT32
    nodes = [helper.make_node("Div", ["a", "b"], ["div"], name="int_div"),  # C truncation is ONNX's
             helper.make_node("Mod", ["a", "b"], ["mod"], name="int_mod"),
             helper.make_node("Pow", ["a", "b"], ["pow"], name="int_pow"),  # not claimed: float only
             helper.make_node("Pow", ["f", "a"], ["fpow"], name="float_pow_int_exponent"),
             helper.make_node("Neg", ["u"], ["neg"], name="unsigned_neg"),  # Neg is for signed types
             helper.make_node("BitShift", ["u", "u"], ["sh"], direction="LEFT", name="shift")]
    fused, single = claims(nodes, {"a": (i32, [3]), "b": (i32, [3]), "f": (F, [3]),
                                   "u": (TensorProto.UINT8, [3])},
                           ["div", "mod", "pow", "fpow", "neg", "sh"], fuse_elementwise=False, opset=18)
    assert fused == []
    assert single == ["int_div", "int_mod", "float_pow_int_exponent", "shift"]


def test_chain_members_can_mix_integer_and_bool_values() -> None:
    nodes = [helper.make_node("Greater", ["x", "t"], ["mask"], name="gt"),
             helper.make_node("Where", ["mask", "x", "z"], ["w"], name="where"),
             helper.make_node("Cast", ["w"], ["y"], to=TensorProto.INT64, name="cast")]
    fused, single = claims(nodes, {"x": (F, [2, 3]), "t": (F, [1]), "z": (F, [3])}, ["y"])
    assert fused == [("Greater", "Where")]
    assert single == ["cast"]


def test_control_flow_is_not_claimed() -> None:
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "then", [],
                             [helper.make_tensor_value_info("o", F, [2])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=then, name="if")]
    fused, single = claims(nodes, {"c": (TensorProto.BOOL, []), "x": (F, [2])}, ["y"])
    assert fused == [] and single == []
