"""Resize's (planes, H, W) kernels: they match onnxruntime, equal the per-axis path bit for bit, and run."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import assert_node_on_numba_matches, node_model, run_numba

CASES = [
    # (input shape, scales or None, sizes or None, attributes)
    ((2, 21, 7, 9), [1, 1, 8, 8], None, {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}),
    ((1, 5, 6, 6), [1, 1, 2, 2], None, {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}),
    ((1, 3, 5, 7), None, [1, 3, 11, 4], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
    ((1, 3, 5, 7), None, [1, 3, 9, 13], {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
    ((2, 4, 3, 5), [1, 1, 2, 2], None, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                            "nearest_mode": "floor"}),
    ((1, 3, 8, 10), None, [1, 3, 5, 7], {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}),
    ((1, 3, 8, 10), None, [1, 3, 13, 17], {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
                                               "nearest_mode": "round_prefer_floor"}),
    ((1, 2, 6, 7), [1, 1, 1.7, 2.3], None, {"mode": "cubic"}),
    ((1, 2, 6, 7), [1, 1, 1, 3], None, {"mode": "linear"}),  # W only
    ((3, 6, 7), [1, 2.5, 1], None, {"mode": "linear"}),  # H only, rank 3
    ((9, 11), [0.5, 0.6], None, {"mode": "linear", "antialias": 1}),  # rank 2, wide taps
]


def _model(x: np.ndarray, scales, sizes, attrs):  # type: ignore[no-untyped-def]
    inits = {"roi": np.zeros(0, np.float32),
             "scales": np.array(scales if scales is not None else [], np.float32)}
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
    return node_model("Resize", {"x": x}, initializers=inits, opset=18, **attrs)


@pytest.mark.parametrize("shape, scales, sizes, attrs", CASES)
def test_planes_path_matches_onnxruntime_and_the_per_axis_path(shape, scales, sizes, attrs, rng, monkeypatch):
    from onnxplug_numba.ops import op_resize

    x = rng.standard_normal(shape).astype(np.float32)
    model = _model(x, scales, sizes, attrs)
    ran = []
    original = op_resize.Resize._planes
    monkeypatch.setattr(op_resize.Resize, "_planes", lambda self, *a: ran.append(1) or original(self, *a))
    ours = assert_node_on_numba_matches(model, {"x": x}, "Resize")
    assert ran, "the (planes, H, W) kernel did not run"
    monkeypatch.setattr(op_resize, "_planes_plan", lambda *a: None)
    per_axis, _ = run_numba(model, {"x": x}, fallback=True)
    np.testing.assert_array_equal(ours[0], per_axis[0])


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_planes_path_shared_over_threads(mode, rng):
    x = rng.standard_normal((2, 64, 40, 48)).astype(np.float32)
    model = _model(x, [1, 1, 2, 2], None, {"mode": mode, "coordinate_transformation_mode": "asymmetric"})
    one, _ = run_numba(model, {"x": x}, fallback=True, threads=1)
    two = assert_node_on_numba_matches(model, {"x": x}, "Resize", threads=2)
    np.testing.assert_array_equal(one[0], two[0])


def test_nearest_copies_infinities_and_nan(rng):
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    x[0, 0, 1, 2], x[0, 1, 2, 3], x[0, 1, 0, 0] = np.inf, -np.inf, np.nan
    model = _model(x, [1, 1, 2, 3], None, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                               "nearest_mode": "floor"})
    got, _ = run_numba(model, {"x": x}, fallback=True)
    np.testing.assert_array_equal(got[0], np.repeat(np.repeat(x, 2, axis=2), 3, axis=3))


def test_unresized_input_and_extrapolation_keep_the_per_axis_path(rng, monkeypatch):
    from onnxplug_numba.ops import op_resize

    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    ran = []
    monkeypatch.setattr(op_resize.Resize, "_planes", lambda self, *a: ran.append(1))
    assert_node_on_numba_matches(_model(x, [1, 1, 1, 1], None, {"mode": "linear"}), {"x": x}, "Resize")
    inits = {"roi": np.array([0, 0, 0.1, -0.2, 1, 1, 0.9, 1.3], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}
    model = node_model("Resize", {"x": x}, initializers=inits, opset=18, mode="linear",
                       coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.0)
    assert_node_on_numba_matches(model, {"x": x}, "Resize")
    assert not ran
