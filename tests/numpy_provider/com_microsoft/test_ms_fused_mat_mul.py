"""com.microsoft FusedMatMul against onnxruntime: alpha, transA / transB, transBatchA / transBatchB,
broadcasting batch axes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(101)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("alpha", [1.0, 0.25])
def test_transposes_and_alpha(trans_a, trans_b, alpha):
    a = _r(2, 3, 6, 5) if trans_a else _r(2, 3, 5, 6)
    b = _r(3, 4, 6) if trans_b else _r(3, 6, 4)
    assert_ms_matches("FusedMatMul", {"a": a, "b": b}, alpha=alpha, transA=trans_a, transB=trans_b)


@pytest.mark.parametrize("trans_batch_a,trans_batch_b", [(1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 1)])
def test_batch_transposes(trans_batch_a, trans_batch_b, trans_a, trans_b):
    # after the batch move: A [2, 3, 5, 6] (or its transpose), B [2, 3, 6, 4]
    a = _r(5, 2, 3, 6) if trans_batch_a else _r(2, 3, 5, 6)
    if trans_a:
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if not trans_batch_a else _r(6, 2, 3, 5)
    b = _r(6, 2, 3, 4) if trans_batch_b else _r(2, 3, 6, 4)
    if trans_b:
        b = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if not trans_batch_b else _r(4, 2, 3, 6)
    assert_ms_matches("FusedMatMul", {"a": a, "b": b}, alpha=0.5, transA=trans_a, transB=trans_b,
                      transBatchA=trans_batch_a, transBatchB=trans_batch_b)


def test_vectors():
    assert_ms_matches("FusedMatMul", {"a": _r(6), "b": _r(2, 6, 3)}, alpha=2.0)
    assert_ms_matches("FusedMatMul", {"a": _r(4, 6), "b": _r(6)}, alpha=2.0)
