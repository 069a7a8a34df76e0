"""com.microsoft EmbedLayerNormalization against onnxruntime: with and without segments, mask,
position ids ([B, S] and [1, S]), and the embedding_sum output."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import KernelError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run

RNG = np.random.default_rng(31)
B, S, H, VOCAB, POS = 3, 6, 16, 50, 10


def _feeds(segments=True, mask=True, position_ids=None):
    return {
        "ids": RNG.integers(0, VOCAB, (B, S)).astype(np.int32),
        "seg": RNG.integers(0, 2, (B, S)).astype(np.int32) if segments else None,
        "word": RNG.standard_normal((VOCAB, H)).astype(np.float32),
        "pos": RNG.standard_normal((POS, H)).astype(np.float32),
        "segemb": RNG.standard_normal((2, H)).astype(np.float32) if segments else None,
        "gamma": RNG.standard_normal(H).astype(np.float32),
        "beta": RNG.standard_normal(H).astype(np.float32),
        "mask": np.array([[1] * S, [1] * 4 + [0] * 2, [1] + [0] * (S - 1)], np.int32) if mask else None,
        "position_ids": position_ids,
    }


@pytest.mark.parametrize("segments", [True, False])
@pytest.mark.parametrize("mask", [True, False])
def test_outputs(segments, mask):
    assert_ms_matches("EmbedLayerNormalization", _feeds(segments, mask), outputs=["y", "mask_index", "sum"])
    assert_ms_matches("EmbedLayerNormalization", _feeds(segments, mask), outputs=["y", "mask_index"], epsilon=1e-5)


@pytest.mark.parametrize("shape", [(B, S), (1, S)])
def test_position_ids(shape):
    ids = RNG.integers(0, POS, shape).astype(np.int32)
    assert_ms_matches("EmbedLayerNormalization", _feeds(position_ids=ids), outputs=["y", "mask_index", "sum"])


def test_out_of_range_ids_are_refused():
    feeds = _feeds()
    feeds["ids"][0, 0] = VOCAB
    with pytest.raises(KernelError, match="EmbedLayerNormalization.*input_ids out of range"):
        ours_run(ms_model("EmbedLayerNormalization", feeds, outputs=["y", "m"]), feeds,
                 [np.zeros((B, S, H), np.float32), np.zeros(B, np.int32)])
