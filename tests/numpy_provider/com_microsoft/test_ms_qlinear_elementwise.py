"""com.microsoft QLinearAdd, QLinearMul (broadcasting, C's zero point absent or present),
QLinearSigmoid and QLinearLeakyRelu against onnxruntime, uint8 and int8."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(61)


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _s(lo=0.01, hi=0.1):
    return np.array(RNG.uniform(lo, hi), np.float32)


@pytest.mark.parametrize("op_type", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("b_shape", [(2, 3, 8), (8,), (3, 1), ()])
@pytest.mark.parametrize("c_zero_point", [True, False])  # onnxruntime's type inference wants A's and B's
def test_binary(op_type, dtype, b_shape, c_zero_point):
    feeds = {"a": _q(dtype, (2, 3, 8)), "a_scale": _s(), "a_zp": _q(dtype, ()), "b": _q(dtype, b_shape), "b_scale": _s(),
             "b_zp": _q(dtype, ()), "c_scale": _s(0.05, 0.2) if op_type == "QLinearAdd" else _s(0.5, 2),
             "c_zp": _q(dtype, ()) if c_zero_point else None}
    assert_ms_matches(op_type, feeds, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_sigmoid(dtype):
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(4, 64)  # every code
    y_zp = np.array(0 if dtype == np.uint8 else -128, dtype)
    # an absent zero point aborts onnxruntime's process: both are given
    feeds = {"x": x, "x_scale": _s(0.02, 0.08), "x_zp": _q(dtype, ()),
             "y_scale": np.array(1 / 256, np.float32), "y_zp": y_zp}
    assert_ms_matches("QLinearSigmoid", feeds, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("alpha", [None, 0.2])
def test_leaky_relu(dtype, alpha):
    x = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype).reshape(2, 128)
    feeds = {"x": x, "x_scale": _s(), "x_zp": _q(dtype, ()), "y_scale": _s(), "y_zp": _q(dtype, ())}
    attrs = {} if alpha is None else {"alpha": alpha}
    assert_ms_matches("QLinearLeakyRelu", feeds, rtol=0, atol=0, **attrs)
