"""com.microsoft QGemm (transposes, alpha, C, per-column B parameters, quantized or float output) and
the contrib-domain QuantizeLinear / DequantizeLinear against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(73)
M, K, N = 5, 12, 7


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _s(shape=()):
    return RNG.uniform(0.01, 0.05, shape).astype(np.float32)


@pytest.mark.parametrize("a_type,b_type", [(np.uint8, np.int8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 1)])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("c_shape", [None, (N,), (M, N)])
@pytest.mark.parametrize("quantized_output", [True, False])
def test_qgemm(a_type, b_type, trans_a, trans_b, per_column, c_shape, quantized_output):
    b_params = N if per_column else ()
    feeds = {"a": _q(a_type, (K, M) if trans_a else (M, K)), "a_scale": _s(), "a_zp": _q(a_type, ()),
             "b": _q(b_type, (N, K) if trans_b else (K, N)), "b_scale": _s(b_params),
             "b_zp": np.zeros(b_params, b_type) if b_type == np.int8 else _q(b_type, b_params),
             "c": RNG.integers(-500, 500, c_shape).astype(np.int32) if c_shape else None,
             "y_scale": np.array(0.05, np.float32) if quantized_output else None,
             "y_zp": _q(a_type, ()) if quantized_output else None}
    assert_ms_matches("QGemm", feeds, rtol=1e-5, atol=0 if quantized_output else 1e-5,
                      transA=trans_a, transB=trans_b, alpha=0.75)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
@pytest.mark.parametrize("axis", [None, 1])
def test_quantize_dequantize(dtype, axis):
    x = (RNG.standard_normal((2, 3, 4)) * 3).astype(np.float32)
    attrs = {} if axis is None else {"axis": axis}
    scale, zp = (_s(3), _q(dtype, 3)) if axis is not None else (_s(), _q(dtype, ()))
    q = assert_ms_matches("QuantizeLinear", {"x": x, "scale": np.asarray(scale * 10), "zp": zp}, rtol=0, atol=0, **attrs)[0]
    assert_ms_matches("DequantizeLinear", {"q": q, "scale": scale, "zp": zp}, **attrs)
