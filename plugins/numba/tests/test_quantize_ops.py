"""QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on the numba provider (alone, with
CPU fallback off) against onnxruntime, bitwise; what it leaves to numpy is declined with a reason."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import node_model, run_numba, run_onnxruntime
from onnx import TensorProto, helper

import onnxplug as ort

RNG = np.random.default_rng(7)


def _edge_values(x: np.ndarray, scale: float) -> np.ndarray:
    """Halfway quotients (round half to even), saturating values, infinities and a NaN."""
    flat = x.reshape(-1)
    flat[:8] = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1e9, -1e9, np.inf], dtype=np.float32) * np.float32(scale)
    flat[8:10] = [-np.inf, np.nan]
    return x


def _same(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("zp_type", [np.uint8, np.int8])
@pytest.mark.parametrize("axis", [None, 1, 0, -1])
@pytest.mark.parametrize("opset", [13, 19, 21])
def test_quantize_then_dequantize_match_onnxruntime(zp_type, axis, opset):
    shape = (3, 4, 5, 6)
    channels = 1 if axis is None else shape[axis]
    scale = (RNG.random(channels) * 0.2 + 0.01).astype(np.float32)
    zp = RNG.integers(-10 if zp_type == np.int8 else 0, 20, channels).astype(zp_type)
    if axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    x = _edge_values((RNG.standard_normal(shape) * 4).astype(np.float32), float(scale.reshape(-1)[0]))
    attrs = {} if axis is None else {"axis": axis}
    q = node_model("QuantizeLinear", {"x": x}, initializers={"s": scale, "z": zp}, opset=opset, **attrs)
    got, _ = run_numba(q, {"x": x})
    _same(got, run_onnxruntime(q, {"x": x}))
    d = node_model("DequantizeLinear", {"q": got[0]}, initializers={"s": scale, "z": zp}, opset=opset, **attrs)
    _same(run_numba(d, {"q": got[0]})[0], run_onnxruntime(d, {"q": got[0]}))


def test_without_zero_point_and_with_int32_input():
    x = (RNG.standard_normal((2, 50)) * 3).astype(np.float32)
    scale = np.array(0.02, dtype=np.float32)
    q = node_model("QuantizeLinear", {"x": x}, initializers={"s": scale})
    got, _ = run_numba(q, {"x": x})
    assert got[0].dtype == np.uint8
    _same(got, run_onnxruntime(q, {"x": x}))
    # int32 (a quantized bias): the product runs in float64 and is rounded once
    b = RNG.integers(-2**30, 2**30, (7, 9)).astype(np.int32)
    d = node_model("DequantizeLinear", {"b": b}, initializers={"s": np.array(3.3e-4, np.float32),
                                                              "z": np.array(17, np.int32)})
    _same(run_numba(d, {"b": b})[0], run_onnxruntime(d, {"b": b}))


@pytest.mark.parametrize("kind", ["mixed", "positive", "negative", "zeros", "one-element"])
def test_dynamic_quantize_linear_matches_onnxruntime(kind):
    x = {"mixed": RNG.standard_normal((5, 37)) * 3, "positive": np.abs(RNG.standard_normal((4, 16))),
         "negative": -np.abs(RNG.standard_normal((64,))), "zeros": np.zeros((3, 3)),
         "one-element": np.array([[2.5]])}[kind].astype(np.float32)
    model = node_model("DynamicQuantizeLinear", {"x": x}, n_outputs=3, opset=13)
    got, _ = run_numba(model, {"x": x})
    _same(got, run_onnxruntime(model, {"x": x}))


def test_a_large_tensor_split_across_threads_matches():
    x = (RNG.standard_normal((16, 32, 40, 40)) * 2).astype(np.float32)
    scale, zp = np.array(0.03, np.float32), np.array(-3, np.int8)
    q = node_model("QuantizeLinear", {"x": x}, initializers={"s": scale, "z": zp})
    got, _ = run_numba(q, {"x": x}, threads=2)
    _same(got, run_onnxruntime(q, {"x": x}))


@pytest.mark.parametrize("case", ["blocked", "int4", "precision"])
def test_what_numba_leaves_is_declined_with_a_reason_and_runs_on_numpy(case):
    x = (RNG.standard_normal((4, 8)) * 3).astype(np.float32)
    if case == "blocked":
        inits = {"s": (RNG.random((4, 2)) * 0.1 + 0.01).astype(np.float32), "z": np.zeros((4, 2), np.uint8)}
        attrs, opset = {"axis": 1, "block_size": 4}, 21
    elif case == "int4":
        inits = {"s": np.array(0.3, np.float32), "z": None}
        attrs, opset = {"output_dtype": TensorProto.INT4}, 21
    else:
        inits = {"s": np.array(0.3, np.float32), "z": np.array(2, np.uint8)}
        attrs, opset = {"precision": TensorProto.FLOAT}, 23
    model = node_model("QuantizeLinear", {"x": x}, initializers={k: v for k, v in inits.items() if v is not None},
                       opset=opset, **attrs)
    with pytest.raises(Exception, match="QuantizeLinear"):
        run_numba(model, {"x": x})  # fallback off: nothing else may run the node
    got, _ = run_numba(model, {"x": x}, fallback=True)
    if case != "precision" and case != "int4":  # onnxruntime 1.32 runs blocked uint8
        _same(got, run_onnxruntime(model, {"x": x}))
    else:
        from onnx.reference import ReferenceEvaluator

        expected = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_array_equal(np.asarray(got[0]).astype(np.int8), np.asarray(expected[0]).astype(np.int8))


def test_decline_reasons_name_the_cause():
    from onnxplug_numba.ops.op_quantize import DequantizeLinear, QuantizeLinear
    from onnxplug_sdk import GraphView

    x = np.zeros((4, 8), np.float32)
    blocked = node_model("QuantizeLinear", {"x": x}, initializers={"s": np.ones((4, 2), np.float32),
                                                                    "z": np.zeros((4, 2), np.uint8)},
                         opset=21, axis=1, block_size=4)
    half = node_model("DequantizeLinear", {"q": np.zeros((4, 8), np.uint8)},
                      initializers={"s": np.array(0.5, np.float16), "z": np.array(0, np.uint8)}, opset=21)
    from onnxplug.ir.loader import load_model

    for model, kernel, words in ((blocked, QuantizeLinear, "block_size"), (half, DequantizeLinear, "float16")):
        graph = load_model(model.SerializeToString()).graph
        view = GraphView(graph, list(graph.nodes))
        decline = kernel.supports(graph.nodes[0], view)
        assert not decline and words in str(decline)


def _qdq_chain(zp_type: type, per_axis: bool) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """x -> Q -> DQ -> Relu -> (+ skip) -> Q -> DQ, as quantize_static's QDQ format writes
    activations; per-tensor parameters (0-d and 1-element 1-D) or per-channel ones."""
    c = 6
    shape = (2, c, 5, 7)
    s1 = (RNG.random(c) * 0.05 + 0.01).astype(np.float32) if per_axis else np.array(0.031, np.float32)
    z1 = RNG.integers(0, 9, c).astype(zp_type) if per_axis else np.array(3, zp_type)
    s2 = np.array([0.07], np.float32)
    z2 = np.array([1], zp_type)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q1"]),
             helper.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["d1"]),
             helper.make_node("Relu", ["d1"], ["r"]), helper.make_node("Add", ["r", "x"], ["a"]),
             helper.make_node("QuantizeLinear", ["a", "s2", "z2"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s2", "z2"], ["y"])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(v, k) for k, v in
                               (("s1", s1), ("z1", z1), ("s2", s2), ("z2", z2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    x = _edge_values((RNG.standard_normal(shape) * 3).astype(np.float32), float(s1.reshape(-1)[0]))
    return model, {"x": x}


@pytest.mark.parametrize("zp_type", [np.uint8, np.int8])
def test_per_tensor_quantize_dequantize_pairs_join_one_fused_chain(zp_type):
    model, feeds = _qdq_chain(zp_type, per_axis=False)
    got, session = run_numba(model, feeds)
    _same(got, run_onnxruntime(model, feeds))
    assert [s.kind for s in session.engine.plan.steps] == ["fused"]


def test_per_axis_parameters_stay_out_of_chains_and_match():
    model, feeds = _qdq_chain(np.uint8, per_axis=True)
    got, session = run_numba(model, feeds)
    _same(got, run_onnxruntime(model, feeds))
    kinds = [s.kind for s in session.engine.plan.steps]
    assert len(kinds) > 1 and kinds[0] != "fused"  # the per-channel pair runs as its own kernels
