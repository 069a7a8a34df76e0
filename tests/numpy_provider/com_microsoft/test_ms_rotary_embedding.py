"""com.microsoft RotaryEmbedding against onnxruntime: 3-D and 4-D input, interleaved or halves,
position_ids per token or one start offset, partial rotation with num_heads."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(89)
B, S, N, H, MAX = 2, 5, 3, 8, 16


def _caches(width):
    angles = RNG.uniform(0, 6, (MAX, width)).astype(np.float32)
    return np.cos(angles), np.sin(angles)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("positions", ["per_token", "offset"])
def test_rotary_embedding(interleaved, rank, positions):
    x = RNG.standard_normal((B, S, N * H) if rank == 3 else (B, N, S, H)).astype(np.float32)
    pos = RNG.integers(0, MAX, (B, S)).astype(np.int64) if positions == "per_token" else np.array([4], np.int64)
    cos, sin = _caches(H // 2)
    assert_ms_matches("RotaryEmbedding", {"x": x, "pos": pos, "cos": cos, "sin": sin}, interleaved=interleaved)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_partial_rotation(interleaved):
    x = RNG.standard_normal((B, S, N * H)).astype(np.float32)
    cos, sin = _caches(2)
    pos = RNG.integers(0, MAX, (B, S)).astype(np.int64)
    assert_ms_matches("RotaryEmbedding", {"x": x, "pos": pos, "cos": cos, "sin": sin}, interleaved=interleaved,
                      num_heads=N, rotary_embedding_dim=4)
