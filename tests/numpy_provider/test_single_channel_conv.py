"""Conv of a one-channel input (group 1) in the numpy provider against onnxruntime: it takes the
ordinary paths (one matmul of its windows, padded rows, Winograd), not the depthwise ones, which
work per stride phase and per output channel. Shapes like silero-vad's long-stride 1-D STFT conv
and a grayscale image's first layer; expected values come from onnxruntime only."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.kernels.conv import dispatch
from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(37)


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


# (name, x shape, w shape, Conv attributes besides group)
CASES = [
    ("1d stride 64 kernel 128", (1, 1, 320), (130, 1, 128), dict(strides=[64])),
    ("1d stride 128 kernel 256 batch 2", (2, 1, 576), (258, 1, 256), dict(strides=[128])),
    ("1d stride 1 pads", (2, 1, 101), (16, 1, 9), dict(pads=[4, 3])),
    ("1d dilated stride 3", (1, 1, 77), (5, 1, 4), dict(strides=[3], dilations=[2], pads=[1, 0])),
    ("2d 3x3 multiplier 64", (1, 1, 16, 41), (64, 1, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("2d 3x3 s2 batch 3", (3, 1, 21, 19), (16, 1, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    ("2d 5x3 one output channel", (1, 1, 13, 11), (1, 1, 5, 3), dict(pads=[2, 1, 2, 1])),
    ("2d same upper s2", (2, 1, 17, 18), (8, 1, 3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
]


@pytest.mark.parametrize("name,xs,ws,attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_one_channel_conv_matches_onnxruntime(monkeypatch, name, xs, ws, attrs, bias):
    """Within float tolerance of onnxruntime, and the depthwise kernel never ran (spied on)."""
    calls = []
    real = dispatch.depthwise_conv
    monkeypatch.setattr(dispatch, "depthwise_conv", lambda *a, **k: calls.append(1) or real(*a, **k))
    feeds = {"x": f32(*xs), "w": f32(*ws)}
    if bias:
        feeds["b"] = f32(ws[0])
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=1, **attrs)
    assert not calls, "a one-channel conv went to the depthwise kernel"


def test_two_channel_depthwise_still_uses_depthwise(monkeypatch):
    """group == channels > 1 with one input channel per group stays on the depthwise kernel."""
    calls = []
    real = dispatch.depthwise_conv
    monkeypatch.setattr(dispatch, "depthwise_conv", lambda *a, **k: calls.append(1) or real(*a, **k))
    feeds = {"x": f32(1, 2, 40), "w": f32(6, 1, 8), "b": f32(6)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, group=2, strides=[4])
    assert calls, "the depthwise kernel did not run"
