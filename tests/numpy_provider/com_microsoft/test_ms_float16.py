"""com.microsoft kernels on float16 inputs against onnxruntime: every output keeps onnxruntime's
dtype and values within float16 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(137)


def h(*shape):
    return RNG.standard_normal(shape).astype(np.float16)


CASES = {
    "Attention": ({"x": h(2, 4, 16), "w": h(16, 48) * np.float16(0.3), "b": h(48)}, ["y"], {"num_heads": 2}),
    "MultiHeadAttention": ({"q": h(2, 3, 16), "k": h(2, 4, 16), "v": h(2, 4, 16)}, ["y"], {"num_heads": 2}),
    "GroupQueryAttention": ({"q": h(1, 1, 64), "k": h(1, 1, 32), "v": h(1, 1, 32), "pk": h(1, 2, 4, 16),
                             "pv": h(1, 2, 4, 16), "sk": np.array([4], np.int32), "t": np.array(5, np.int32)},
                            ["y", "present_key", "present_value"], {"num_heads": 4, "kv_num_heads": 2}),
    "RotaryEmbedding": ({"x": h(2, 3, 32), "p": np.array([1], np.int64), "c": h(8, 8), "s": h(8, 8)}, ["y"], {}),
    "Gelu": ({"x": h(3, 8)}, ["y"], {}),
    "BiasGelu": ({"x": h(3, 8), "b": h(8)}, ["y"], {}),
    "QuickGelu": ({"x": h(3, 8)}, ["y"], {}),
    "SkipSimplifiedLayerNormalization": ({"x": h(2, 3, 8), "s": h(2, 3, 8), "g": h(8)}, ["y", "", "inv_std", "sum"], {}),
    "EmbedLayerNormalization": ({"i": RNG.integers(0, 5, (2, 3)).astype(np.int32), "sg": None, "w": h(5, 8),
                                 "p": h(4, 8), "se": None, "g": h(8), "b": h(8)}, ["y", "mask_index"], {}),
    "MatMulIntegerToFloat": ({"a": RNG.integers(0, 255, (2, 4)).astype(np.uint8),
                              "b": RNG.integers(-127, 127, (4, 3)).astype(np.int8),
                              "as": np.array(0.01, np.float16), "bs": np.array(0.02, np.float16)}, ["y"], {}),
    "FusedMatMul": ({"a": h(3, 4), "b": h(4, 5)}, ["y"], {"alpha": 0.5}),
}


@pytest.mark.parametrize("op_type", list(CASES))
def test_float16(op_type):
    feeds, outputs, attrs = CASES[op_type]
    assert_ms_matches(op_type, feeds, outputs=outputs, rtol=5e-3, atol=5e-3, **attrs)
