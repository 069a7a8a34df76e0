"""com.microsoft MultiHeadAttention against onnxruntime: separate Q/K/V, bias, keys split in heads,
key_padding_mask forms, attention_bias, unidirectional, past and present. onnxruntime's CPU kernel
lacks packed key/value: that form is checked against onnxruntime on the same values unpacked."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import NotImplementedOpError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ort_run, ours_run
from tests.numpy_provider.single_node_oracle import assert_same

RNG = np.random.default_rng(83)
B, S, L, N, H = 2, 3, 4, 2, 8
D = N * H


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _feeds(bias=False, mask=None, attention_bias=None, past=None, seq=S, length=L):
    return {"q": _r(B, seq, D), "k": _r(B, length, D), "v": _r(B, length, D), "bias": _r(3 * D) if bias else None,
            "mask": mask, "attention_bias": attention_bias,
            "past_key": None if past is None else _r(B, N, past, H),
            "past_value": None if past is None else _r(B, N, past, H)}


OUTS = ["y", "present_key", "present_value"]
MASKS = {"none": None, "end": np.array([2, 4], np.int32),
         "raw2d": np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.int32),
         "raw3d": RNG.integers(0, 2, (B, S, L)).astype(np.int32)}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("bias", [False, True])
def test_cross_attention_masks_and_bias(mask, bias):
    assert_ms_matches("MultiHeadAttention", _feeds(bias, MASKS[mask]), outputs=OUTS, num_heads=N)


@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("past", [None, 2])
def test_self_attention_past_and_causal(unidirectional, past):
    mask = None if past is None else np.array([[1] * 5, [0, 1, 1, 1, 1]], np.int32)
    feeds = _feeds(True, mask, past=past, length=S)
    assert_ms_matches("MultiHeadAttention", feeds, outputs=OUTS, num_heads=N, unidirectional=unidirectional)


@pytest.mark.parametrize("shape", [(1, N, S, L), (B, 1, S, L), (B, N, S, L)])
def test_attention_bias_scale_and_filter_value(shape):
    feeds = _feeds(mask=MASKS["end"], attention_bias=_r(*shape))
    assert_ms_matches("MultiHeadAttention", feeds, outputs=OUTS, num_heads=N, scale=0.2, mask_filter_value=-30.0)


@pytest.mark.parametrize("bias", [False, True])
def test_keys_split_in_heads(bias):
    feeds = _feeds(bias)
    feeds["k"], feeds["v"] = _r(B, N, L, H), _r(B, N, L, H)
    assert_ms_matches("MultiHeadAttention", feeds, outputs=OUTS, num_heads=N)


@pytest.mark.parametrize("bias", [False, True])
def test_packed_key_value_matches_onnxruntime_unpacked(bias):
    feeds = _feeds(bias)
    expected = ort_run(ms_model("MultiHeadAttention", feeds, outputs=OUTS, num_heads=N), feeds)
    packed = dict(feeds)
    packed["k"] = np.stack([feeds["k"].reshape(B, L, N, H), feeds["v"].reshape(B, L, N, H)], axis=3)
    packed["v"] = None
    ours = ours_run(ms_model("MultiHeadAttention", packed, outputs=OUTS, num_heads=N), packed, expected)
    for i, (a, e) in enumerate(zip(ours, expected)):
        assert_same(a, e, 1e-4, 1e-5, f"output {i}")


def test_packed_query_is_refused():
    feeds = {"q": _r(B, S, N, 3, H)}
    with pytest.raises(Exception, match="packed"):
        ours_run(ms_model("MultiHeadAttention", feeds, num_heads=N), feeds, [_r(B, S, D)])


def test_qk_output_is_refused_by_name():
    feeds = _feeds()
    with pytest.raises(NotImplementedOpError, match="qk output"):
        ours_run(ms_model("MultiHeadAttention", feeds, outputs=OUTS + ["qk"], num_heads=N), feeds,
                 [_r(B, S, D), _r(B, N, L, H), _r(B, N, L, H), _r(B, N, S, L)])
