"""com.microsoft twins of ai.onnx ops and small contrib ops against onnxruntime: Pad, Trilu,
GatherND, Range, Unique, ExpandDims, Inverse, MatMulInteger16, CDist, NhwcMaxPool."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(109)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads_2d", [False, True])
def test_pad(mode, pads_2d):
    pads = np.array([0, 1, 2, 0, 2, 1], np.int64)
    feeds = {"x": _r(2, 4, 5), "pads": pads.reshape(1, -1) if pads_2d else pads,
             "value": np.array(1.5, np.float32) if mode == "constant" else None}
    assert_ms_matches("Pad", feeds, mode=mode)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2])
def test_trilu(upper, k):
    feeds = {"x": _r(2, 4, 5), "k": None if k is None else np.array(k, np.int64)}
    assert_ms_matches("Trilu", feeds, upper=upper)


def test_gather_nd():
    assert_ms_matches("GatherND", {"x": _r(3, 4, 5), "i": np.array([[0, 1], [2, 3], [1, 0]], np.int64)})


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("with_delta", [False, True])
def test_range(dtype, with_delta):
    feeds = {"start": np.array(2, dtype), "limit": np.array(17, dtype), "delta": np.array(3, dtype) if with_delta else None}
    assert_ms_matches("Range", feeds)


def test_unique():  # onnxruntime's kernel takes float only
    x = np.array([5, 2, 5, 7, 2, 2, 9, 0], np.float32)
    assert_ms_matches("Unique", {"x": x}, outputs=["y", "idx", "counts"])


@pytest.mark.parametrize("axis", [0, 2, -1, -3])
def test_expand_dims(axis):
    assert_ms_matches("ExpandDims", {"x": _r(3, 4), "axis": np.array(axis, np.int32)})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse(dtype):
    x = (_r(2, 3, 3) + 3 * np.eye(3, dtype=np.float32)).astype(dtype)
    assert_ms_matches("Inverse", {"x": x})


def test_mat_mul_integer16():
    a = RNG.integers(-30000, 30000, (3, 8)).astype(np.int16)
    b = RNG.integers(-30000, 30000, (8, 4)).astype(np.int16)
    assert_ms_matches("MatMulInteger16", {"a": a, "b": b}, rtol=0, atol=0)


@pytest.mark.parametrize("metric", [None, "sqeuclidean", "euclidean"])
def test_cdist(metric):
    attrs = {} if metric is None else {"metric": metric}
    assert_ms_matches("CDist", {"a": _r(5, 7), "b": _r(4, 7)}, **attrs)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("attrs", [{"kernel_shape": [3, 3]}, {"kernel_shape": [2, 2], "strides": [2, 2]},
                                   {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 1]}])
def test_nhwc_max_pool(dtype, attrs):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, (2, 7, 6, 3)).astype(dtype)
    assert_ms_matches("NhwcMaxPool", {"x": x}, rtol=0, atol=0, **attrs)
