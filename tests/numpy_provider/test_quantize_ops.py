"""QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear against onnx.reference and onnxruntime,
for every quantized type (ml_dtypes for int4/int2/float8/float4), per tensor, per axis and blocked."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(5)
X = (RNG.standard_normal((3, 4, 6)) * 40).astype(np.float32)
TYPES = {
    "uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16,
    "uint4": ml_dtypes.uint4, "int4": ml_dtypes.int4, "uint2": ml_dtypes.uint2, "int2": ml_dtypes.int2,
    "e4m3fn": ml_dtypes.float8_e4m3fn, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2": ml_dtypes.float8_e5m2,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "e2m1": ml_dtypes.float4_e2m1fn,
}


def zero(dtype, shape=()):
    return np.zeros(shape, dtype=dtype)


@pytest.mark.parametrize("name", list(TYPES))
def test_quantize_per_tensor(name):
    dtype = TYPES[name]
    x = X / 30 if name in ("uint2", "int2", "e2m1") else X
    assert_matches_oracle("QuantizeLinear", {"x": x, "scale": np.array(0.7, np.float32), "zp": zero(dtype)}, oracle="ref", opset=25)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int4", "e4m3fn"])
def test_quantize_per_axis_and_blocked(name):
    dtype = TYPES[name]
    scale = RNG.uniform(0.5, 2, size=4).astype(np.float32)
    zp = zero(dtype, 4) if name.startswith("e") else (RNG.integers(0, 3, size=4)).astype(dtype)
    assert_matches_oracle("QuantizeLinear", {"x": X, "scale": scale, "zp": zp}, oracle="ref", opset=25, axis=1)
    block_scale = RNG.uniform(0.5, 2, size=(3, 2, 6)).astype(np.float32)  # 4 along axis 1, blocks of 3
    assert_matches_oracle("QuantizeLinear", {"x": X, "scale": block_scale, "zp": np.zeros((3, 2, 6), dtype)}, oracle="ref",
          opset=25, axis=1, block_size=3)


@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_float8_saturation(saturate):
    x = np.array([0.5, 1e6, -1e6, np.nan], np.float32)
    assert_matches_oracle("QuantizeLinear", {"x": x, "scale": np.array(1, np.float32), "zp": zero(ml_dtypes.float8_e4m3fn)}, oracle="ref",
          opset=25, saturate=saturate)


def test_quantize_output_dtype_without_zero_point_and_float16_input():
    assert_matches_oracle("QuantizeLinear", {"x": X.astype(np.float16), "scale": np.array(0.5, np.float16)}, oracle="ref", opset=25,
          output_dtype=TensorProto.INT8)
    assert_matches_oracle("QuantizeLinear", {"x": X, "scale": np.array(0.25, np.float32)}, oracle="ort", opset=13)


@pytest.mark.parametrize("name", list(TYPES))
def test_dequantize(name):
    dtype = TYPES[name]
    q = RNG.uniform(-2, 2, size=(3, 4)).astype(np.float32).astype(dtype) if name.startswith("e") \
        else RNG.integers(0, 2, size=(3, 4)).astype(dtype)
    zp = zero(dtype, 4) if name.startswith("e") else np.ones(4, dtype) if name != "int2" else zero(dtype, 4)
    assert_matches_oracle("DequantizeLinear", {"x": q, "scale": RNG.uniform(0.5, 2, 4).astype(np.float32), "zp": zp},
          oracle="ref", opset=25, axis=1)


def test_dequantize_blocked_float16_and_int32():
    q = RNG.integers(-100, 100, size=(4, 6)).astype(np.int8)
    assert_matches_oracle("DequantizeLinear", {"x": q, "scale": RNG.uniform(0.5, 2, (4, 2)).astype(np.float16),
                               "zp": RNG.integers(-3, 3, (4, 2)).astype(np.int8)}, oracle="ref", opset=25,
          axis=1, block_size=3)
    assert_matches_oracle("DequantizeLinear", {"x": np.array([1 << 20, -7], np.int32), "scale": np.array(0.5, np.float32)}, oracle="ort",
          opset=13)


@pytest.mark.parametrize("x", [X, np.abs(X), -np.abs(X), np.zeros((2, 3), np.float32),  # all-zero: scale 1
                               np.array(-2.5, np.float32), np.array([0.1, np.inf, -3], np.float32)])
def test_dynamic_quantize_linear(x):
    assert_matches_oracle("DynamicQuantizeLinear", {"x": x}, oracle="ort", n_outputs=3, opset=11)


@pytest.mark.parametrize("x", [np.array(3.3, np.float32), X.reshape(1, 4, 3, 6)])
def test_quantize_dequantize_in_place_steps(x):
    """The steps after the quotient (and after the first DequantizeLinear step) run in place:
    a 0-d input and a per-channel 4-D one against onnxruntime."""
    per_axis = x.ndim == 4
    scale = RNG.uniform(0.5, 2, 4).astype(np.float32) if per_axis else np.array(0.3, np.float32)
    zp = RNG.integers(-5, 5, 4 if per_axis else ()).astype(np.int8)
    assert_matches_oracle("QuantizeLinear", {"x": x, "scale": scale, "zp": zp}, oracle="ort", opset=13, axis=1)
    q = (x * 3).astype(np.int8) if per_axis else np.array(-7, np.int8)
    assert_matches_oracle("DequantizeLinear", {"x": q, "scale": scale, "zp": zp}, oracle="ort", opset=13, axis=1)


@pytest.mark.parametrize("axis", [None, 1])
def test_dequantize_int32_rounds_as_onnxruntime(axis):
    """int32 (a quantized bias) past 2^24: the difference is rounded to float32 before the float32
    product, as onnxruntime computes it; a float64 product rounded once differs in the last bit."""
    x = RNG.integers(-2**30, 2**30, (7, 9)).astype(np.int32)
    scale = np.array(3.3e-4, np.float32) if axis is None else RNG.uniform(1e-4, 1e-3, 9).astype(np.float32)
    zp = np.array(17, np.int32) if axis is None else RNG.integers(-5, 5, 9).astype(np.int32)
    attrs = {} if axis is None else {"axis": axis}
    assert_matches_oracle("DequantizeLinear", {"x": x, "scale": scale, "zp": zp}, oracle="ort", rtol=0, atol=0,
                          opset=13, **attrs)
