"""com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization (every optional input
and output, skip shapes), and onnxruntime's default-domain SimplifiedLayerNormalization, against
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(11)
B, S, H = 2, 5, 32


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


OUTPUTS = [["y"], ["y", "", "", "sum"], ["y", "mean", "inv_std"], ["y", "mean", "inv_std", "sum"]]


@pytest.mark.parametrize("outputs", OUTPUTS)
@pytest.mark.parametrize("beta,bias", [(False, False), (True, False), (True, True), (False, True)])
def test_skip_layer_norm_inputs_and_outputs(outputs, beta, bias):
    feeds = {"x": _r(B, S, H), "skip": _r(B, S, H), "gamma": _r(H), "beta": _r(H) if beta else None,
             "bias": _r(H) if bias else None}
    assert_ms_matches("SkipLayerNormalization", feeds, outputs=outputs, epsilon=1e-5)


@pytest.mark.parametrize("skip_shape", [(S, H), (1, S, H)])
def test_skip_layer_norm_broadcast_skip_and_default_epsilon(skip_shape):
    feeds = {"x": _r(B, S, H), "skip": _r(*skip_shape), "gamma": _r(H), "beta": _r(H)}
    assert_ms_matches("SkipLayerNormalization", feeds, outputs=["y", "mean", "inv_std", "sum"])
    assert_ms_matches("SkipLayerNormalization", feeds, outputs=["y"])


def test_skip_layer_norm_large_rows_and_float16():
    feeds = {"x": _r(4, 300, 256), "skip": _r(4, 300, 256), "gamma": _r(256), "beta": _r(256), "bias": _r(256)}
    assert_ms_matches("SkipLayerNormalization", feeds, outputs=["y", "", "", "sum"])
    half = {k: v.astype(np.float16) for k, v in feeds.items()}
    assert_ms_matches("SkipLayerNormalization", half, outputs=["y", "mean", "inv_std", "sum"], rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("outputs", OUTPUTS)
@pytest.mark.parametrize("bias", [False, True])
def test_skip_simplified_layer_norm(outputs, bias):
    feeds = {"x": _r(B, S, H), "skip": _r(S, H), "gamma": _r(H), "bias": _r(H) if bias else None}
    assert_ms_matches("SkipSimplifiedLayerNormalization", feeds, outputs=outputs, epsilon=1e-6)


@pytest.mark.parametrize("axis", [-1, 1])
@pytest.mark.parametrize("outputs", [["y"], ["y", "inv_std"]])
def test_simplified_layer_norm_default_domain(axis, outputs):
    x = _r(B, S, H)
    scale = _r(H) if axis == -1 else _r(S, H)
    assert_ms_matches("SimplifiedLayerNormalization", {"x": x, "scale": scale}, outputs=outputs, domain="",
                      axis=axis, epsilon=1e-6)


@pytest.mark.parametrize("opset", [13, 14])
def test_layer_norm_below_opset_17_default_domain(opset):
    feeds = {"x": _r(B, S, H), "scale": _r(H), "bias": _r(H)}
    assert_ms_matches("LayerNormalization", feeds, outputs=["y", "mean", "inv_std"], domain="", default_opset=opset,
                      epsilon=1e-12)
    assert_ms_matches("SimplifiedLayerNormalization", {"x": feeds["x"], "scale": feeds["scale"]}, domain="",
                      default_opset=opset)
