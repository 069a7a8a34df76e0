"""GlobalAveragePool of the numpy provider: float32/float64 rows summed by a BLAS product with a
vector of ones, against onnxruntime; non-finite values and strided inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.numpy_provider.single_node_oracle import assert_matches_oracle, node_model, run_ours

RNG = np.random.default_rng(414)


@pytest.mark.parametrize("shape", [(8, 16, 32, 32), (1, 512, 7, 7), (2, 1280, 7, 7), (3, 5, 9), (2, 3, 4, 5, 2),
                                   (1, 1, 1, 1), (4, 3, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_onnxruntime_and_the_exact_mean(shape, dtype):
    """Against onnxruntime, and against the float64 mean within a few float32 ulp (onnxruntime's own
    float32 sums are off by ~1e-6 on 1024 values around 50)."""
    # an offset far above the spread: a sum that lost low bits would show
    x = (RNG.standard_normal(shape) * 3 + 50).astype(dtype)
    assert_matches_oracle("GlobalAveragePool", {"x": x}, rtol=1e-5 if dtype == np.float32 else 1e-12,
                          atol=0, opset=13)
    exact = x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True)
    (ours,) = run_ours(node_model("GlobalAveragePool", {"x": x}, opset=13), {"x": x}, like=[exact.astype(dtype)])
    np.testing.assert_allclose(ours, exact, rtol=5e-7 if dtype == np.float32 else 1e-14, atol=0)


def test_non_finite_values_stay_in_their_own_channel():
    x = RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    x[1, 2, 0, 0] = np.inf
    x[1, 3, 5, 5] = np.inf
    x[1, 3, 0, 1] = -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf in the expected means
        expected = np.mean(x, axis=(2, 3), keepdims=True)
    (ours,) = run_ours(node_model("GlobalAveragePool", {"x": x}, opset=13), {"x": x}, like=[expected])
    assert np.isnan(ours[0, 1, 0, 0]) and ours[1, 2, 0, 0] == np.inf and np.isnan(ours[1, 3, 0, 0])
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(ours), finite)
    np.testing.assert_allclose(ours[finite], expected[finite], rtol=1e-5, atol=1e-6)


def test_strided_input_is_read_as_its_values():
    base = RNG.standard_normal((2, 8, 10, 12)).astype(np.float32)
    x = base[:, ::2, 1:9, ::3]  # what another kernel may hand over
    from onnxplug.providers.numpy.ops.ai_onnx.op_global_average_pool import GlobalAveragePool
    got = GlobalAveragePool.compute(None, x)
    np.testing.assert_allclose(got, x.astype(np.float64).mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32 and got.shape == (2, 4, 1, 1)
