"""com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul against onnxruntime: int8 / uint8,
zero points absent or present, per-tensor and per-column scales and zero points, bias, batched A."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(41)
K, N = 24, 10


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _scale(per_column):
    return RNG.uniform(0.01, 0.1, N if per_column else ()).astype(np.float32)


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("zero_points,bias", [(False, False), (True, False), (True, True), (False, True)])
def test_matmul_integer_to_float(a_type, b_type, per_column, zero_points, bias):
    feeds = {"a": _q(a_type, (2, 3, K)), "b": _q(b_type, (K, N)), "a_scale": _scale(False),
             "b_scale": _scale(per_column),
             "a_zp": _q(a_type, ()) if zero_points else None,
             "b_zp": _q(b_type, N if per_column else ()) if zero_points else None,
             "bias": RNG.standard_normal(N).astype(np.float32) if bias else None}
    assert_ms_matches("MatMulIntegerToFloat", feeds)


@pytest.mark.parametrize("b_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("zero_point,bias", [(False, False), (True, True), (False, True)])
def test_dynamic_quantize_matmul(b_type, per_column, zero_point, bias):
    feeds = {"a": RNG.standard_normal((2, 5, K)).astype(np.float32), "b": _q(b_type, (K, N)),
             "b_scale": _scale(per_column),
             "b_zp": _q(b_type, N if per_column else ()) if zero_point else None,
             "bias": RNG.standard_normal(N).astype(np.float32) if bias else None}
    assert_ms_matches("DynamicQuantizeMatMul", feeds)


def test_dynamic_quantize_matmul_all_positive_and_2d():
    feeds = {"a": np.abs(RNG.standard_normal((7, K))).astype(np.float32), "b": _q(np.int8, (K, N)),
             "b_scale": _scale(False)}
    assert_ms_matches("DynamicQuantizeMatMul", feeds)
