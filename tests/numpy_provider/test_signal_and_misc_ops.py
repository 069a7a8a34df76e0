"""Signal ops (DFT, STFT, windows, MelWeightMatrix), NonMaxSuppression, losses, SwiGLU, TensorScatter,
BitCast and CastMap, against onnxruntime / onnx.reference and the ONNX backend node tests."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug
from tests.numpy_provider.backend_node_cases import cases_for, failures
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, assert_same

RNG = np.random.default_rng(9)


@pytest.mark.parametrize("op", ["DFT", "STFT", "HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix",
                                "NonMaxSuppression", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
                                "SwiGLU", "TensorScatter", "CausalConvWithState", "LinearAttention"])
def test_backend_node_cases(op):
    helpers = frozenset({op, "Constant", "Cast", "CastLike", "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat",
                         "Reshape", "Mul", "Sub", "Add", "Div", "Neg", "Exp", "Log", "ReduceSum", "ReduceMax",
                         "Sigmoid", "LogSoftmax", "Where", "Equal", "Not", "GatherElements", "ReduceMean",
                         "Identity", "ConstantOfShape", "Expand", "OneHot", "Range", "Less", "Greater",
                         "Conv", "Slice", "Pad"})
    cases = cases_for(op, helpers)
    assert cases, f"no backend cases for {op}"
    assert failures(cases) == {}


@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_dft_against_reference(inverse, onesided):
    x = RNG.standard_normal((2, 8, 2 if not onesided or inverse else 1)).astype(np.float32)
    if inverse and onesided:
        x = RNG.standard_normal((2, 5, 2)).astype(np.float32)
    assert_matches_oracle("DFT", {"x": x}, oracle="ref", opset=20, inverse=inverse, onesided=onesided, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("score_threshold", [None, 0.3])
def test_non_max_suppression_random_boxes(center_point_box, score_threshold):
    corners = RNG.uniform(0, 10, size=(2, 60, 4)).astype(np.float32)
    if center_point_box:
        corners[..., 2:] = np.abs(corners[..., 2:]) / 2 + 0.5
    feeds = {"boxes": corners, "scores": RNG.random((2, 3, 60)).astype(np.float32),
             "max": np.array([7], np.int64), "iou": np.array([0.4], np.float32)}
    if score_threshold is not None:
        feeds["score"] = np.array([score_threshold], np.float32)
    (ours,) = assert_matches_oracle("NonMaxSuppression", feeds, oracle="ort", opset=11, center_point_box=center_point_box)
    assert ours.dtype == np.int64 and ours.shape[1] == 3


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_against_onnxruntime(reduction, weighted):
    scores = RNG.standard_normal((4, 5, 3)).astype(np.float32)
    labels = RNG.integers(0, 5, size=(4, 3)).astype(np.int64)
    labels[0, 0] = -1
    feeds = {"x": scores, "t": labels}
    if weighted:
        feeds["w"] = RNG.random(5).astype(np.float32)
    assert_matches_oracle("SoftmaxCrossEntropyLoss", feeds, oracle="ort", n_outputs=2, opset=13, reduction=reduction,
          ignore_index=-1, rtol=1e-5, atol=1e-5)
    logp = np.log(np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)).astype(np.float32)
    assert_matches_oracle("NegativeLogLikelihoodLoss", {**feeds, "x": logp}, oracle="ort", opset=13, reduction=reduction,
          ignore_index=-1)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_axis_2_of_4d_cache(mode):
    cache = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    update = RNG.standard_normal((2, 3, 3, 4)).astype(np.float32)
    assert_matches_oracle("TensorScatter", {"c": cache, "u": update, "i": np.array([1, 5 if mode == "circular" else 3], np.int64)},
          oracle="ref", opset=24, mode=mode, axis=2)


def test_swiglu_float16_and_bitcast():
    a, b = RNG.standard_normal((3, 8)).astype(np.float16), RNG.standard_normal((3, 8)).astype(np.float16)
    assert_matches_oracle("SwiGLU", {"a": a, "b": b}, oracle="ref", opset=28, alpha=1.5, rtol=2e-3, atol=2e-3)
    (y,) = assert_matches_oracle("BitCast", {"x": np.array([1.0, -2.5], np.float32)}, oracle="ref", opset=26, to=TensorProto.INT32)
    assert y.dtype == np.int32


@pytest.mark.parametrize("cast_to,map_form", [("TO_FLOAT", "DENSE"), ("TO_INT64", "DENSE"), ("TO_STRING", "DENSE"),
                                              ("TO_FLOAT", "SPARSE"), ("TO_INT64", "SPARSE")])
def test_cast_map_against_onnxruntime(cast_to, map_form):
    out_type = {"TO_FLOAT": TensorProto.FLOAT, "TO_INT64": TensorProto.INT64, "TO_STRING": TensorProto.STRING}[cast_to]
    node = helper.make_node("CastMap", ["x"], ["y"], domain="ai.onnx.ml", cast_to=cast_to, map_form=map_form, max_map=6)
    map_type = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    graph = helper.make_graph([node], "g", [helper.make_value_info("x", map_type)],
                              [helper.make_tensor_value_info("y", out_type, [1, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                              ir_version=8)
    feeds = {"x": {4: 2.75, 1: -1.5, 0: 3.0}}
    (ours,) = onnxplug.InferenceSession(model.SerializeToString(), providers=["numpy"]).run(None, feeds)
    (expected,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    assert_same(ours, expected, where="CastMap")
