"""Conv / Gemm / MatMul + activation fusions, and the provider check every fusion makes."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.optimizer.passes.conv_activation_fusion import ConvActivationFusion
from onnxplug.optimizer.passes.gemm_activation_fusion import GemmActivationFusion
from onnxplug.providers.numpy import NumpyProvider
from tests.optimizer.providers import PickyProvider
from tests.optimizer.util import F, assert_equivalent, model, node, op_types, rand, run_passes

X = ("x", F, ["n", 3, 6, 6])
Y = ("y", F, ["n", 4, 6, 6])
CONV_INITS = {"w": rand(4, 3, 3, 3), "b": rand(4, seed=1)}
ACTIVATIONS = [
    ("Relu", {}, {}), ("Sigmoid", {}, {}), ("Tanh", {}, {}), ("LeakyRelu", {"alpha": 0.2}, {}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, {}),
    ("Clip", {}, {"lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}),
]


@pytest.mark.parametrize("act, attrs, inits", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_conv_activation_becomes_fused_conv(act, attrs, inits):
    inputs = ["c", "lo", "hi"] if act == "Clip" else ["c"]
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node(act, inputs, ["y"], **attrs)],
                  [X], [Y], {**CONV_INITS, **inits})
    m, _ = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}
    fused = m.graph.nodes[0]
    assert fused.attr("activation") == act
    assert_equivalent(proto, m, {"x": 3 * rand(2, 3, 6, 6)})


def test_no_fusion_when_conv_output_is_shared_or_clip_bounds_are_inputs():
    shared = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
                    node("Add", ["r", "c"], ["y"])], [X], [Y], CONV_INITS)
    m, _ = run_passes(shared, ConvActivationFusion)
    assert "com.onnxplug:FusedConv" not in op_types(m)
    dynamic = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Clip", ["c", "lo"], ["y"])],
                    [X, ("lo", F, [])], [Y], CONV_INITS)
    m, _ = run_passes(dynamic, ConvActivationFusion)
    assert "com.onnxplug:FusedConv" not in op_types(m)


def test_no_fusion_when_the_conv_provider_cannot_run_fused_conv():
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])],
                  [X], [Y], CONV_INITS)
    picky = PickyProvider({("", "Conv"), ("", "Relu")})  # runs Conv first, knows no FusedConv
    m, reports = run_passes(proto, ConvActivationFusion, providers=[picky, NumpyProvider()])
    assert op_types(m) == {"Conv": 1, "Relu": 1}
    # The same provider list, with the fused op claimed too: now it fuses.
    picky = PickyProvider({("", "Conv"), ("", "Relu"), ("com.onnxplug", "FusedConv")})
    m, _ = run_passes(proto, ConvActivationFusion, providers=[picky, NumpyProvider()])
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}


def test_no_fusion_when_pattern_nodes_go_to_different_providers():
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])],
                  [X], [Y], CONV_INITS)
    picky = PickyProvider({("", "Relu"), ("com.onnxplug", "FusedConv")})  # would run the Relu, not the Conv
    m, _ = run_passes(proto, ConvActivationFusion, providers=[picky, NumpyProvider()])
    assert op_types(m) == {"Conv": 1, "Relu": 1}


def test_no_fusion_when_no_provider_has_the_fused_op():
    proto = model([node("Gemm", ["a", "w"], ["g"]), node("Relu", ["g"], ["y"])],
                  [("a", F, [2, 3])], [("y", F, [2, 4])], {"w": rand(3, 4)})
    m, _ = run_passes(proto, GemmActivationFusion, providers=[PickyProvider({("", "Gemm"), ("", "Relu")})])
    assert op_types(m) == {"Gemm": 1, "Relu": 1}


def test_gemm_and_matmul_activation_fusions():
    proto = model([node("Gemm", ["a", "w", "c"], ["g"], transB=1, alpha=0.5), node("Relu", ["g"], ["y"]),
                   node("MatMul", ["x3", "w2"], ["mm"]), node("LeakyRelu", ["mm"], ["z"], alpha=0.3)],
                  [("a", F, [2, 3]), ("x3", F, [2, 5, 3])], [("y", F, [2, 4]), ("z", F, [2, 5, 4])],
                  {"w": rand(4, 3), "c": rand(4), "w2": rand(3, 4)})
    m, reports = run_passes(proto, GemmActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedGemm": 1, "com.onnxplug:FusedMatMul": 1}
    assert reports["GemmActivationFusion"].counts == {"Gemm": 1, "MatMul": 1}
    assert_equivalent(proto, m, {"a": rand(2, 3), "x3": rand(2, 5, 3, seed=1)})


@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_residual_add_activation_becomes_fused_conv_with_z(with_bias):
    conv_inputs = ["x", "w", "b"] if with_bias else ["x", "w"]
    proto = model([node("Conv", conv_inputs, ["c"], pads=[1, 1, 1, 1]), node("Add", ["skip", "c"], ["s"]),
                   node("Relu", ["s"], ["y"])], [X, ("skip", F, ["n", 4, 6, 6])], [Y], CONV_INITS)
    m, reports = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}
    assert reports["ConvActivationFusion"].counts == {"with_residual": 1}
    assert m.graph.nodes[0].inputs[3] == "skip"
    assert_equivalent(proto, m, {"x": rand(2, 3, 6, 6), "skip": rand(2, 4, 6, 6, seed=4)})


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_fused_conv_applies_residual_and_activation_per_block(stride):
    """Depthwise FusedConv runs its residual and activation on each cache block (LeakyRelu makes a
    new array, which must land in the output); blocks of 4 KB make several."""
    out = 10 // stride
    proto = model([node("Conv", ["x", "w", "b"], ["c"], group=8, pads=[1, 1, 1, 1], strides=[stride, stride]),
                   node("Add", ["c", "skip"], ["s"]), node("LeakyRelu", ["s"], ["y"], alpha=0.1)],
                  [("x", F, ["n", 8, 10, 10]), ("skip", F, ["n", 8, out, out])], [("y", F, ["n", 8, out, out])],
                  {"w": rand(8, 1, 3, 3), "b": rand(8, seed=1)})
    m, _ = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}
    assert_equivalent(proto, m, {"x": rand(3, 8, 10, 10), "skip": rand(3, 8, out, out, seed=4)},
                      {"depthwise_block_bytes": str(4 << 10)})


@pytest.mark.parametrize("images, size, kernel", [(4, 32, 3), (1, 48, 3), (4, 48, 1)],
                         ids=["3x3 per image", "3x3 row bands", "1x1 per image"])
def test_fused_conv_finishes_each_unit_on_the_product_threads(images, size, kernel):
    """Convolutions large enough to run in units on the product threads add bias, residual and
    activation per unit: every image (or band of output rows) is checked."""
    pads = [kernel // 2] * 4
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=pads), node("Add", ["c", "skip"], ["s"]),
                   node("LeakyRelu", ["s"], ["y"], alpha=0.1)],
                  [("x", F, ["n", 64, size, size]), ("skip", F, ["n", 64, size, size])],
                  [("y", F, ["n", 64, size, size])],
                  {"w": rand(64, 64, kernel, kernel, seed=2) / 8, "b": rand(64, seed=1)})
    m, _ = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}
    assert_equivalent(proto, m, {"x": rand(images, 64, size, size), "skip": rand(images, 64, size, size, seed=4)})


def test_conv_residual_add_without_activation_is_fused_with_empty_activation():
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Add", ["c", "skip"], ["y"])],
                  [X, ("skip", F, ["n", 4, 6, 6])], [Y], CONV_INITS)
    m, _ = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"com.onnxplug:FusedConv": 1}
    assert m.graph.nodes[0].attr("activation") == ""
    assert_equivalent(proto, m, {"x": rand(2, 3, 6, 6), "skip": rand(2, 4, 6, 6, seed=4)})


def test_broadcasting_residual_is_not_fused():
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Add", ["c", "k"], ["s"]),
                   node("Relu", ["s"], ["y"])], [X], [Y], {**CONV_INITS, "k": rand(1, 4, 1, 1)})
    m, _ = run_passes(proto, ConvActivationFusion)
    assert op_types(m) == {"Conv": 1, "Add": 1, "Relu": 1}
