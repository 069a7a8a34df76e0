"""com.microsoft QLinearGlobalAveragePool, QLinearAveragePool (pads, strides, ceil_mode,
count_include_pad, channels_last) and QLinearConcat against onnxruntime, uint8 and int8."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(67)


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _s(lo=0.01, hi=0.1):
    return np.array(RNG.uniform(lo, hi), np.float32)


def _params(dtype, y_zero_point=True):
    return {"x_scale": _s(), "x_zp": _q(dtype, ()), "y_scale": _s(), "y_zp": _q(dtype, ()) if y_zero_point else None}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("shape", [(2, 3, 7, 5), (1, 4, 9)])
def test_global_average_pool(dtype, channels_last, shape):
    feeds = {"x": _q(dtype, shape), **_params(dtype)}
    assert_ms_matches("QLinearGlobalAveragePool", feeds, rtol=0, atol=0, channels_last=channels_last)


POOLS = [
    {"kernel_shape": [3, 3]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"},
]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("attrs", POOLS)
@pytest.mark.parametrize("channels_last", [0, 1])
def test_average_pool(dtype, attrs, channels_last):
    shape = (2, 8, 9, 3) if channels_last else (2, 3, 8, 9)
    feeds = {"x": _q(dtype, shape), **_params(dtype)}
    assert_ms_matches("QLinearAveragePool", feeds, rtol=0, atol=0, channels_last=channels_last, **attrs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("axis", [1, -1])
def test_concat(dtype, axis):
    y_scale, y_zp = _s(), _q(dtype, ())
    shapes = [(2, 3, 4), (2, 5, 4), (2, 1, 4)] if axis == 1 else [(2, 3, 4), (2, 3, 2), (2, 3, 6)]
    feeds = {"y_scale": y_scale, "y_zp": y_zp}
    for i, shape in enumerate(shapes):
        same = i == 1  # one input already in Y's parameters
        feeds[f"x{i}"] = _q(dtype, shape)
        feeds[f"s{i}"] = y_scale.copy() if same else _s()
        feeds[f"z{i}"] = y_zp.copy() if same else _q(dtype, ())
    assert_ms_matches("QLinearConcat", feeds, rtol=0, atol=0, axis=axis)
