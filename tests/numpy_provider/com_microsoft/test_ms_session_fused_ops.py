"""The com.microsoft ops onnxruntime's own session writes into saved optimized models, against
onnxruntime: FusedConv (residual, activations), FusedGemm (activations and their parameters),
TransposeMatMul, QLinearConv (channels_last) and QLinearWhere."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(107)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("activation,params", [("Relu", None), ("Clip", [-0.5, 0.5]), ("LeakyRelu", [0.2]),
                                               ("Sigmoid", None), ("HardSigmoid", [0.3, 0.4]), ("Tanh", None)])
@pytest.mark.parametrize("residual", [False, True])
def test_fused_conv(activation, params, residual):
    feeds = {"x": _r(2, 3, 9, 8), "w": _r(4, 3, 3, 3), "b": _r(4), "z": _r(2, 4, 9, 8) if residual else None}
    attrs = {"activation": activation, "pads": [1, 1, 1, 1]}
    if params:
        attrs["activation_params"] = params
    assert_ms_matches("FusedConv", feeds, **attrs)


@pytest.mark.parametrize("activation,params", [("Relu", {}), ("LeakyRelu", {"activation_alpha": 0.3}),
                                               ("Sigmoid", {}), ("Tanh", {}),
                                               ("HardSigmoid", {"activation_alpha": 0.25, "activation_beta": 0.4})])
def test_fused_gemm(activation, params):
    feeds = {"a": _r(5, 6), "b": _r(4, 6), "c": _r(4)}
    assert_ms_matches("FusedGemm", feeds, activation=activation, transB=1, alpha=0.7, beta=0.5, **params)


def test_transpose_mat_mul():
    assert_ms_matches("TransposeMatMul", {"a": _r(2, 6, 5), "b": _r(2, 4, 6)}, transA=1, transB=1, alpha=0.5)


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv(channels_last, bias):
    x = _q(np.uint8, (2, 7, 6, 3) if channels_last else (2, 3, 7, 6))
    feeds = {"x": x, "xs": np.array(0.05, np.float32), "xz": _q(np.uint8, ()), "w": _q(np.int8, (4, 3, 3, 3)),
             "ws": RNG.uniform(0.002, 0.01, 4).astype(np.float32), "wz": np.zeros(4, np.int8),
             "ys": np.array(0.2, np.float32), "yz": _q(np.uint8, ()),
             "b": RNG.integers(-300, 300, 4).astype(np.int32) if bias else None}
    assert_ms_matches("QLinearConv", feeds, rtol=0, atol=0, constants=("w", "ws", "wz"), channels_last=channels_last,
                      pads=[1, 1, 1, 1])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_where(dtype):
    feeds = {"c": RNG.integers(0, 2, (3, 1, 5)).astype(bool), "x": _q(dtype, (4, 5)), "xs": np.array(0.05, np.float32),
             "xz": _q(dtype, ()), "y": _q(dtype, (3, 4, 1)), "ys": np.array(0.02, np.float32), "yz": _q(dtype, ()),
             "zs": np.array(0.04, np.float32), "zz": _q(dtype, ())}
    assert_ms_matches("QLinearWhere", feeds, rtol=0, atol=0)
