"""Kept weights on a cache-line boundary (blas.aligned, blas.aligned_empty): the recurrent kernels'
step weights, which OpenBLAS's gemv and small-matrix kernels read in place, and the helpers
themselves (alignment, values, shapes, the copy made only when needed)."""

from __future__ import annotations

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.providers.numpy.runtime.blas import ALIGNMENT, aligned, aligned_empty
from onnxplug.providers.numpy.ops.ai_onnx.op_gru import GRU
from onnxplug.providers.numpy.ops.ai_onnx.op_lstm import LSTM
from onnxplug.testing import model_suite


def _offset_copy(a: np.ndarray, offset: int) -> np.ndarray:
    """A C-contiguous copy of ``a`` starting ``offset`` bytes past a cache line."""
    buf = np.empty(a.nbytes + 2 * ALIGNMENT, dtype=np.uint8)
    start = -buf.ctypes.data % ALIGNMENT + offset
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5), (128, 384), (2, 4, 128, 128)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex64])
def test_aligned_empty(shape, dtype):
    for _ in range(4):  # fresh allocations land at different offsets
        a = aligned_empty(shape, dtype)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
        assert a.size == 0 or a.ctypes.data % ALIGNMENT == 0  # (an empty array's address is moot)


@pytest.mark.parametrize("offset", [4, 16, 32, 48])
def test_aligned_copies_a_misaligned_array(offset):
    src = _offset_copy(np.arange(384 * 128, dtype=np.float32).reshape(384, 128), offset)
    assert src.ctypes.data % ALIGNMENT == offset
    out = aligned(src)
    assert out is not src and out.ctypes.data % ALIGNMENT == 0
    np.testing.assert_array_equal(out, src)
    assert out.dtype == src.dtype and out.shape == src.shape


def test_aligned_keeps_an_aligned_array_and_copies_strided_ones():
    a = aligned_empty((64, 32), np.float32)
    a[...] = 1.5
    assert aligned(a) is a
    strided = a.T  # not C-contiguous
    out = aligned(strided)
    assert out.flags.c_contiguous and out.ctypes.data % ALIGNMENT == 0
    np.testing.assert_array_equal(out, strided)
    objects = np.array([["a", None], [1, 2.5]], dtype=object).T
    out = aligned(objects)
    assert out.flags.c_contiguous and out.tolist() == objects.tolist()


@pytest.mark.parametrize("kernel_class", [GRU, LSTM])
def test_recurrent_derived_weights_are_aligned(kernel_class):
    kernel = kernel_class.__new__(kernel_class)
    kernel._derived = {}
    weights = np.random.default_rng(0).standard_normal((1, 128, 384)).astype(np.float32)
    misaligned = _offset_copy(weights, 16)
    got = kernel.derived("rt_scaled", (weights,), lambda: misaligned)
    assert got.ctypes.data % ALIGNMENT == 0
    np.testing.assert_array_equal(got, weights)
    assert kernel.derived("rt_scaled", (weights,), lambda: 1 / 0) is got  # cached
    pair = kernel.derived("bias", (weights,), lambda: (None, misaligned))  # non-arrays as they are
    assert pair[1] is misaligned


@pytest.mark.parametrize("name,batch", [("gru", 1), ("gru", 8), ("bilstm", 1), ("bilstm", 8)])
def test_suite_recurrent_models_keep_aligned_step_weights(name, batch):
    session = ort.InferenceSession(model_suite.build(name).SerializeToString(), providers=["numpy"])
    session.run(None, model_suite.sample_inputs(name, batch))
    kept = [value for step in session.engine.plan.steps if isinstance(step.kernel, (GRU, LSTM))
            for _, value in step.kernel._derived.values() if isinstance(value, np.ndarray)]
    assert len(kept) >= 3
    assert all(value.ctypes.data % ALIGNMENT == 0 for value in kept)
