"""onnxruntime's legacy default-domain ops (no onnx schema, accepted below opset 10) against
onnxruntime: Affine, Scale, ScaledTanh, ParametricSoftplus, ImageScaler, Crop, DynamicSlice."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(113)
X = RNG.standard_normal((2, 3, 6, 5)).astype(np.float32)

CASES = [
    ("Affine", {}), ("Affine", {"alpha": 2.5, "beta": -1.0}),
    ("Scale", {}), ("Scale", {"scale": 0.3}),
    ("ScaledTanh", {"alpha": 1.7, "beta": 0.6}),
    ("ParametricSoftplus", {"alpha": 0.5, "beta": 3.0}),
    ("ImageScaler", {"scale": 0.017, "bias": [-2.1, -2.0, -1.8]}),
    ("Crop", {"border": [1, 2, 1, 0]}), ("Crop", {"border": [1, 2, 0, 0], "scale": [3, 2]}),
]


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize("op_type,attrs", CASES)
def test_legacy_ops(op_type, attrs, opset):
    assert_ms_matches(op_type, {"x": X}, domain="", default_opset=opset, **attrs)


@pytest.mark.parametrize("axes", [None, [3, 1]])
def test_dynamic_slice(axes):
    feeds = {"x": X, "starts": np.array([1, -4], np.int64), "ends": np.array([100, 3], np.int64),
             "axes": None if axes is None else np.array(axes, np.int64)}
    assert_ms_matches("DynamicSlice", feeds, domain="", default_opset=8)


def test_refused_from_opset_10_as_onnxruntime_does():
    from onnxplug.errors import UnknownOpError
    from tests.numpy_provider.com_microsoft.ms_oracle import ms_model, ours_run
    with pytest.raises(UnknownOpError, match="ImageScaler"):
        ours_run(ms_model("ImageScaler", {"x": X}, domain="", default_opset=10, scale=2.0), {"x": X}, [X])
