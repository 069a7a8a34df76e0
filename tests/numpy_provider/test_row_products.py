"""Small stride-1 2-D convolutions with enough channels as one accumulating product per kernel row
(``row_products``), against onnxruntime.

A spy on ``padded_rows.conv_padded_rows`` records which scratch each call got, so every case also
checks that the row products ran (or, for the fallbacks, that the padded-rows im2col did), and a
spy on the threaded BLAS checks that kernel rows after the first accumulate."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.kernels.conv import dispatch, padded_rows, row_products
from onnxplug.providers.numpy.kernels.conv.row_products import RowProductsScratch, row_products_weights
from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, assert_same

pytestmark = pytest.mark.skipif(threaded_blas() is None, reason="no threaded BLAS: the row products need it")

RNG = np.random.default_rng(2121)


def f32(*shape: int) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=np.float32)


DEFAULT_MIN_MACS = row_products.MIN_MACS


@pytest.fixture(autouse=True)
def small_cases_take_row_products(monkeypatch):
    """The cases here are small: they take the row products whatever their work (MIN_MACS 0)."""
    monkeypatch.setattr(row_products, "MIN_MACS", 0)


@pytest.mark.parametrize("xs, kind", [((1, 16, 16, 16), "im2col"), ((1, 32, 8, 8), "im2col"),
                                      ((2, 16, 32, 32), "row products"), ((1, 32, 32, 32), "row products")])
def test_little_work_keeps_the_padded_rows_im2col(monkeypatch, scratch_kinds, xs, kind):
    """Under MIN_MACS multiply-adds the kh BLAS calls cost more than the copy they save."""
    monkeypatch.setattr(row_products, "MIN_MACS", DEFAULT_MIN_MACS)
    c = xs[1]
    assert_matches_oracle("Conv", {"x": f32(*xs), "w": f32(c, c, 3, 3), "b": f32(c)}, rtol=1e-4, atol=1e-4,
                          opset=17, pads=[1, 1, 1, 1])
    assert scratch_kinds == [kind]


@pytest.fixture
def scratch_kinds(calls_of) -> list[str]:
    """The kind of scratch ("row products" or "im2col") of every padded-rows call."""
    return calls_of(padded_rows, "conv_padded_rows", lambda x, w, b, scratch, group, epilogue, weights:
                    "row products" if isinstance(scratch, RowProductsScratch) else "im2col")


# (name, x shape, w shape, Conv attributes): all have 16 or more channels in one group
CASES = [
    ("3x3 pads 1, 8 images", (8, 16, 32, 32), (16, 16, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("3x3 pads 1, one image", (1, 16, 32, 32), (16, 16, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("more outputs than inputs, 3 images", (3, 16, 11, 13), (40, 16, 3, 3), dict(pads=[1, 1, 1, 1])),
    ("3x3 valid", (2, 20, 15, 17), (7, 20, 3, 3), {}),
    ("uneven pads", (2, 16, 13, 19), (6, 16, 3, 3), dict(pads=[0, 2, 1, 0])),
    ("5x5 pads 2", (2, 16, 12, 24), (4, 16, 5, 5), dict(pads=[2, 2, 2, 2])),
    ("4x2 even kernel", (2, 16, 12, 18), (5, 16, 4, 2), dict(pads=[1, 0, 2, 1])),
    ("1x3 kernel", (2, 24, 9, 30), (4, 24, 1, 3), dict(pads=[0, 1, 0, 1])),
    ("3x1 kernel", (2, 16, 20, 12), (4, 16, 3, 1), dict(pads=[1, 0, 1, 0])),
    ("dilation 2", (2, 16, 18, 22), (6, 16, 3, 3), dict(dilations=[2, 2], pads=[2, 2, 2, 2])),
    ("dilation 3x1", (2, 16, 19, 16), (4, 16, 3, 3), dict(dilations=[3, 1], pads=[3, 1, 3, 1])),
    ("same upper", (2, 16, 12, 18), (3, 16, 4, 4), dict(auto_pad="SAME_UPPER")),
    ("one output row", (3, 16, 3, 40), (2, 16, 3, 3), dict(pads=[0, 1, 0, 1])),
    ("one output channel", (2, 16, 12, 16), (1, 16, 3, 3), dict(pads=[1, 1, 1, 1])),
]


@pytest.mark.parametrize("name,xs,ws,attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_row_products_match_onnxruntime(scratch_kinds, name, xs, ws, attrs, bias):
    feeds = {"x": f32(*xs), "w": f32(*ws)}
    if bias:
        feeds["b"] = f32(ws[0])
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, **attrs)
    assert scratch_kinds == ["row products"]


def test_float64_row_products(scratch_kinds):
    feeds = {"x": f32(3, 16, 10, 14).astype(np.float64), "w": f32(6, 16, 3, 3).astype(np.float64),
             "b": f32(6).astype(np.float64)}
    assert_matches_oracle("Conv", feeds, oracle="ref", rtol=1e-10, atol=1e-10, opset=17, pads=[1, 1, 1, 1])
    assert scratch_kinds == ["row products"]


@pytest.mark.parametrize("bias", [False, True], ids=["no bias", "bias"])
def test_kernel_rows_after_the_first_accumulate_on_the_threaded_blas(monkeypatch, bias):
    """A 3x3 kernel makes three products on the threaded BLAS, of K = 3 x C (+ the ones row for the
    bias in the first only), the first writing the product and the other two adding to it."""
    threaded = threaded_blas()
    real_gemm = type(threaded).gemm
    products: list[tuple] = []

    def recording(self, a, b, out=None, accumulate=False):
        products.append((a.shape[1], b.shape[0], accumulate))
        return real_gemm(self, a, b, out, accumulate)

    monkeypatch.setattr(type(threaded), "gemm", recording)
    feeds = {"x": f32(2, 16, 9, 11), "w": f32(5, 16, 3, 3)}
    if bias:
        feeds["b"] = f32(5)
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 1, 1, 1])
    first = 48 + bias
    assert products == [(first, first, False), (48, 48, True), (48, 48, True)]


def test_products_fall_back_to_numpy_when_the_blas_refuses(monkeypatch, scratch_kinds):
    """``blas.gemm_into`` answering False (a library that cannot take the operands) leaves the
    kernel rows to numpy, with the same sums."""
    monkeypatch.setattr(blas, "gemm_into", lambda a, b, out, accumulate=False: False)
    feeds = {"x": f32(2, 16, 12, 12), "w": f32(6, 16, 3, 3), "b": f32(6)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 1, 1, 1])
    assert scratch_kinds == ["row products"]


def test_poisoned_scratch_never_reaches_outputs(monkeypatch, scratch_kinds):
    """Everything a call writes (interior, column shifts but the ones row, product) is NaN before
    each call: outputs still match, so only the zero borders and the ones row are relied on."""
    real = padded_rows.padded_rows_scratch

    def poisoned(*args):
        scratch = real(*args)
        scratch.interior.fill(np.nan)
        for dst, _ in scratch.shifts:
            dst.fill(np.nan)
        scratch.product.fill(np.nan)
        return scratch

    monkeypatch.setattr(padded_rows, "padded_rows_scratch", poisoned)
    for bias in (False, True):
        for _ in range(2):
            feeds = {"x": f32(3, 16, 10, 13), "w": f32(4, 16, 3, 3)}
            if bias:
                feeds["b"] = f32(4)
            assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 2, 0, 1])
    assert scratch_kinds == ["row products"] * 4


def test_non_finite_values_at_image_edges_stay_in_their_own_outputs(scratch_kinds):
    """The padded planes of all images lie end to end, and the products also compute the dropped
    columns from reads that run into the next row or the next image: an inf or NaN in an image's
    last row or column must reach only the outputs onnxruntime puts it in."""
    x = f32(3, 16, 8, 10)
    x[0, 0, -1, -1] = np.inf
    x[1, 3, -1, 0] = -np.inf
    x[1, 5, 0, -1] = np.nan
    x[2, 15, -1, -1] = np.nan
    feeds = {"x": x, "w": np.abs(f32(5, 16, 3, 3)) + 0.1, "b": f32(5)}
    assert_matches_oracle("Conv", feeds, rtol=1e-4, atol=1e-4, opset=17, pads=[1, 1, 1, 1])
    assert scratch_kinds == ["row products"]


@pytest.mark.parametrize("case,xs,ws,attrs,options,setup", [
    ("15 channels", (2, 15, 12, 12), (8, 15, 3, 3), dict(pads=[1, 1, 1, 1]), None, None),
    ("groups 2", (2, 32, 12, 12), (8, 16, 3, 3), dict(group=2, pads=[1, 1, 1, 1]), None, None),
    ("switched off", (2, 16, 12, 12), (8, 16, 3, 3), dict(pads=[1, 1, 1, 1]), {"row_products": "0"}, None),
    ("no threaded BLAS", (2, 16, 12, 12), (8, 16, 3, 3), dict(pads=[1, 1, 1, 1]), None,
     lambda mp: mp.setattr(row_products, "threaded_blas", lambda: None)),
])
def test_others_keep_the_padded_rows_im2col(monkeypatch, scratch_kinds, case, xs, ws, attrs, options, setup):
    if setup is not None:
        setup(monkeypatch)
    assert_matches_oracle("Conv", {"x": f32(*xs), "w": f32(*ws), "b": f32(ws[0])}, rtol=1e-4, atol=1e-4,
                          opset=17, provider_options=options, **attrs)
    assert scratch_kinds == ["im2col"]


def test_row_weights_hold_the_kernel_rows_and_the_bias_in_row_zero():
    w, b = f32(4, 3, 2, 5), f32(4)
    rows = row_products_weights(w, b)
    assert rows.shape == (2, 4, 5 * 3 + 1)
    for i in range(2):
        for j in range(5):
            assert np.array_equal(rows[i, :, j * 3:(j + 1) * 3], w[:, :, i, j])
    assert np.array_equal(rows[0, :, -1], b) and not rows[1, :, -1].any()
    assert row_products_weights(w, None).shape == (2, 4, 15)


def test_constant_kernel_keeps_its_row_weights():
    """A constant kernel builds its row weights once; new arrays (a feed) get new ones."""
    w, b = f32(6, 16, 3, 3), f32(6)
    kept = dispatch.BiasedWeights(True)
    first = kept.row_products(w, b)
    assert kept.row_products(w, b) is first
    other = kept.row_products(w.copy(), b)
    assert other is not first and np.array_equal(other, first)
    fresh = dispatch.BiasedWeights(False)
    assert fresh.row_products(w, b) is not fresh.row_products(w, b)


def test_fused_relu_and_residual_on_row_products(scratch_kinds):
    """FusedConv's epilogue (residual, then Relu) runs in the copy out of the product."""
    x, w, b, z = f32(2, 16, 10, 12), f32(8, 16, 3, 3), f32(8), f32(2, 8, 10, 12)
    expected = np.maximum(_direct_conv(x, w, b) + z, 0).astype(np.float32)
    from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import ResidualActivation
    got = dispatch.conv_nd(x, w, b, (1, 1), (1, 1), (1, 1), (1, 1), 1, ResidualActivation(z, "Relu", []))
    assert_same(got, expected, 1e-4, 1e-4)
    assert scratch_kinds == ["row products"]


def _direct_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3, pads 1, stride 1, summed in float64 tap by tap."""
    n, _, h, wd = x.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd)) + b.reshape(1, -1, 1, 1)
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j].astype(np.float64))
    return y
