"""The phase-plane depthwise kernel against onnxruntime: strides, window sizes, dilations, uneven pads,
channel multipliers, float64, and the fused epilogue (clamped activations, residual)."""

from __future__ import annotations

import numpy as np
import pytest

from numba_test_helpers import assert_matches_onnxruntime, node_model, run_numba

DEPTHWISE_CASES = [
    # (input shape, channels multiplier, kernel, attributes)
    ((1, 4, 16, 16), 1, (3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 3, 15, 17), 1, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),  # odd sizes, step 2
    ((1, 3, 14, 14), 1, (3, 3), {"pads": [0, 1, 1, 0], "strides": [2, 2]}),  # uneven pads
    ((1, 2, 19, 20), 1, (3, 3), {"pads": [1, 1, 1, 1], "strides": [3, 3]}),  # step 3: nine phases
    ((1, 2, 12, 13), 1, (3, 3), {"pads": [1, 2, 1, 0], "strides": [1, 2]}),  # mixed steps
    ((1, 3, 13, 12), 1, (5, 5), {"pads": [2, 2, 2, 2]}),  # 5x5: a kernel row per pass
    ((1, 3, 17, 16), 1, (5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
    ((2, 4, 15, 14), 1, (7, 7), {"pads": [3, 3, 3, 3]}),  # 7x7 (ConvNeXt)
    ((1, 3, 19, 18), 2, (7, 7), {"pads": [3, 2, 1, 3], "strides": [2, 1]}),
    ((1, 3, 16, 17), 1, (3, 5), {"pads": [1, 2, 1, 2], "dilations": [1, 2]}),  # 3 rows of a 5-wide window
    ((1, 2, 12, 30), 1, (1, 7), {"pads": [0, 3, 0, 3], "strides": [1, 3]}),
    ((1, 2, 18, 18), 1, (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2], "strides": [2, 2]}),
    ((1, 2, 9, 11), 2, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 1]}),  # channel multiplier 2
    ((1, 5, 7, 7), 1, (3, 3), {"pads": [1, 1, 1, 1]}),  # rows shorter than a vector
    ((1, 3, 6, 6), 1, (3, 3), {}),  # no padding
    ((1, 2, 10, 9), 1, (2, 4), {"pads": [0, 1, 1, 2], "strides": [2, 3]}),
]


@pytest.mark.parametrize("x_shape,mult,kernel,attrs", DEPTHWISE_CASES)
def test_depthwise_conv(rng, x_shape, mult, kernel, attrs):
    c = x_shape[1]
    x = rng.standard_normal(x_shape).astype(np.float32)
    init = {"w": rng.standard_normal((c * mult, 1, *kernel)).astype(np.float32),
            "b": rng.standard_normal(c * mult).astype(np.float32)}
    assert_matches_onnxruntime(node_model("Conv", {"x": x}, initializers=init, group=c, **attrs), {"x": x})


def _numpy_depthwise(x: np.ndarray, w: np.ndarray, b: np.ndarray, pads: list[int], strides: list[int]) -> np.ndarray:
    """An independent oracle (onnxruntime has no float64 Conv): zero-pad, then sum strided taps."""
    kh, kw = w.shape[2:]
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (padded.shape[2] - kh) // strides[0] + 1
    ow = (padded.shape[3] - kw) // strides[1] + 1
    y = np.zeros((x.shape[0], x.shape[1], oh, ow)) + b.reshape(1, -1, 1, 1)
    for i in range(kh):
        for j in range(kw):
            window = padded[:, :, i:i + strides[0] * (oh - 1) + 1:strides[0], j:j + strides[1] * (ow - 1) + 1:strides[1]]
            y += window * w[:, 0, i, j].reshape(1, -1, 1, 1)
    return y


def test_depthwise_conv_float64(rng):
    x = rng.standard_normal((1, 3, 11, 12))
    init = {"w": rng.standard_normal((3, 1, 3, 3)), "b": rng.standard_normal(3)}
    model = node_model("Conv", {"x": x}, initializers=init, group=3, pads=[1, 0, 1, 1], strides=[2, 2])
    (got,), _ = run_numba(model, {"x": x})
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _numpy_depthwise(x, init["w"], init["b"], [1, 0, 1, 1], [2, 2]), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("activation,params", [("Relu", []), ("Clip", [-0.5, 0.7]), ("Sigmoid", []),
                                               ("LeakyRelu", [0.1])])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("window", [3, 5, 7])
def test_depthwise_fused_conv_epilogue(rng, activation, params, residual, window):
    x = rng.standard_normal((1, 4, 12, 12)).astype(np.float32)
    feeds = {"x": x}
    if residual:  # onnxruntime's FusedConv: Z is added before the activation
        feeds["z"] = rng.standard_normal((1, 4, 12, 12)).astype(np.float32)
    init = {"w": rng.standard_normal((4, 1, window, window)).astype(np.float32),
            "b": rng.standard_normal(4).astype(np.float32)}
    extra = {"activation_params": params} if params else {}
    model = node_model("FusedConv", feeds, initializers=init, domain="com.microsoft", group=4, pads=[window // 2] * 4,
                       activation=activation, **extra)
    if residual:  # inputs are X, W, B, Z: put the graph input z last
        node = model.graph.node[0]
        node.input[:] = ["x", "w", "b", "z"]
    assert_matches_onnxruntime(model, feeds)


ONE_CHANNEL_CASES = [
    # (input shape, output channels, kernel, attributes): group 1 over one input channel
    ((1, 1, 640), 258, (256,), {"strides": [128]}),  # silero-vad's STFT
    ((2, 1, 300), 130, (128,), {"strides": [64], "pads": [3, 5]}),
    ((1, 1, 28, 28), 8, (5, 5), {"pads": [2, 2, 2, 2]}),
]


@pytest.mark.parametrize("x_shape,m,kernel,attrs", ONE_CHANNEL_CASES)
def test_one_input_channel_large_window_is_a_product(rng, monkeypatch, x_shape, m, kernel, attrs):
    """One input channel, group 1, more than nine taps: a plain product, not the per-plane
    depthwise loops (taps x outputs short loops, as silero-vad's STFT ran); results as onnxruntime's."""
    from onnxplug_numba.ops import _conv

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("ran the depthwise kernel")

    monkeypatch.setattr(_conv.kdepthwise, "depthwise_phased", refuse)
    monkeypatch.setattr(_conv.native_parallel, "depthwise_conv", refuse)
    x = rng.standard_normal(x_shape).astype(np.float32)
    init = {"w": rng.standard_normal((m, 1, *kernel)).astype(np.float32),
            "b": rng.standard_normal(m).astype(np.float32)}
    assert_matches_onnxruntime(node_model("Conv", {"x": x}, initializers=init, **attrs), {"x": x})
