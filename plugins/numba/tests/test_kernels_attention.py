"""Row softmax with vector lanes and the fused attention softmax (scale + mask + softmax in one pass)."""

from __future__ import annotations

import numpy as np
import pytest

from numba_test_helpers import assert_close, assert_matches_onnxruntime, node_model, run_numba


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("cols", [7, 8, 61, 128])  # below, at and past one vector of lanes, with a tail
def test_softmax_long_rows(rng, op, cols):
    x = (rng.standard_normal((5, cols)) * 6).astype(np.float32)
    if op == "Softmax":  # a masked entry: probability 0 (log-softmax would give -inf, which no tolerance bounds)
        x[1, 3] = -np.inf
    x[2] += 80.0  # large values: the maximum is subtracted before exp
    assert_matches_onnxruntime(node_model(op, {"x": x}, opset=13, axis=-1), {"x": x})


def _numpy_attention(query: np.ndarray, key: np.ndarray, value: np.ndarray, bias: np.ndarray | None,
                     heads: int, scale: float) -> np.ndarray:
    """docs/fused-ops.md's formula, in float64 numpy (an oracle independent of the kernels); each
    operand split by its own shape, so batches and the bias broadcast as numpy's matmul and + do."""
    q = query.astype(np.float64).reshape(*query.shape[:2], heads, -1).transpose(0, 2, 1, 3)
    k = key.astype(np.float64).reshape(*key.shape[:2], heads, -1).transpose(0, 2, 3, 1)
    v = value.astype(np.float64).reshape(*value.shape[:2], heads, -1).transpose(0, 2, 1, 3)
    scores = (q @ k) * scale
    if bias is not None:
        scores = scores + bias
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = (probs @ v).transpose(0, 2, 1, 3)
    return out.reshape(*out.shape[:2], -1)


@pytest.mark.parametrize("bias_shape", [None, (2, 1, 1, 19), (2, 4, 11, 19), (1, 1, 11, 19), (11, 1), (11, 19)])
@pytest.mark.parametrize("scale", [None, 0.3])
@pytest.mark.parametrize("threads", [1, 2])
# float32 runs the one-region kernel (kernels/native_attention.py), float64 the BLAS + softmax path
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# 11 queries: below SERIAL_ATTENTION_FLOPS (the calling thread); 240: the prange region
@pytest.mark.parametrize("queries", [11, 240])
def test_multi_head_attention(rng, bias_shape, scale, threads, dtype, queries):
    if queries != 11:
        bias_shape = bias_shape and tuple(queries if d == 11 else d for d in bias_shape)
    query = rng.standard_normal((2, queries, 32)).astype(dtype)
    key = rng.standard_normal((2, 19, 32)).astype(dtype)
    value = rng.standard_normal((2, 19, 24)).astype(dtype)
    feeds = {"query": query, "key": key, "value": value}
    if bias_shape is not None:
        bias = rng.standard_normal(bias_shape).astype(dtype)
        if bias_shape[-1] > 5:
            bias[..., 5] = -np.inf  # a masked key position
        feeds["bias"] = bias
    attrs = {"num_heads": 4} | ({"scale": scale} if scale is not None else {})
    model = node_model("MultiHeadAttention", feeds, domain="com.onnxplug", **attrs)
    (got,), _ = run_numba(model, feeds, threads=threads)
    expected = _numpy_attention(query, key, value, feeds.get("bias"), 4, scale if scale is not None else 1 / np.sqrt(8))
    assert got.dtype == dtype
    assert_close([got], [expected.astype(dtype)])


def _numpy_skip_layer_norm(x, skip, gamma, beta, bias, eps):  # type: ignore[no-untyped-def]
    """docs/fused-ops.md's SkipLayerNormalization in float64 numpy."""
    s = x.astype(np.float64) + skip
    if bias is not None:
        s = s + bias
    mean = s.mean(axis=-1, keepdims=True)
    var = ((s - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (s - mean) / np.sqrt(var + eps) * gamma
    return (y + beta if beta is not None else y), s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_beta,with_bias", [(True, True), (False, False), (True, False), (False, True)])
@pytest.mark.parametrize("threads", [1, 2])
def test_skip_layer_normalization(rng, dtype, with_beta, with_bias, threads):
    x = rng.standard_normal((2, 300, 67)).astype(dtype)  # enough rows to be shared between threads
    skip = rng.standard_normal((2, 300, 67)).astype(dtype)
    gamma = rng.standard_normal(67).astype(dtype)
    feeds = {"x": x, "skip": skip, "gamma": gamma}
    beta = rng.standard_normal(67).astype(dtype) if with_beta else None
    bias = rng.standard_normal(67).astype(dtype) if with_bias else None
    if with_beta or with_bias:
        feeds["beta"] = beta if with_beta else np.zeros(67, dtype)
    if with_bias:
        feeds["bias"] = bias
    model = node_model("SkipLayerNormalization", feeds, 2, domain="com.onnxplug", epsilon=1e-3)
    (y, s), _ = run_numba(model, feeds, threads=threads)
    want_y, want_s = _numpy_skip_layer_norm(x, skip, gamma, beta, bias, 1e-3)
    assert y.dtype == s.dtype == dtype
    assert_close([y, s], [want_y.astype(dtype), want_s.astype(dtype)])


@pytest.mark.parametrize("case", ["bias_widens_batch", "keys_broadcast_over_batch", "bias_widens_queries"])
def test_multi_head_attention_broadcasts_as_its_function_body(rng, case):
    """Operands beyond the plain form (the optimizer fuses attention whose dims it cannot prove)
    give what the op's unfused nodes give: products and the bias broadcast (docs/fused-ops.md)."""
    q_batch, kv_batch, queries, bias_shape = {"bias_widens_batch": (1, 1, 5, (3, 1, 1, 7)),
                                               "keys_broadcast_over_batch": (2, 1, 5, (2, 1, 5, 7)),
                                               "bias_widens_queries": (2, 2, 1, (2, 1, 5, 7))}[case]
    feeds = {"query": rng.standard_normal((q_batch, queries, 16)).astype(np.float32),
             "key": rng.standard_normal((kv_batch, 7, 16)).astype(np.float32),
             "value": rng.standard_normal((kv_batch, 7, 16)).astype(np.float32),
             "bias": rng.standard_normal(bias_shape).astype(np.float32)}
    model = node_model("MultiHeadAttention", feeds, domain="com.onnxplug", num_heads=2, scale=0.25)
    (got,), _ = run_numba(model, feeds)
    expected = _numpy_attention(feeds["query"], feeds["key"], feeds["value"], feeds["bias"], 2, 0.25)
    assert got.shape == expected.shape
    assert_close([got], [expected.astype(np.float32)])
