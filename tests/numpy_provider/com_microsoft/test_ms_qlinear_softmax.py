"""com.microsoft QLinearSoftmax against onnxruntime: uint8 and int8, the opset attribute's two
semantics (flattened at axis below 13, one axis from 13), axes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(71)


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("opset,axis", [(13, -1), (13, 1), (11, 1), (11, 2), (11, -1)])
@pytest.mark.parametrize("x_scale", [0.02, 0.2])
def test_softmax(dtype, opset, axis, x_scale):
    y_zp = np.array(0 if dtype == np.uint8 else -128, dtype)
    feeds = {"x": _q(dtype, (2, 3, 40)), "x_scale": np.array(x_scale, np.float32), "x_zp": _q(dtype, ()),
             "y_scale": np.array(1 / 256, np.float32), "y_zp": y_zp}
    assert_ms_matches("QLinearSoftmax", feeds, rtol=0, atol=0, opset=opset, axis=axis)
