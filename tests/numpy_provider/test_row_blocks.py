"""Kernels that run in cache-sized blocks of rows give the same values as on the whole tensor."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.ops._blocks import BLOCK_ELEMENTS, by_row_blocks
from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("shape", [(3, 40_000), (37, 1000), (4, 9, 1000), (70_000,), (0, 5), (5, 0)])
def test_blocks_equal_the_whole_computation(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    bias = RNG.standard_normal(shape[-1:]).astype(np.float32)

    def fn(block):
        y = np.tanh(block + bias)
        y *= block
        return y - block.sum(axis=-1, keepdims=True)  # a per-row reduction too

    np.testing.assert_array_equal(by_row_blocks(fn, x), fn(x))


def test_large_inputs_really_go_in_several_blocks():
    x = RNG.standard_normal((64, 1024)).astype(np.float32)
    sizes = []
    by_row_blocks(lambda block: sizes.append(block.shape[0]) or block, x)
    assert len(sizes) == -(-x.size // BLOCK_ELEMENTS) and sum(sizes) == 64


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_on_a_tensor_of_many_blocks_matches_onnxruntime(approximate):
    x = (3 * RNG.standard_normal((96, 1024))).astype(np.float32)
    assert_matches_oracle("Gelu", {"x": x}, opset=20, approximate=approximate, rtol=1e-5, atol=1e-6)


def test_erf_on_a_tensor_of_many_blocks_matches_onnxruntime():
    x = (2 * RNG.standard_normal((80, 1000))).astype(np.float32)
    assert_matches_oracle("Erf", {"x": x}, rtol=1e-5, atol=1e-6)
