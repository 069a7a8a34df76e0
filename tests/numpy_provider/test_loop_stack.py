"""The Loop kernel's stacking of scan outputs: np.stack's result and errors, by a faster route."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.ops.ai_onnx.op_loop import _stack


@pytest.mark.parametrize("shape,count", [((1, 64), 16), ((3,), 1), ((2, 0, 4), 3), ((), 5), ((5, 2), 2)])
def test_stack_equals_np_stack(shape, count):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]
    got = _stack(values)
    expected = np.stack(values)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_stack_of_views_and_mixed_dtypes_equals_np_stack():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    values = [base[:, ::2], base[:, 1::2].astype(np.float64)]  # strided views, float32 + float64
    np.testing.assert_array_equal(_stack(values), np.stack(values))
    assert _stack(values).dtype == np.float64


def test_stack_of_different_shapes_fails_as_np_stack_does():
    values = [np.zeros((1, 64), np.float32), np.zeros((2, 64), np.float32)]  # concatenable, not stackable
    with pytest.raises(ValueError, match="same shape"):
        _stack(values)
