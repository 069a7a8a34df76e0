"""com.microsoft MurmurHash3 against onnxruntime: int32, uint32 and string keys (every tail length),
seeds, positive or signed output."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(139)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("seed", [0, 42, -7])
@pytest.mark.parametrize("positive", [0, 1])
def test_integer_keys(dtype, seed, positive):
    info = np.iinfo(dtype)
    keys = RNG.integers(info.min, info.max, (3, 7), dtype=np.int64).astype(dtype)
    assert_ms_matches("MurmurHash3", {"x": keys}, rtol=0, atol=0, seed=seed, positive=positive)


@pytest.mark.parametrize("seed", [0, 1234567])
@pytest.mark.parametrize("positive", [0, 1])
def test_string_keys(seed, positive):
    keys = np.array(["", "a", "ab", "abc", "abcd", "abcde", "héllo wörld", "the quick brown fox"], dtype=object)
    assert_ms_matches("MurmurHash3", {"x": keys}, rtol=0, atol=0, seed=seed, positive=positive)
