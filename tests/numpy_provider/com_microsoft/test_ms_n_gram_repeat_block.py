"""com.microsoft NGramRepeatBlock against onnxruntime: n-gram sizes 1 to 4, repeats and none, short rows."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(151)


@pytest.mark.parametrize("ngram_size", [1, 2, 3, 4])
@pytest.mark.parametrize("seq", [2, 12])
def test_n_gram_repeat_block(ngram_size, seq):
    ids = RNG.integers(0, 4, (3, seq)).astype(np.int64)  # a small vocabulary, so n-grams repeat
    ids[1] = np.arange(seq) % 10  # a row without repeats of length > 1
    scores = RNG.standard_normal((3, 10)).astype(np.float32)
    assert_ms_matches("NGramRepeatBlock", {"ids": ids, "scores": scores}, ngram_size=ngram_size)
