"""Transpose of the numpy provider as a tiled matrix transpose (kernels/tiled_transpose.py) against
onnxruntime: channels-last images going channels-first, batched ones, size-1 axes and merged axes;
permutations that are no matrix transpose, or whose input rows are long, keep numpy's copy.
Expected values come from onnxruntime only."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from onnxplug.providers.numpy.kernels import tiled_transpose as tiled
from onnxplug.providers.numpy.ops.ai_onnx import op_transpose
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from tests.numpy_provider.single_node_oracle import assert_matches_oracle

RNG = np.random.default_rng(5)

# (name, x shape, perm, whether the tiled copy runs)
CASES = [
    ("nhwc to nchw", (1, 50, 38, 64), [0, 3, 1, 2], True),
    ("nhwc to nchw batch 3 odd", (3, 37, 29, 24), [0, 3, 1, 2], True),
    ("channels 7", (1, 97, 61, 7), [0, 3, 1, 2], True),
    ("2-D", (4099, 5), [1, 0], True),
    ("size-1 axes kept apart", (1, 60, 1, 70, 8), [2, 4, 0, 1, 3], True),
    ("merged leading and trailing axes", (2, 3, 40, 30, 4, 6), [0, 1, 4, 5, 2, 3], True),
    ("long rows keep numpy's copy", (1, 8, 40, 300), [0, 3, 1, 2], False),
    ("output last axis of 3", (1, 3, 90, 80), [0, 2, 3, 1], False),
    ("not a matrix transpose", (6, 20, 30, 8), [3, 1, 0, 2], False),
    ("small", (1, 8, 8, 16), [0, 3, 1, 2], False),
]


@pytest.mark.parametrize("name,shape,perm,tiled_copy", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8], ids=["float32", "int64", "uint8"])
def test_transpose_matches_onnxruntime(monkeypatch, name, shape, perm, tiled_copy, dtype):
    calls = []
    real = op_transpose.tiled_transpose
    monkeypatch.setattr(op_transpose, "tiled_transpose", lambda *a: calls.append(a[2:5]) or real(*a))
    x = (RNG.standard_normal(shape) * 100).astype(dtype)
    assert_matches_oracle("Transpose", {"x": x}, rtol=0, atol=0, opset=17, perm=perm)
    assert bool(calls) == tiled_copy, calls


def test_stripes_split_over_the_product_threads(monkeypatch, parallel_for_calls):
    monkeypatch.setattr(PRODUCT_THREADS, "threads", 2)
    splits = parallel_for_calls(tiled)
    x = RNG.standard_normal((2, 200, 160, 48)).astype(np.float32)
    assert_matches_oracle("Transpose", {"x": x}, rtol=0, atol=0, opset=17, perm=[0, 3, 1, 2])
    assert splits and splits[-1][1], splits


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_matrix_transpose_reading_of_every_permutation(ndim):
    """Every permutation of small shapes (size-1 axes included): where matrix_transpose gives
    (batch, rows, cols), the reshaped transpose and the tiled copy equal numpy's transpose."""
    for shape in itertools.product((1, 2, 3), repeat=ndim):
        x = np.arange(int(np.prod(shape))).reshape(shape)
        for axes in itertools.permutations(range(ndim)):
            found = tiled.matrix_transpose(shape, axes)
            if found is None:
                continue
            out = np.empty(x.transpose(axes).shape, x.dtype)
            tiled.tiled_transpose(x, out, *found, 1)
            np.testing.assert_array_equal(out, x.transpose(axes))
