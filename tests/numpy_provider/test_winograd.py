"""3x3 stride-1 convolutions by Winograd's F(4x4, 3x3) (``winograd``), against onnxruntime.

Each case checks with spies that the Winograd path ran and how its work was cut (bands of one
image, runs of images, or one unit with its 36 products shared), with every thread's scratch
poisoned with NaN. The thresholds are lowered so that small shapes take the paths large ones do. The path is
switched on for these tests by the provider option ``winograd`` (it is off by default).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug
from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.kernels.conv import dispatch, winograd
from onnxplug.providers.numpy.runtime.tuning import NumpyTuning
from onnxplug.testing.model_suite import build, sample_inputs
from tests.numpy_provider.single_node_oracle import node_model, run_oracle, run_ours

RNG = np.random.default_rng(2024)
F = TensorProto.FLOAT


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


#: The path is off by default (less accurate than onnxruntime's direct convolution).
ON = {"winograd": "1"}
WINOGRAD = NumpyTuning(winograd=True)


@pytest.fixture
def winograd_calls(calls_of) -> list[tuple]:
    """Records the x shape of every Winograd convolution."""
    return calls_of(dispatch, "winograd_conv", lambda x, u, b, begin, end, epilogue, tuning: x.shape)


@pytest.fixture
def small_units(monkeypatch) -> dict[str, str]:
    """Two product threads; returns the provider options that switch the path on, make every
    product worth splitting and set thresholds for small shapes."""
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    return {**ON, "split_product_macs": "1", "winograd_min_macs": "1", "winograd_min_tiles": "1",
            "winograd_unit_tiles": "8"}


def _assert_close(ours: np.ndarray, expected: np.ndarray) -> None:
    """F(4x4, 3x3) in float32 is within ~1e-5 of the output's magnitude of a direct convolution."""
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4 * float(np.abs(expected).max()))


# (name, x shape, output channels, pads, parallel_for calls: (units, ran on the threads))
UNIT_CASES = [
    ("bands of one image", (1, 32, 20, 20), 32, [1, 1, 1, 1], [(2, True)]),
    ("runs of two images", (5, 32, 8, 12), 40, [1, 1, 1, 1], [(3, True)]),
    ("one unit, products shared", (1, 32, 8, 8), 48, [1, 1, 1, 1], [(6, True)]),
    ("output cropped from whole tiles", (2, 32, 10, 13), 32, [1, 0, 2, 1], [(2, True)]),
    ("no pads", (1, 36, 18, 22), 32, [0, 0, 0, 0], [(2, True)]),
    ("pads of two on one side", (3, 32, 9, 9), 32, [2, 0, 0, 2], [(3, True)]),
]


@pytest.mark.parametrize("name,xs,k,pads,units", UNIT_CASES, ids=[c[0] for c in UNIT_CASES])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_conv_matches_onnxruntime(small_units, poisoned_scratch, parallel_for_calls, winograd_calls,
                                  name, xs, k, pads, units, bias):
    split = parallel_for_calls(winograd)
    feeds = {"x": f32(*xs), "w": f32(k, xs[1], 3, 3)}
    if bias:
        feeds["b"] = f32(k)
    model = node_model("Conv", feeds, 1, opset=17, pads=pads)
    expected = run_oracle(model, feeds, "ort")[0]
    _assert_close(run_ours(model, feeds, like=[expected], provider_options=small_units)[0], expected)
    assert winograd_calls == [xs]
    assert split == units


def _fused_model(xs, k, pads, residual_shape) -> onnx.ModelProto:
    """Conv + bias, plus a residual input, then Relu: the optimizer makes it one FusedConv."""
    inits = [numpy_helper.from_array(f32(k, xs[1], 3, 3), "w"), numpy_helper.from_array(f32(k), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=pads),
             helper.make_node("Add", ["c", "r"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "winograd", [helper.make_tensor_value_info("x", F, xs),
                                                  helper.make_tensor_value_info("r", F, residual_shape)],
                              [helper.make_tensor_value_info("y", F, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("name,xs,k,pads,units", UNIT_CASES, ids=[c[0] for c in UNIT_CASES])
def test_fused_residual_and_relu_match_onnxruntime(tmp_path, calls_of, small_units, poisoned_scratch, parallel_for_calls,
                                                   winograd_calls, name, xs, k, pads, units):
    """The FusedConv epilogue (residual, then Relu) runs on each unit's rows as they are copied out,
    or on the crop when the output is not whole tiles. The kernel's weights are constant: their
    transform is made once and kept, so the second run must give the same values."""
    oh, ow = xs[2] + pads[0] + pads[2] - 2, xs[3] + pads[1] + pads[3] - 2
    model = _fused_model(xs, k, pads, [xs[0], k, oh, ow])
    feeds = {"x": f32(*xs), "r": f32(xs[0], k, oh, ow)}
    transforms = calls_of(dispatch, "transform_weights", lambda w: w.shape)
    split = parallel_for_calls(winograd)
    so = onnxplug.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = onnxplug.InferenceSession(model.SerializeToString(), so, providers=[("numpy", small_units)])
    first = session.run(None, feeds)[0]
    second = session.run(None, feeds)[0]
    ops = Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node)
    assert ops == Counter({"FusedConv": 1}), ops
    expected = onnxruntime.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    _assert_close(first, expected)
    np.testing.assert_array_equal(second, first)
    assert winograd_calls == [xs, xs]
    assert transforms == [(k, xs[1], 3, 3)]
    assert split == units * 2


def test_weights_fed_as_inputs_are_transformed_every_run(small_units, winograd_calls):
    """Weights that are graph inputs may change between runs: nothing is kept."""
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", F, [1, 32, 12, 12]),
                               helper.make_tensor_value_info("w", F, [32, 32, 3, 3])],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = onnxplug.InferenceSession(model.SerializeToString(), providers=[("numpy", small_units)])
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x, w = f32(1, 32, 12, 12), f32(32, 32, 3, 3)
    for weights in (w, -2 * w):
        feeds = {"x": x, "w": weights}
        _assert_close(session.run(None, feeds)[0], oracle.run(None, feeds)[0])
    assert len(winograd_calls) == 2


def test_constant_weights_without_a_bias_are_transformed_once(calls_of, small_units, winograd_calls):
    """A Conv with no bias input (as exported with bias=False) keeps its weights' transform like one
    with a bias: the weights alone are constant. Before, the absent bias made every run rebuild it
    (a 128-channel 28 x 28 layer took 4.8 ms a run instead of 1.3)."""
    w = f32(32, 32, 3, 3)
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", F, [1, 32, 12, 12])],
                              [helper.make_tensor_value_info("y", F, None)], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    transforms = calls_of(dispatch, "transform_weights", lambda w: w.shape)
    so = onnxplug.SessionOptions()
    so.graph_optimization_level = onnxplug.GraphOptimizationLevel.ORT_DISABLE_ALL  # the Conv node itself
    session = onnxplug.InferenceSession(model.SerializeToString(), so, providers=[("numpy", small_units)])
    oracle = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in (f32(1, 32, 12, 12), f32(1, 32, 12, 12)):
        _assert_close(session.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0])
    assert len(winograd_calls) == 2
    assert transforms == [(32, 32, 3, 3)]


def test_large_values_keep_their_relative_accuracy(small_units, winograd_calls):
    """The transforms scale values by up to 8 x 8 before the products and back: with inputs of
    magnitude 1e4 the result stays within 1e-5 of the output's magnitude of a float64 direct sum."""
    x, w = f32(2, 64, 16, 16) * 1e4, f32(64, 64, 3, 3)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    direct = sum(np.einsum("nchw,kc->nkhw", xp[:, :, i:i + 16, j:j + 16], w[:, :, i, j].astype(np.float64))
                 for i in range(3) for j in range(3))
    tuning = NumpyTuning.from_options(small_units)
    blas.PRODUCT_THREADS.tune(tuning)  # as a provider with these options does
    ours = dispatch.conv_nd(x, w, None, (1, 1), (1, 1), (1, 1), (1, 1), 1, tuning=tuning)
    assert winograd_calls == [x.shape]
    assert np.abs(ours - direct).max() <= 1e-5 * np.abs(direct).max()


# (name, x shape, w shape, group, strides, dilations, pads begin, pads end): all refused
REFUSED = [
    ("stride 2", (1, 32, 16, 16), (32, 32, 3, 3), 1, (2, 2), (1, 1), (1, 1), (1, 1)),
    ("dilation 2", (1, 32, 16, 16), (32, 32, 3, 3), 1, (1, 1), (2, 2), (2, 2), (2, 2)),
    ("groups 2", (1, 64, 16, 16), (64, 32, 3, 3), 2, (1, 1), (1, 1), (1, 1), (1, 1)),
    ("5x5 kernel", (1, 32, 16, 16), (32, 32, 5, 5), 1, (1, 1), (1, 1), (2, 2), (2, 2)),
    ("1-D", (1, 32, 64), (32, 32, 3), 1, (1,), (1,), (1,), (1,)),
    ("cropping pads", (1, 32, 16, 16), (32, 32, 3, 3), 1, (1, 1), (1, 1), (-1, 0), (1, 1)),
    ("16 input channels", (8, 16, 32, 32), (32, 16, 3, 3), 1, (1, 1), (1, 1), (1, 1), (1, 1)),
    ("16 output channels", (8, 32, 32, 32), (16, 32, 3, 3), 1, (1, 1), (1, 1), (1, 1), (1, 1)),
    ("few tiles (ResNet-18's layer3 at batch 1)", (1, 256, 14, 14), (256, 256, 3, 3), 1, (1, 1), (1, 1), (1, 1),
     (1, 1)),
    ("little work", (1, 32, 12, 12), (32, 32, 3, 3), 1, (1, 1), (1, 1), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("name,xs,ws,group,strides,dilations,begin,end", REFUSED, ids=[c[0] for c in REFUSED])
def test_other_convolutions_are_refused(name, xs, ws, group, strides, dilations, begin, end):
    x, w = np.zeros(xs, np.float32), np.zeros(ws, np.float32)
    assert not winograd.winograd_fits(x, w, None, strides, dilations, begin, end, group, WINOGRAD)


def test_only_float32_is_taken():
    """float64 convolutions carry QLinearConv's and ConvInteger's exact integer sums."""
    x, w = np.zeros((1, 64, 56, 56), np.float32), np.zeros((64, 64, 3, 3), np.float32)
    assert winograd.winograd_fits(x, w, None, (1, 1), (1, 1), (1, 1), (1, 1), 1, WINOGRAD)
    assert not winograd.winograd_fits(x.astype(np.float64), w.astype(np.float64), None, (1, 1), (1, 1), (1, 1),
                                       (1, 1), 1, WINOGRAD)
    assert not winograd.winograd_fits(x, w, np.zeros(64, np.float64), (1, 1), (1, 1), (1, 1), (1, 1), 1, WINOGRAD)


def test_switch_sends_convolutions_elsewhere(winograd_calls):
    x, w = f32(1, 64, 56, 56), f32(64, 64, 3, 3)
    assert not winograd.winograd_fits(x, w, None, (1, 1), (1, 1), (1, 1), (1, 1), 1, NumpyTuning(winograd=False))


def test_resnet18_at_batch_2_runs_its_3x3_layers_by_winograd(winograd_calls):
    """At batch 2 and the default thresholds, the 3x3 stride-1 layers of ResNet-18's layer1-3 go
    through Winograd; layer4's three have too few tiles (2 x 4). The outputs match onnxruntime."""
    model = build("resnet18")
    feeds = sample_inputs("resnet18", batch=2)
    ours = onnxplug.InferenceSession(model.SerializeToString(), providers=[("numpy", ON)]).run(None, feeds)[0]
    expected = onnxruntime.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(ours, expected, rtol=1e-3, atol=1e-4 * float(np.abs(expected).max()))
    assert len(winograd_calls) == 4 + 3 + 3, winograd_calls
