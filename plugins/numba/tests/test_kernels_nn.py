"""MatMul/Gemm, normalisations, softmax, reductions, Resize and recurrences against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from numba_test_helpers import assert_matches_onnxruntime, node_model


@pytest.mark.parametrize("a_shape,b_shape", [((4, 5), (5, 3)), ((2, 3, 4, 5), (5, 6)), ((2, 1, 4, 5), (3, 5, 2)),
                                             ((5,), (5, 3)), ((3, 4, 5), (5,))])
def test_matmul(rng, a_shape, b_shape):
    feeds = {"a": rng.standard_normal(a_shape).astype(np.float32), "b": rng.standard_normal(b_shape).astype(np.float32)}
    assert_matches_onnxruntime(node_model("MatMul", feeds), feeds)


@pytest.mark.parametrize("attrs,c_shape", [({}, (3,)), ({"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, (4, 3)),
                                           ({"beta": 0.0}, (1, 3)), ({}, None)])
def test_gemm(rng, attrs, c_shape):
    a = rng.standard_normal((5, 4) if attrs.get("transA") else (4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5) if attrs.get("transB") else (5, 3)).astype(np.float32)
    feeds = {"a": a, "b": b}
    if c_shape:
        feeds["c"] = rng.standard_normal(c_shape).astype(np.float32)
    assert_matches_onnxruntime(node_model("Gemm", feeds, **attrs), feeds)


@pytest.mark.parametrize("activation,params", [("Relu", []), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.5]),
                                               ("Sigmoid", []), ("Tanh", []), ("HardSigmoid", [0.3, 0.4])])
def test_fused_conv_and_gemm_match_onnxruntime_contrib_ops(rng, activation, params):
    x = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
    init = {"w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "b": rng.standard_normal(4).astype(np.float32)}
    extra = {"activation_params": params} if params else {}
    model = node_model("FusedConv", {"x": x}, initializers=init, domain="com.microsoft", pads=[1, 1, 1, 1],
                       activation=activation, **extra)
    assert_matches_onnxruntime(model, {"x": x})
    if activation == "Clip":  # onnxruntime's FusedGemm has no Clip
        return
    a = rng.standard_normal((4, 5)).astype(np.float32)
    gemm_attrs = {"activation": activation}
    if params:
        gemm_attrs["activation_alpha"] = params[0]
    if len(params) > 1:
        gemm_attrs["activation_beta"] = params[1]
    model = node_model("FusedGemm", {"a": a}, initializers={"b": rng.standard_normal((5, 3)).astype(np.float32)},
                       domain="com.microsoft", **gemm_attrs)
    assert_matches_onnxruntime(model, {"a": a})


def test_batch_normalization(rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    init = {"s": rng.standard_normal(3).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32),
            "m": rng.standard_normal(3).astype(np.float32), "v": rng.random(3).astype(np.float32) + 0.5}
    assert_matches_onnxruntime(node_model("BatchNormalization", {"x": x}, initializers=init, epsilon=1e-3), {"x": x})


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_normalization(rng, axis):
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    tail = x.shape[axis:] if axis >= 0 else x.shape[axis:]
    init = {"s": rng.standard_normal(tail).astype(np.float32), "b": rng.standard_normal(tail).astype(np.float32)}
    assert_matches_onnxruntime(node_model("LayerNormalization", {"x": x}, 3, initializers=init, axis=axis), {"x": x})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("axis,opset", [(-1, 13), (1, 13), (0, 13), (1, 11)])
def test_softmax(rng, op, axis, opset):
    x = (rng.standard_normal((3, 4, 5)) * 4).astype(np.float32)
    assert_matches_onnxruntime(node_model(op, {"x": x}, opset=opset, axis=axis), {"x": x})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), ([-1], 1), (None, 0), ([1, 2], 1)])
def test_reductions(rng, op, axes, keepdims):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    init = {"axes": np.array(axes, dtype=np.int64)} if axes is not None else {}
    assert_matches_onnxruntime(node_model(op, {"x": x}, initializers=init, opset=18, keepdims=keepdims), {"x": x})


@pytest.mark.parametrize("attrs,scales", [
    ({"mode": "nearest"}, [1, 1, 2, 3]),
    ({"mode": "linear"}, [1, 1, 1.5, 0.5]),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2, 2]),
    ({"mode": "cubic"}, [1, 1, 1.7, 2]),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, [1, 1, 2.5, 2]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, [1, 1, 0.6, 3]),
])
def test_resize(rng, attrs, scales):
    x = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    init = {"roi": np.zeros(0, np.float32), "scales": np.array(scales, dtype=np.float32)}
    assert_matches_onnxruntime(node_model("Resize", {"x": x}, initializers=init, **attrs), {"x": x})


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent(rng, op, direction):
    gates, hidden, dirs = (4 if op == "LSTM" else 3), 5, (2 if direction == "bidirectional" else 1)
    x = rng.standard_normal((6, 2, 3)).astype(np.float32)
    init = {"w": rng.standard_normal((dirs, gates * hidden, 3)).astype(np.float32) * 0.5,
            "r": rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32) * 0.5,
            "b": rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32) * 0.5}
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    model = node_model(op, {"x": x}, 3 if op == "LSTM" else 2, initializers=init, hidden_size=hidden,
                       direction=direction, **extra)
    assert_matches_onnxruntime(model, {"x": x})
