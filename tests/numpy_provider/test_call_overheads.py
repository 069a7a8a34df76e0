"""The numpy provider's cheaper call paths give what the numpy calls they replace give."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from onnxplug.providers.numpy.ops._strided import strided_view
from onnxplug.providers.numpy.ops.op_fused_activation import apply_activation


def test_strided_view_matches_as_strided_on_a_contiguous_base():
    base = np.arange(200, dtype=np.float32).reshape(10, 20)
    shape, strides = (3, 2, 4, 5), (80, 4, 80, 4)
    view = strided_view(base, shape, strides, offset=7)
    np.testing.assert_array_equal(view, as_strided(base.reshape(-1)[7:], shape, strides))
    assert not view.flags.writeable
    assert np.shares_memory(view, base)


def test_strided_view_is_writeable_when_asked():
    base = np.zeros(12, dtype=np.float64)
    view = strided_view(base, (3, 2), (32, 8), offset=1, writeable=True)
    view[...] = 1
    np.testing.assert_array_equal(base, [0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0])


def test_strided_view_refuses_a_view_that_leaves_a_contiguous_base():
    base = np.zeros((4, 8), dtype=np.float32)
    with pytest.raises(ValueError):
        strided_view(base, (4, 9), (32, 4))  # the last row would read one value past the end
    with pytest.raises(ValueError):
        strided_view(base, (4, 8), (32, 4), offset=1)


def test_strided_view_of_a_non_contiguous_base():
    base = np.arange(64, dtype=np.float32).reshape(8, 8)[:, 2:6]
    view = strided_view(base, (2, 4), (64, 4))
    np.testing.assert_array_equal(view, as_strided(base, (2, 4), (64, 4)))
    with pytest.raises(ValueError):
        strided_view(base, (2, 4), (64, 4), offset=1)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("params", [[0.0, 6.0], [-1.5], [], [-np.inf, np.inf], [2.0, 1e40]])
def test_clip_activation_matches_np_clip(dtype, params):
    x = np.array([-np.inf, -1e4, -2.0, -0.0, 0.5, 3.0, 7.0, 6e4, np.inf, np.nan], dtype=dtype)
    info = np.finfo(dtype)
    low = max(params[0], float(info.min)) if params else info.min
    high = min(params[1], float(info.max)) if len(params) > 1 else info.max
    expected = np.clip(x, dtype(low), dtype(high))
    got = apply_activation(x.copy(), "Clip", params)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


def test_clip_activation_works_in_place_and_copies_read_only_inputs():
    x = np.array([-1.0, 9.0], dtype=np.float32)
    assert apply_activation(x, "Clip", [0.0, 6.0]) is x
    np.testing.assert_array_equal(x, [0.0, 6.0])
    frozen = np.array([-1.0, 9.0], dtype=np.float32)
    frozen.flags.writeable = False
    out = apply_activation(frozen, "Clip", [0.0, 6.0])
    np.testing.assert_array_equal(out, [0.0, 6.0])
    np.testing.assert_array_equal(frozen, [-1.0, 9.0])
