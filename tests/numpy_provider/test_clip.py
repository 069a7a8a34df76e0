"""Clip against onnxruntime: attribute bounds (opset 6), input bounds (11, 12, 13) absent, one-sided or
both, low above high, integer, float16 and 0-d input, NaN."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(149)
X = (RNG.standard_normal((3, 5)) * 4).astype(np.float32)
X[0, 0] = np.nan


@pytest.mark.parametrize("attrs", [{}, {"min": -1.0}, {"max": 2.0}, {"min": -1.0, "max": 2.0}, {"min": 3.0, "max": 1.0}])
def test_attribute_bounds(attrs):
    assert_matches_oracle("Clip", {"x": X}, opset=6, **attrs)


@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("bounds", [(None, None), (-1.0, None), (None, 2.0), (-1.0, 2.0), (3.0, 1.0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8])
def test_input_bounds(opset, bounds, dtype):
    if opset == 11 and np.dtype(dtype).kind in "iu":
        pytest.skip("integer Clip arrives in opset 12")
    x = np.abs(X) if np.dtype(dtype).kind == "u" else X
    x = np.nan_to_num(x).astype(dtype) if np.dtype(dtype).kind in "iu" else x.astype(dtype)
    feeds, names = {"x": x}, ["x"]
    for name, value in zip(("low", "high"), bounds):
        if value is None:
            names.append("")
        else:
            feeds[name] = np.array(abs(value) if np.dtype(dtype).kind == "u" else value, dtype)
            names.append(name)
    while names[-1] == "":
        names.pop()
    assert_matches_oracle("Clip", feeds, opset=opset, input_names=names)


def test_0d_input():
    assert_matches_oracle("Clip", {"x": np.array(5.5, np.float32), "lo": np.array(0, np.float32),
                                   "hi": np.array(3, np.float32)}, opset=13)
