"""The float32 GELU (x Phi(x), Phi through tanh of a fitted logit) against math.erf, onnxruntime
and its edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxplug.providers.numpy.ops._special_math import gelu
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_gelu import gelu_in_blocks
import onnxplug
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, kernels_only
from tests.oracle import ort_outputs

GRID = np.linspace(-12, 12, 480_001).astype(np.float32)  # steps of 5e-5, tails included


def _exact_gelu(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(np.float64)])


def test_gelu_is_within_one_micro_of_math_erf_on_a_dense_grid():
    y = gelu(GRID, "none")
    assert y.dtype == np.float32
    err = np.abs(y.astype(np.float64) - _exact_gelu(GRID))
    assert err.max() <= 1.2e-6
    # where GELU is tiny (the negative tail), the error is Phi's times |x|: Phi within 2.5e-7
    assert (err / np.maximum(np.abs(GRID), 1.0)).max() <= 2.5e-7


def test_fitted_logit_is_positive_and_increasing_so_tails_saturate():
    """Phi is computed as (1 + tanh(x P(x^2) / 2)) / 2, P fitted on |x| <= 6: beyond, the tails are
    right only if x P(x^2) keeps growing (a fit of lower degree turns negative past its range)."""
    from onnxplug.providers.numpy.ops._special_math import _LOGIT_PHI
    x = np.concatenate([np.linspace(0, 60, 600_001), np.geomspace(61, 1e19, 1000)])
    p = np.polynomial.polynomial.polyval(x * x, _LOGIT_PHI)
    assert (p > 0).all()
    assert (np.diff(p) > 0).all()  # P increasing, as _special_math says
    assert (np.diff(x * p) > 0).all()
    # past |x| = 6 Phi is 0 or 1 to float32: there the half logit only has to saturate tanh
    assert np.tanh(np.float32((x * p)[x >= 6].min() / 2)) == 1


def test_phi_implied_by_gelu_is_within_erf_accuracy_near_zero():
    x = np.linspace(-1, 1, 20_001).astype(np.float32)
    x = x[np.abs(x) > 1e-3]
    phi = gelu(x, "none").astype(np.float64) / x.astype(np.float64)
    expected = np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(np.float64)])
    np.testing.assert_allclose(phi, expected, rtol=0, atol=3e-7)


def test_gelu_saturates_exactly_and_keeps_nan_and_infinities():
    x = np.array([-1e30, -50.0, -8.0, -6.0, 5.5, 8.0, 1e30, np.inf, np.nan, 0.0], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = gelu(x, "none")
    # -0 like onnxruntime's x / 2 (1 + erf) once its erf rounds to -1 (from -5.5; tanh from ~-5.7)
    np.testing.assert_array_equal(y[:4], 0.0)
    np.testing.assert_array_equal(y[4:8], x[4:8])
    assert np.isnan(y[8]) and y[9] == 0.0


def test_non_finite_values_inside_large_blocks_saturate_or_stay_nan():
    """NaN, infinities and huge values (whose squares overflow) spread through blocks of 128K values
    give NaN, x or 0, and their neighbours keep their values."""
    rng = np.random.default_rng(13)
    x = (3 * rng.standard_normal((300, 1024))).astype(np.float32)
    finite = gelu_in_blocks(x, "none")
    spots = rng.choice(x.size, 400, replace=False)
    specials = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38, -3e38, 6.0], np.float32)
    x.reshape(-1)[spots] = specials[np.arange(spots.size) % specials.size]
    with np.errstate(invalid="ignore", over="ignore"):  # as the executor runs kernels
        y = gelu_in_blocks(x, "none").reshape(-1)
    kind = np.arange(spots.size) % specials.size
    assert np.isnan(y[spots[kind == 0]]).all()
    assert np.isnan(y[spots[kind == 2]]).all()  # -inf * Phi(-inf) = -inf * 0
    for k in (1, 3, 5, 7):  # far right: Phi is exactly 1
        np.testing.assert_array_equal(y[spots[kind == k]], specials[k])
    for k in (4, 6):
        np.testing.assert_array_equal(y[spots[kind == k]], 0.0)
    untouched = np.ones(x.size, bool)
    untouched[spots] = False
    np.testing.assert_array_equal(y[untouched], finite.reshape(-1)[untouched])


def test_gelu_of_the_bias_sum_equals_gelu_after_adding_and_leaves_x_alone():
    rng = np.random.default_rng(3)
    x = (3 * rng.standard_normal((5, 64))).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)
    before = x.copy()
    np.testing.assert_array_equal(gelu(x, "none", bias), gelu(x + bias, "none"))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types_stay_accurate(dtype):
    x = np.linspace(-6, 6, 2001).astype(dtype)
    y = gelu(x, "none")
    assert y.dtype == dtype
    tol = 2e-3 if dtype == np.float16 else 1e-12
    np.testing.assert_allclose(y.astype(np.float64), _exact_gelu(x), rtol=tol, atol=tol)


def test_ai_onnx_gelu_matches_onnxruntime_on_the_dense_grid():
    assert_matches_oracle("Gelu", {"x": GRID[::4].copy()}, opset=20, rtol=1e-5, atol=1e-6)


def test_bias_gelu_matches_onnxruntime_com_microsoft_bias_gelu():
    rng = np.random.default_rng(11)
    x = (3 * rng.standard_normal((2, 40, 1024))).astype(np.float32)  # several row blocks
    bias = rng.standard_normal(1024).astype(np.float32)

    def bias_gelu_model(domain: str) -> object:
        node = helper.make_node("BiasGelu", ["x", "bias"], ["y"], domain=domain)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
                          helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1024])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
        return helper.make_model(graph, ir_version=9, opset_imports=[
            helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])

    (expected,) = ort_outputs(bias_gelu_model("com.microsoft"), {"x": x, "bias": bias})
    ours = onnxplug.InferenceSession(bias_gelu_model("com.onnxplug").SerializeToString(), kernels_only(),
                                     providers=["numpy"])
    (actual,) = ours.run(None, {"x": x, "bias": bias})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(3, 100_000), (300, 1000), (2, 150, 1000), (37, 1000), (200_000,), (0, 5), (5, 0), ()])
def test_blocks_of_rows_give_the_whole_tensor_values(shape):
    rng = np.random.default_rng(5)
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    bias = rng.standard_normal(shape[-1:]).astype(np.float32) if shape else None
    np.testing.assert_array_equal(gelu_in_blocks(x, "none", bias), gelu(x, "none", bias))
    np.testing.assert_array_equal(gelu_in_blocks(x, "tanh"), gelu(x, "tanh"))


def test_reused_scratch_contents_never_reach_outputs(poisoned_scratch):
    """The float32 GELU's temporaries live in per-thread scratch, here filled with NaN before every
    use: outputs still equal math.erf's GELU within the accuracy bound, in blocks and whole."""
    x = GRID[:480_000].reshape(-1, 1000)  # four blocks of rows
    expected = _exact_gelu(x.reshape(-1)).reshape(x.shape)
    for y in (gelu_in_blocks(x, "none"), gelu(x, "none")):
        assert not np.isnan(y).any()
        assert np.abs(y - expected).max() <= 1.2e-6


def test_large_tensors_share_their_blocks_over_the_product_threads(monkeypatch, poisoned_scratch, parallel_for_calls):
    """A tensor worth splitting (about 32M multiply-adds' worth of work) goes block by block to both
    product threads, each with its own (here NaN-poisoned) scratch: values equal the whole-tensor
    GELU's bit for bit."""
    from onnxplug.providers.numpy.runtime import blas
    from onnxplug.providers.numpy.ops.com_onnxplug import op_fused_gelu

    monkeypatch.setattr(blas.PRODUCT_THREADS, "threads", 2)
    shared = parallel_for_calls(op_fused_gelu)
    rng = np.random.default_rng(7)
    x = (3 * rng.standard_normal((6, 128, 1024))).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    np.testing.assert_array_equal(gelu_in_blocks(x, "none", bias), gelu(x, "none", bias))
    np.testing.assert_array_equal(gelu_in_blocks(x[:2], "none", bias), gelu(x[:2], "none", bias))
    assert shared == [(6, True), (2, False)]  # 786K values split; 262K values stay on one thread
