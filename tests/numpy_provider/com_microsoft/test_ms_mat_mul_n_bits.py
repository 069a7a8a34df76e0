"""com.microsoft MatMulNBits against onnxruntime: 4 bits 8 and 2, block sizes 16 / 32 / 128, K not a multiple of the block, zero points absent, packed or
float, bias, A of rank 2 and 3, float16 A."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import NotImplementedOpError
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches, ms_model, ours_run

RNG = np.random.default_rng(53)


def _feeds(k, n, block, bits=4, zero_points=None, bias=False, a_shape=(3,), dtype=np.float32):
    blocks = -(-k // block)
    feeds = {
        "a": RNG.standard_normal((*a_shape, k)).astype(dtype),
        "b": RNG.integers(0, 256, (n, blocks, block * bits // 8)).astype(np.uint8),
        "scales": RNG.uniform(0.01, 0.1, n * blocks).astype(dtype),
        "zp": None,
    }
    if zero_points == "packed":
        feeds["zp"] = RNG.integers(0, 256, n * (-(-blocks * bits // 8))).astype(np.uint8)
    elif zero_points == "float":
        feeds["zp"] = RNG.uniform(0, 1 << bits, n * blocks).astype(dtype)
    if bias:
        feeds["g_idx"] = None
        feeds["bias"] = RNG.standard_normal(n).astype(dtype)
    return feeds


@pytest.mark.parametrize("block", [16, 32, 128])
@pytest.mark.parametrize("zero_points", [None, "packed"])
@pytest.mark.parametrize("k", [128, 200])
@pytest.mark.parametrize("weights_constant", [False, True])  # dequantized at session creation
def test_four_bits(block, zero_points, k, weights_constant):
    n = 24
    constants = ("b", "scales") + (("zp",) if zero_points else ()) if weights_constant else ()
    assert_ms_matches("MatMulNBits", _feeds(k, n, block, zero_points=zero_points), K=k, N=n, bits=4, block_size=block,
                      constants=constants)


@pytest.mark.parametrize("zero_points", [None, "packed", "float"])
def test_bias_rank_3_and_float_zero_points(zero_points):
    k, n, block = 96, 40, 32
    feeds = _feeds(k, n, block, zero_points=zero_points, bias=True, a_shape=(2, 5))
    assert_ms_matches("MatMulNBits", feeds, K=k, N=n, bits=4, block_size=block)


@pytest.mark.parametrize("bits", [8, 2])
def test_other_widths(bits):
    k, n, block = 64, 16, 32
    feeds = _feeds(k, n, block, bits=bits, zero_points="packed")
    assert_ms_matches("MatMulNBits", feeds, K=k, N=n, bits=bits, block_size=block)


@pytest.mark.parametrize("zero_points", [None, "float"])
@pytest.mark.parametrize("order", ["blocked", "shuffled"])
def test_g_idx(order, zero_points):
    k, n, block = 64, 8, 16
    feeds = _feeds(k, n, block, zero_points=zero_points)
    g_idx = np.arange(k, dtype=np.int32) // block
    if order == "shuffled":
        g_idx = RNG.permutation(g_idx).astype(np.int32)
    feeds["g_idx"] = g_idx
    assert_ms_matches("MatMulNBits", feeds, K=k, N=n, bits=4, block_size=block)


def test_float16_a():
    k, n, block = 64, 16, 16
    assert_ms_matches("MatMulNBits", _feeds(k, n, block, dtype=np.float16), rtol=5e-3, atol=5e-3,
                      K=k, N=n, bits=4, block_size=block)


def test_three_bits_refused_by_name():
    feeds = _feeds(64, 16, 32)
    with pytest.raises(NotImplementedOpError, match="bits=3"):
        ours_run(ms_model("MatMulNBits", feeds, K=64, N=16, bits=3, block_size=32), feeds, [feeds["a"]])


def test_g_idx_with_packed_zero_points_refused():
    feeds = _feeds(64, 8, 16, zero_points="packed")
    feeds["g_idx"] = np.arange(64, dtype=np.int32) // 16
    with pytest.raises(NotImplementedOpError, match="g_idx"):
        ours_run(ms_model("MatMulNBits", feeds, K=64, N=8, bits=4, block_size=16), feeds, [feeds["a"]])
