"""com.microsoft GridSample, UnfoldTensor and ConvTransposeWithDynamicPads against onnxruntime; BiasAdd
and BiasSplitGelu, which onnxruntime runs on CUDA only, against onnxruntime's CPU run of the same
computation in ai.onnx ops (Add; Add, Split, Gelu, Mul)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run
from tests.numpy_provider.single_node_oracle import assert_same
from tests.oracle import ort_outputs

RNG = np.random.default_rng(131)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample(mode, padding_mode, align_corners):
    if mode == "bicubic" and padding_mode == "border":
        pytest.skip("onnxruntime clamps bicubic taps otherwise than the onnx spec (and this kernel) there")
    feeds = {"x": _r(2, 3, 5, 6), "grid": (RNG.uniform(-1.2, 1.2, (2, 4, 3, 2))).astype(np.float32)}
    assert_ms_matches("GridSample", feeds, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


@pytest.mark.parametrize("dim,size,step", [(-1, 3, 1), (-1, 2, 2), (1, 4, 3), (0, 1, 1)])
def test_unfold_tensor(dim, size, step):
    assert_ms_matches("UnfoldTensor", {"x": _r(3, 7, 6)}, dim=dim, size=size, step=step)


@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 0, 2, 1]])  # onnxruntime wants the input
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose_with_dynamic_pads(pads, bias):
    feeds = {"x": _r(1, 3, 5, 4), "w": _r(3, 2, 3, 3), "pads": np.array(pads, np.int64),
             "b": _r(2) if bias else None}
    assert_ms_matches("ConvTransposeWithDynamicPads", feeds, strides=[2, 2])


def _standard_model(nodes, inputs, output_shape):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
                                           for n, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def test_bias_add():
    feeds = {"x": _r(2, 5, 8), "bias": _r(8), "skip": _r(2, 5, 8)}
    reference = _standard_model([helper.make_node("Add", ["x", "bias"], ["t"]), helper.make_node("Add", ["t", "skip"], ["y"])],
                                feeds, [2, 5, 8])
    expected = ort_outputs(reference, feeds)
    ours = ours_run(ms_model("BiasAdd", feeds), feeds, expected)
    assert_same(ours[0], expected[0], 1e-6, 1e-6, "BiasAdd")


def test_bias_split_gelu():
    feeds = {"x": _r(2, 5, 16), "bias": _r(16)}
    nodes = [helper.make_node("Add", ["x", "bias"], ["t"]),
             helper.make_node("Split", ["t"], ["left", "right"], axis=-1, num_outputs=2),
             helper.make_node("Gelu", ["right"], ["g"]), helper.make_node("Mul", ["left", "g"], ["y"])]
    expected = ort_outputs(_standard_model(nodes, feeds, [2, 5, 8]), feeds)
    ours = ours_run(ms_model("BiasSplitGelu", feeds), feeds, expected)
    assert_same(ours[0], expected[0], 1e-5, 1e-6, "BiasSplitGelu")
