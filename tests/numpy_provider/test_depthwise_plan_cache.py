"""The depthwise columns formulation builds a geometry's plan once and reuses it (ops/depthwise_plan.py):
repeated calls and interleaved geometries give onnxruntime's results, a geometry that differs only in
channels or values shares the plan, and the cache stays bounded."""

from __future__ import annotations

import numpy as np
import pytest
from onnxplug.providers.numpy.kernels.conv import depthwise, depthwise_plan
from onnxplug.providers.numpy.kernels.conv.depthwise import depthwise_conv

from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(37)


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


@pytest.fixture
def counted(monkeypatch):
    """Empty plan cache; counts the plans built."""
    monkeypatch.setattr(depthwise_plan, "_PLANS", {})
    built = []
    real = depthwise_plan._Plan

    class Counting(real):
        def __init__(self, sh):
            built.append(sh.kernel)
            super().__init__(sh)

    monkeypatch.setattr(depthwise_plan, "_Plan", Counting)
    return built


def test_long_stride_1d_conv_builds_its_plan_once(counted):
    """A 1-D conv with a long stride (one tap group per phase, as a spectrogram front end has),
    called again and again, is planned once and stays right."""
    x, w = f32(1, 1, 640), f32(1, 1, 64)
    first = depthwise_conv(x, w, None, [16], [1], [8], [8])
    for _ in range(3):
        np.testing.assert_array_equal(depthwise_conv(x, w, None, [16], [1], [8], [8]), first)
    assert counted == [(64,)]


def test_channels_and_values_share_a_geometry_pads_do_not(counted):
    """The plan depends on kernel, strides, dilations, pads and input size, never on channels or values."""
    depthwise_conv(f32(1, 3, 50), f32(3, 1, 5), None, [2], [1], [2], [2])
    depthwise_conv(f32(2, 7, 50), f32(7, 1, 5), f32(7), [2], [1], [2], [2])
    assert len(counted) == 1
    depthwise_conv(f32(1, 3, 50), f32(3, 1, 5), None, [2], [1], [1], [2])
    depthwise_conv(f32(1, 3, 51), f32(3, 1, 5), None, [2], [1], [2], [2])
    assert len(counted) == 3


@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_interleaved_geometries_match_onnxruntime(monkeypatch, counted, bias):
    """Two geometries alternating on the cached plans, columns formulation forced, against onnxruntime."""
    columns = {"depthwise_channels_last_max_out": "0", "depthwise_shifted_rows": "0"}
    cases = [((1, 4, 96), (4, 1, 16), dict(strides=[8], pads=[4, 4])),
             ((2, 3, 13, 11), (3, 1, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1]))]
    for _ in range(2):
        for xs, ws, attrs in cases:
            feeds = {"x": f32(*xs), "w": f32(*ws)}
            if bias:
                feeds["b"] = f32(ws[0])
            assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, group=xs[1], provider_options=columns,
                                  **attrs)
    assert len(counted) == 2


def test_cache_is_bounded(monkeypatch, counted):
    monkeypatch.setattr(depthwise_plan, "_MAX_PLANS", 3)
    for n in range(20, 30):
        depthwise_conv(f32(1, 2, n), f32(2, 1, 3), None, [1], [1], [0], [0])
    assert len(depthwise_plan._PLANS) <= 3
    assert len(counted) == 10
