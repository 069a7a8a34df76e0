"""Row sums as one BLAS product with a vector of ones: ReduceSum and ReduceMean over trailing axes
of float32/float64 data (``_nn_util.trailing_sums``; the cases it declines keep numpy's
reduction), Softmax along the last axis, and the means of InstanceNormalization,
GroupNormalization and LayerNormalization over trailing axes, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.errors import OnnxplugError
from onnxplug.providers.numpy.ops._nn_util import trailing_sums
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, node_model, run_ours

RNG = np.random.default_rng(1313)

# (x shape, axes): every case reduces the last axes, not all of them
TRAILING = [((128, 256), [-1]), ((4, 8, 49), [2]), ((2, 3, 4, 5), [2, 3]), ((2, 3, 4, 5), [3, 2]),
            ((5, 1, 7), [1, 2]), ((3, 6), [1]), ((2, 2, 1), [-1])]


@pytest.mark.parametrize("shape,axes", TRAILING)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trailing_axes_match_onnxruntime(shape, axes, keepdims, op_type, dtype):
    x = (RNG.standard_normal(shape) * 3 + 20).astype(dtype)
    feeds = {"x": x, "axes": np.asarray(axes, np.int64)}
    assert_matches_oracle(op_type, feeds, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=0, opset=18,
                          keepdims=keepdims)


@pytest.mark.parametrize("shape,axes", TRAILING)
def test_trailing_sums_are_the_sums(shape, axes):
    x = (RNG.standard_normal(shape) * 3 + 20).astype(np.float32)
    for keepdims in (False, True):
        got = trailing_sums(x, tuple(axes), keepdims)
        exact = x.astype(np.float64).sum(axis=tuple(axes), keepdims=keepdims)
        assert got is not None and got.shape == exact.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, exact, rtol=5e-7, atol=1e-5)


def test_non_finite_values_stay_in_their_own_rows():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[1, 2], x[2, 0], x[3, 1], x[3, 4] = np.nan, np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):  # inf - inf; the executor runs kernels with warnings off
        got = trailing_sums(x, (1,), False)
    assert np.isfinite(got[0]) and np.isnan(got[1]) and got[2] == np.inf and np.isnan(got[3])


@pytest.mark.parametrize("case,x,axes", [
    ("leading axis", np.ones((3, 4), np.float32), (0,)),
    ("every axis", np.ones((3, 4), np.float32), (0, 1)),
    ("a middle axis", np.ones((2, 3, 4), np.float32), (1,)),
    ("no axes", np.ones((3, 4), np.float32), None),
    ("empty axes", np.ones((3, 4), np.float32), ()),
    ("integers", np.ones((3, 4), np.int32), (1,)),
    ("float16", np.ones((3, 4), np.float16), (1,)),
    ("not contiguous", np.ones((3, 8), np.float32)[:, ::2], (1,)),
    ("empty", np.ones((0, 4), np.float32), (1,)),
    ("axis out of range", np.ones((3, 4), np.float32), (2,)),
    ("repeated axis", np.ones((3, 4), np.float32), (1, 1)),
])
def test_other_reductions_are_left_to_numpy(case, x, axes):
    assert trailing_sums(x, axes, True) is None, case


def test_out_of_range_axis_still_raises_through_the_kernel():
    feeds = {"x": np.ones((3, 4), np.float32), "axes": np.asarray([5], np.int64)}
    with pytest.raises(OnnxplugError, match="axis 5"):
        run_ours(node_model("ReduceSum", feeds, opset=18), feeds, like=[np.ones(3, np.float32)])


@pytest.mark.parametrize("shape", [(512, 128), (2, 3, 7, 33), (64, 1000), (5, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_along_the_last_axis_matches_onnxruntime(shape, dtype):
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    assert_matches_oracle("Softmax", {"x": x}, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7, opset=13)


def test_softmax_rows_with_infinities_match_onnxruntime():
    """A row of -inf and a row holding +inf give onnxruntime's NaNs, the other rows their values."""
    x = RNG.standard_normal((4, 9)).astype(np.float32)
    x[1] = -np.inf
    x[2, 3] = np.inf
    (ours,) = assert_matches_oracle("Softmax", {"x": x}, rtol=1e-6, atol=1e-7, opset=13)
    assert np.isnan(ours[1]).all() and np.isnan(ours[2, 3]) and np.isfinite(ours[[0, 3]]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalizations_over_trailing_axes_match_onnxruntime(dtype):
    # an offset far above the spread: a mean or variance that lost low bits would show
    x = (RNG.standard_normal((2, 8, 14, 14)) * 2 + 30).astype(dtype)
    scale, bias = RNG.standard_normal(8).astype(dtype), RNG.standard_normal(8).astype(dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    assert_matches_oracle("InstanceNormalization", {"x": x, "s": scale, "b": bias}, rtol=rtol, atol=rtol, opset=6)
    # onnxruntime takes GroupNormalization's statistics in float32 (stash_type 1) also for float64
    assert_matches_oracle("GroupNormalization", {"x": x, "s": scale, "b": bias}, rtol=1e-4, atol=1e-4, opset=21,
                          num_groups=4)
    ln_scale, ln_bias = RNG.standard_normal((14, 14)).astype(dtype), RNG.standard_normal((14, 14)).astype(dtype)
    assert_matches_oracle("LayerNormalization", {"x": x, "s": ln_scale, "b": ln_bias}, rtol=rtol, atol=rtol,
                          opset=17, axis=2)
