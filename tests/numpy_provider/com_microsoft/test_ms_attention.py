"""com.microsoft Attention against onnxruntime: every mask_index form, unidirectional, past state
and present, attention_bias, qkv_hidden_sizes, scale and mask_filter_value."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import NotImplementedOpError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run

RNG = np.random.default_rng(23)
B, S, DIN, N = 2, 4, 16, 2


def _r(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _feeds(hidden=(16, 16, 16), mask=None, past=None, attention_bias=None, bias=True, seq=S):
    return {"x": _r(B, seq, DIN), "w": _r(DIN, sum(hidden)), "b": _r(sum(hidden)) if bias else None,
            "mask": mask, "past": past, "attention_bias": attention_bias}


MASKS = {
    "none": None,
    "end": np.array([3, 4], np.int32),
    "end_start": np.array([4, 3, 1, 0], np.int32),
    "raw2d": np.array([[1, 1, 0, 1], [0, 1, 1, 1]], np.int32),
    "all_masked": np.array([[1, 1, 0, 0], [0, 0, 0, 0]], np.int32),  # a row of mask_filter_value only
    "raw3d": RNG.integers(0, 2, (B, S, S)).astype(np.int32) | np.eye(S, dtype=np.int32),
}


@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("mask", list(MASKS))
def test_masks(mask, unidirectional):
    assert_ms_matches("Attention", _feeds(mask=MASKS[mask]), outputs=["y"], num_heads=N,
                      unidirectional=unidirectional)


@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("mask", ["none", "end", "raw2d"])
def test_past_and_present(mask, unidirectional):
    past_len, seq = 3, 2
    masks = {"none": None, "end": np.array([4, 5], np.int32),
             "raw2d": np.array([[0, 1, 1, 1, 1], [1, 1, 1, 0, 1]], np.int32)}
    feeds = _feeds(mask=masks[mask], past=_r(2, B, N, past_len, 8), seq=seq)
    assert_ms_matches("Attention", feeds, outputs=["y", "present"], num_heads=N, unidirectional=unidirectional)


def test_attention_bias_scale_filter_value_and_no_bias():
    feeds = _feeds(mask=MASKS["end"], attention_bias=_r(1, N, S, S), bias=False)
    assert_ms_matches("Attention", feeds, outputs=["y", "present"], num_heads=N, scale=0.3, mask_filter_value=-50.0)
    feeds = _feeds(attention_bias=_r(B, 1, S, S))
    assert_ms_matches("Attention", feeds, num_heads=N)


def test_qkv_hidden_sizes():
    feeds = _feeds(hidden=(16, 16, 8), mask=MASKS["raw2d"])
    assert_ms_matches("Attention", feeds, num_heads=N, qkv_hidden_sizes=[16, 16, 8])


def test_long_sequence_with_four_heads():
    feeds = {"x": _r(2, 64, 64), "w": _r(64, 192), "b": _r(192), "mask": np.array([64, 40], np.int32)}
    assert_ms_matches("Attention", feeds, num_heads=4)


def test_do_rotary_is_refused_by_name():
    feeds = _feeds()
    with pytest.raises(NotImplementedOpError, match="do_rotary"):
        ours_run(ms_model("Attention", feeds, num_heads=N, do_rotary=1), feeds, [feeds["x"]])
