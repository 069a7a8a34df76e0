"""com.microsoft MatMulBnb4 against onnxruntime: FP4 and NF4 code books, block sizes, K x N whose
product is odd or not a multiple of the block, weights as inputs and as initializers, A of rank 2 and 3."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(157)


@pytest.mark.parametrize("quant_type", [0, 1])
@pytest.mark.parametrize("block", [16, 64])
@pytest.mark.parametrize("k,n", [(32, 8), (40, 7), (33, 5)])
@pytest.mark.parametrize("constant", [False, True])
def test_mat_mul_bnb4(quant_type, block, k, n, constant):
    count = k * n
    feeds = {"a": RNG.standard_normal((2, 3, k)).astype(np.float32),
             "b": RNG.integers(0, 256, (count + 1) // 2).astype(np.uint8),
             "absmax": RNG.uniform(0.1, 2.0, -(-count // block)).astype(np.float32)}
    assert_ms_matches("MatMulBnb4", feeds, constants=("b", "absmax") if constant else (), K=k, N=n,
                      block_size=block, quant_type=quant_type)
