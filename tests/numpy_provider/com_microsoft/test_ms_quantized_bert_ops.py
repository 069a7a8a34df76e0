"""com.microsoft QAttention and QEmbedLayerNormalization against onnxruntime: weight types, zero
points, per-column weight scales, masks, unidirectional, past/present; segments and mask."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(103)
B, S, DIN, N = 2, 4, 16, 2
WIDTH = 3 * DIN


def _q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def _attention_feeds(w_type, zero_points, per_column, mask=None, past=None, seq=S):
    return {"x": _q(np.uint8, (B, seq, DIN)), "w": _q(w_type, (DIN, WIDTH)),
            "bias": RNG.standard_normal(WIDTH).astype(np.float32),
            "x_scale": np.array(0.02, np.float32),
            "w_scale": RNG.uniform(0.001, 0.01, WIDTH if per_column else ()).astype(np.float32),
            "mask": mask,
            "x_zp": _q(np.uint8, ()) if zero_points else None,
            "w_zp": (np.zeros(WIDTH if per_column else (), w_type) if w_type == np.int8 else
                     np.full(WIDTH if per_column else (), 128, w_type)) if zero_points else None,
            "past": past}


@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("zero_points", [False, True])
@pytest.mark.parametrize("per_column", [False, True])
def test_q_attention_projection(w_type, zero_points, per_column):
    feeds = _attention_feeds(w_type, zero_points, per_column, mask=np.array([3, 4], np.int32))
    assert_ms_matches("QAttention", feeds, constants=("w", "w_scale", "w_zp"), num_heads=N)


@pytest.mark.parametrize("unidirectional", [0, 1])
@pytest.mark.parametrize("past", [False, True])
def test_q_attention_masks_past_and_present(unidirectional, past):
    seq = 2 if past else S
    total = seq + (3 if past else 0)
    mask = np.ones((B, total), np.int32)
    mask[1, 0] = 0
    feeds = _attention_feeds(np.int8, True, False, mask=mask,
                             past=RNG.standard_normal((2, B, N, 3, DIN // N)).astype(np.float32) if past else None,
                             seq=seq)
    assert_ms_matches("QAttention", feeds, outputs=["y", "present"], constants=("w", "w_scale", "w_zp"),
                      num_heads=N, unidirectional=unidirectional)


@pytest.mark.parametrize("segments", [True, False])
@pytest.mark.parametrize("mask", [True, False])
def test_q_embed_layer_normalization(segments, mask):
    vocab, positions, hidden = 30, 8, 16
    tables = {"word": (vocab, hidden), "pos": (positions, hidden), "seg": (2, hidden), "gamma": (hidden,),
              "beta": (hidden,)}
    feeds = {"ids": RNG.integers(0, vocab, (B, S)).astype(np.int32),
             "seg_ids": RNG.integers(0, 2, (B, S)).astype(np.int32) if segments else None}
    for name, shape in tables.items():
        feeds[name] = _q(np.uint8, shape) if segments or name != "seg" else None
    feeds["mask"] = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32) if mask else None
    for name in tables:
        feeds[f"{name}_scale"] = np.array(RNG.uniform(0.005, 0.02), np.float32) if segments or name != "seg" else None
    for name in tables:
        feeds[f"{name}_zp"] = _q(np.uint8, ()) if segments or name != "seg" else None
    assert_ms_matches("QEmbedLayerNormalization", feeds, outputs=["y", "mask_index"], epsilon=1e-12)
