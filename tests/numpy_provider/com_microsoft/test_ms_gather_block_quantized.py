"""com.microsoft GatherBlockQuantized against onnxruntime: uint8 data of 4 and 8 bits, zero points
absent or packed, block sizes, index shapes, float16 scales."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(127)
ROWS, WIDTH = 10, 64


def _feeds(bits, block, zero_points, indices, dtype=np.float32):
    per_byte = 8 // bits
    blocks = -(-WIDTH // block)
    return {"data": RNG.integers(0, 256, (ROWS, WIDTH // per_byte)).astype(np.uint8), "indices": indices,
            "scales": RNG.uniform(0.01, 0.1, (ROWS, blocks)).astype(dtype),
            "zp": RNG.integers(0, 256, (ROWS, -(-blocks // per_byte))).astype(np.uint8) if zero_points else None}


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("block", [16, 32])
@pytest.mark.parametrize("zero_points", [False, True])
@pytest.mark.parametrize("indices", [np.array([3, 0, 9, 3], np.int64), np.array([[1, 2], [8, 5]], np.int32)])
def test_gather_block_quantized(bits, block, zero_points, indices):
    feeds = _feeds(bits, block, zero_points, indices)
    assert_ms_matches("GatherBlockQuantized", feeds, constants=("data", "scales", "zp"), bits=bits, block_size=block,
                      gather_axis=0, quantize_axis=1)


def test_float16_scales():
    feeds = _feeds(4, 32, True, np.array([1, 7], np.int64), np.float16)
    assert_ms_matches("GatherBlockQuantized", feeds, constants=("data", "scales", "zp"), rtol=1e-3, atol=1e-3,
                      bits=4, block_size=32)
