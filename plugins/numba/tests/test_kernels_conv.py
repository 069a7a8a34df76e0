"""Conv, ConvTranspose and the pools against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from numba_test_helpers import assert_matches_onnxruntime, node_model

CONV_CASES = [
    # (input shape, weight shape, attributes)
    ((1, 3, 9, 9), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 4, 10, 8), (6, 2, 3, 3), {"group": 2, "strides": [2, 1], "pads": [1, 0, 0, 1]}),
    ((1, 6, 11, 11), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1], "strides": [2, 2]}),  # depthwise
    ((1, 4, 9, 9), (8, 1, 3, 3), {"group": 4, "dilations": [2, 2]}),  # depthwise, channel multiplier 2
    ((1, 5, 7, 7), (3, 5, 1, 1), {}),  # pointwise
    ((1, 3, 10, 10), (2, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 10, 10), (2, 3, 4, 4), {"auto_pad": "SAME_LOWER"}),
    ((1, 3, 10, 10), (2, 3, 3, 2), {"auto_pad": "VALID", "dilations": [2, 1]}),
    ((2, 3, 12), (4, 3, 3), {"pads": [2, 1], "strides": [2]}),  # 1-D
    # large enough for the pitched im2col over a padded image
    ((2, 4, 40, 36), (6, 4, 3, 3), {"pads": [1, 1, 1, 1]}),
    # large enough to be shared across threads (row bands of one image): pitched, im2col, pointwise
    ((1, 64, 40, 40), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 64, 64, 64), (128, 64, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 96, 48, 48), (576, 96, 1, 1), {}),
    ((1, 4, 40, 40), (4, 2, 3, 3), {"pads": [2, 1, 0, 2], "dilations": [2, 2], "group": 2}),
    # depthwise 3x3 with rows of 8+ outputs: the register-summed row kernel (step 1, step 2 over
    # even/odd columns, dilation, uneven pads, channel multiplier), and step 2 with dilation
    ((2, 3, 20, 23), (3, 1, 3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),
    ((1, 3, 33, 34), (3, 1, 3, 3), {"group": 3, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 3, 34, 35), (3, 1, 3, 3), {"group": 3, "pads": [0, 1, 1, 0], "strides": [1, 2]}),
    ((1, 2, 24, 26), (4, 1, 3, 3), {"group": 2, "dilations": [2, 3], "pads": [2, 2, 1, 3]}),
    ((1, 2, 40, 41), (2, 1, 3, 3), {"group": 2, "dilations": [1, 2], "strides": [2, 2]}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv(rng, x_shape, w_shape, attrs, with_bias):
    x = rng.standard_normal(x_shape).astype(np.float32)
    init = {"w": rng.standard_normal(w_shape).astype(np.float32)}
    if with_bias:
        init["b"] = rng.standard_normal(w_shape[0]).astype(np.float32)
    assert_matches_onnxruntime(node_model("Conv", {"x": x}, initializers=init, **attrs), {"x": x})


@pytest.mark.parametrize("attrs", [
    {}, {"strides": [2, 2]}, {"strides": [2, 2], "output_padding": [1, 1]}, {"pads": [1, 1, 1, 1]},
    {"group": 2}, {"dilations": [2, 2]}, {"strides": [2, 2], "output_shape": [10, 9]},
    {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
])
def test_conv_transpose(rng, attrs):
    x = rng.standard_normal((1, 4, 5, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(3 * attrs.get("group", 1)).astype(np.float32)
    if attrs.get("group"):
        w = w[:, :3]
    assert_matches_onnxruntime(node_model("ConvTranspose", {"x": x}, initializers={"w": w, "b": b}, **attrs), {"x": x})


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [2, 2], "dilations": [2, 2]},
])
def test_pool(rng, op, attrs):
    if op == "MaxPool":
        attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    assert_matches_onnxruntime(node_model(op, {"x": x}, opset=19, **attrs), {"x": x})


def test_pool_1d(rng):
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    assert_matches_onnxruntime(node_model("MaxPool", {"x": x}, kernel_shape=[3], strides=[2], pads=[1, 1]), {"x": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(rng, op):
    x = rng.standard_normal((2, 5, 6, 7)).astype(np.float32)
    assert_matches_onnxruntime(node_model(op, {"x": x}), {"x": x})
