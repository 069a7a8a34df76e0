"""MaxPool and AveragePool (2-D and 1-D) against onnxruntime, and against numpy windows where
onnxruntime itself is no oracle (its float32 MaxPool drops most NaNs)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime
from onnxplug_numba.kernels import pool as kpool
from onnxplug_numba.ops import op_pool

# (op, input shape, attributes): ResNet's, MobileNet's and other models' pools, cut to small planes
CASES = [
    ("MaxPool", (1, 8, 30, 30), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),  # ResNet
    ("MaxPool", (2, 3, 17, 21), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),  # GoogLeNet
    ("MaxPool", (1, 4, 16, 14), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # VGG
    ("MaxPool", (1, 3, 13, 13), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # stride 1
    ("MaxPool", (1, 3, 19, 20), {"kernel_shape": [3, 2], "strides": [3, 3], "pads": [0, 1, 2, 0]}),
    ("MaxPool", (1, 2, 15, 16), {"kernel_shape": [2, 3], "dilations": [2, 3], "strides": [1, 2]}),
    ("MaxPool", (1, 2, 15, 16), {"kernel_shape": [3, 3], "dilations": [2, 2], "strides": [2, 2],
                                 "pads": [2, 1, 1, 2], "ceil_mode": 1}),
    ("MaxPool", (1, 3, 10, 11), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("MaxPool", (1, 3, 10, 11), {"kernel_shape": [4, 4], "auto_pad": "SAME_LOWER", "strides": [3, 2]}),
    ("MaxPool", (1, 3, 10, 11), {"kernel_shape": [5, 1], "auto_pad": "VALID"}),
    ("MaxPool", (1, 2, 9, 40), {"kernel_shape": [1, 5], "strides": [1, 4], "pads": [0, 2, 0, 2]}),
    ("AveragePool", (1, 8, 14, 14), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # Inception
    ("AveragePool", (1, 8, 14, 14), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", (2, 4, 16, 16), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # DenseNet
    ("AveragePool", (1, 3, 17, 21), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("AveragePool", (1, 3, 17, 21), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1,
                                     "pads": [1, 0, 1, 2], "count_include_pad": 1}),
    ("AveragePool", (1, 2, 15, 16), {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2],
                                     "pads": [1, 1, 0, 2]}),
    ("AveragePool", (1, 3, 19, 20), {"kernel_shape": [5, 2], "strides": [3, 3], "pads": [2, 1, 2, 0]}),
    ("AveragePool", (1, 3, 10, 11), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("AveragePool", (1, 3, 10, 11), {"kernel_shape": [4, 3], "auto_pad": "SAME_LOWER", "strides": [1, 2],
                                     "count_include_pad": 1}),
]


def _ids(case: tuple) -> str:
    op, shape, attrs = case
    return f"{op}-{'x'.join(map(str, shape))}-" + "-".join(f"{k}{v}" for k, v in attrs.items())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_pool_matches_onnxruntime(rng, case, dtype):
    op, shape, attrs = case
    x = rng.standard_normal(shape).astype(dtype)
    model = node_model(op, {"x": x}, opset=19, **attrs)
    got, _ = run_numba(model, {"x": x}, threads=1)
    if op == "AveragePool" and dtype == np.float64:  # onnxruntime has no double AveragePool
        want = ReferenceEvaluator(model).run(None, {"x": x})
    else:
        want = run_onnxruntime(model, {"x": x})
    if op == "MaxPool":  # max picks one of its inputs: exactly onnxruntime's
        np.testing.assert_array_equal(got[0], want[0])
        assert got[0].dtype == want[0].dtype
    else:
        assert_close(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_1d_matches_onnxruntime(rng, op):
    x = rng.standard_normal((2, 3, 23)).astype(np.float32)
    model = node_model(op, {"x": x}, opset=19, kernel_shape=[3], strides=[2], pads=[1, 0], ceil_mode=1)
    got, _ = run_numba(model, {"x": x}, threads=1)
    assert_close(got, run_onnxruntime(model, {"x": x}), rtol=1e-6, atol=1e-7)


def windows_oracle(x: np.ndarray, kind: int, kernel, strides, dilations, begin, end, out_shape,
                   count_include_pad: bool = False) -> np.ndarray:
    """Max or mean of each window of ``x`` (planes, H, W), one window at a time in Python: a tap
    counts when inside ``x`` (or, with ``count_include_pad``, before the end padding)."""
    planes, height, width = x.shape
    y = np.empty((planes, *out_shape), dtype=x.dtype)
    for yo, xo in itertools.product(range(out_shape[0]), range(out_shape[1])):
        rows = [yo * strides[0] - begin[0] + i * dilations[0] for i in range(kernel[0])]
        cols = [xo * strides[1] - begin[1] + j * dilations[1] for j in range(kernel[1])]
        inside_r = [r for r in rows if 0 <= r < height]
        inside_c = [c for c in cols if 0 <= c < width]
        taps = x[:, inside_r][:, :, inside_c].reshape(planes, -1)
        if kind == kpool.MAX:
            y[:, yo, xo] = taps.max(axis=1) if taps.shape[1] else -np.inf  # np.max propagates NaN
        else:
            counted = len(inside_r) * len(inside_c)
            if count_include_pad:
                counted = len([r for r in rows if r < height + end[0]]) * len([c for c in cols if c < width + end[1]])
            total = taps.astype(np.float64).sum(axis=1)
            y[:, yo, xo] = total / counted if counted else np.nan
    return y


def run_kernel(x, kind, kernel, strides, dilations, begin, end, out_shape, count_include_pad=False, flat=False):
    """The compiled row kernel (or with ``flat`` the flat one) on (planes, H, W)."""
    y = np.full((x.shape[0], *out_shape), 12345.0, dtype=x.dtype)  # stale values must not survive
    if kind == kpool.MAX:
        (kpool.max_pool2d_flat if flat else kpool.max_pool2d)(x, *kernel, *strides, *dilations, *begin, y)
    else:
        (kpool.average_pool2d_flat if flat else kpool.average_pool2d)(
            x, int(count_include_pad), *kernel, *strides, *dilations, *begin,
            x.shape[1] + end[0], x.shape[2] + end[1], y)
    return y


def out_size(size: int, k: int, s: int, d: int, b: int, e: int, ceil: bool) -> int:
    """ONNX's output length; with ceil_mode the last window must start inside the input or its begin pad."""
    span = size + b + e - ((k - 1) * d + 1)
    n = (-(-span // s) if ceil else span // s) + 1
    return n - 1 if ceil and (n - 1) * s >= size + b else n


@pytest.mark.parametrize("flat", [False, True])
def test_max_propagates_nan_in_any_tap(rng, flat):
    # ResNet's pool: a NaN at each tap position of a window, at the borders and inside
    x = rng.standard_normal((6, 12, 13)).astype(np.float32)
    for t, (r, c) in enumerate([(0, 0), (0, 1), (5, 6), (6, 7), (11, 12), (11, 0)]):
        x[t, r, c] = np.nan
    x[0, 3, 3] = np.inf
    x[1, 4, 4] = -np.inf
    args = ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    got = run_kernel(x, kpool.MAX, *args, (6, 7), flat=flat)
    want = windows_oracle(x, kpool.MAX, *args, (6, 7))
    assert np.isnan(want).sum() >= 6
    np.testing.assert_array_equal(got, want)  # NaNs at the same places, the rest identical


@pytest.mark.parametrize("flat", [False, True])
def test_max_nan_only_where_a_window_reads_it(flat):
    # kernel 2, stride 3: rows and columns 2, 5, ... belong to no window, so their NaN never shows
    x = np.arange(2 * 9 * 9, dtype=np.float64).reshape(2, 9, 9)
    x[0, 2, :] = np.nan
    x[0, :, 5] = np.nan
    x[1, 4, 4] = np.nan
    args = ((2, 2), (3, 3), (1, 1), (0, 0), (0, 0))
    got = run_kernel(x, kpool.MAX, *args, (3, 3), flat=flat)
    want = windows_oracle(x, kpool.MAX, *args, (3, 3))
    assert not np.isnan(want[0]).any() and np.isnan(want[1]).sum() == 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_nan_input_through_the_provider(rng, op):
    x = rng.standard_normal((1, 4, 20, 20)).astype(np.float32)
    x[0, 0, 0, 0] = x[0, 1, 7, 8] = x[0, 2, 19, 19] = x[0, 3, 10, 1] = np.nan
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    got, _ = run_numba(node_model(op, {"x": x}, opset=19, **attrs), {"x": x}, threads=1)
    want = windows_oracle(x.reshape(4, 20, 20), kpool.MAX if op == "MaxPool" else kpool.AVERAGE,
                          (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (10, 10)).reshape(1, 4, 10, 10)
    assert np.isnan(want).sum() >= 4
    np.testing.assert_allclose(got[0], want, rtol=1e-6, atol=0)  # NaN where want is NaN


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_geometries_against_windows(seed, flat):
    """Kernel, strides, dilations, uneven pads (windows wholly in padding too) and ceil_mode."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(12):
        height, width = (int(v) for v in rng.integers(1, 12, 2))
        kernel = tuple(int(v) for v in rng.integers(1, 5, 2))
        strides = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilations = tuple(int(v) for v in rng.integers(1, 3, 2))
        begin = tuple(int(rng.integers(0, k + 1)) for k in kernel)
        end = tuple(int(rng.integers(0, k + 1)) for k in kernel)
        ceil = bool(rng.integers(0, 2))
        dims = [(n, k, s, d, b, e) for n, k, s, d, b, e in zip((height, width), kernel, strides, dilations, begin, end)]
        if any((k - 1) * d + 1 > n + b + e for n, k, s, d, b, e in dims):
            continue
        out_shape = tuple(out_size(*dim, ceil) for dim in dims)
        dtype = (np.float32, np.float64)[int(rng.integers(0, 2))]
        x = rng.standard_normal((3, height, width)).astype(dtype)
        x.ravel()[rng.integers(0, x.size)] = np.nan
        geometry = (kernel, strides, dilations, begin, end, out_shape)
        np.testing.assert_array_equal(run_kernel(x, kpool.MAX, *geometry, flat=flat),
                                      windows_oracle(x, kpool.MAX, *geometry))
        for include in (False, True):
            np.testing.assert_allclose(run_kernel(x, kpool.AVERAGE, *geometry, include, flat=flat),
                                       windows_oracle(x, kpool.AVERAGE, *geometry, include), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_threaded_path_splits_planes_and_matches(rng, monkeypatch, op):
    """Two threads: the planes are cut into several kernel calls, results as onnxruntime's.
    (Sharing starts at a size too large for a test: the threshold is lowered here.)"""
    monkeypatch.setattr(op_pool, "SHARE_MIN_WORK", 100_000)
    x = rng.standard_normal((2, 128, 56, 56)).astype(np.float32)  # ResNet's pool on a smaller image
    x[0, 5, 10, 10] = 1e30
    model = node_model(op, {"x": x}, opset=19, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    name = "max_pool2d" if op == "MaxPool" else "average_pool2d"
    real = getattr(kpool, name)
    calls: list[int] = []

    def counting(x3, *args):  # type: ignore[no-untyped-def]
        calls.append(x3.shape[0])
        real(x3, *args)

    monkeypatch.setattr(kpool, name, counting)
    got, _ = run_numba(model, {"x": x}, threads=2)
    assert len(calls) > 1 and sum(calls) == 256
    alone, _ = run_numba(model, {"x": x}, threads=1)
    np.testing.assert_array_equal(got[0], alone[0])
    want = run_onnxruntime(model, {"x": x})
    if op == "MaxPool":
        np.testing.assert_array_equal(got[0], want[0])
    else:
        assert_close(got, want, rtol=1e-6, atol=1e-7)


# inception-v3's, densenet-121's and squeezenet-1.1's pools on their zoo images (planes of 1 to 16x16)
SMALL_PLANES = [
    ("AveragePool", (2, 40, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", (1, 50, 3, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", (2, 70, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", (1, 33, 1, 1), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # 1 of 9 taps counted
    ("AveragePool", (2, 24, 16, 16), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ("AveragePool", (1, 9, 5, 6), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 0, 0, 1]}),
    ("MaxPool", (2, 30, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool", (1, 40, 3, 3), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ("MaxPool", (1, 20, 5, 5), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("MaxPool", (1, 20, 6, 6), {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 1]}),
    ("MaxPool", (1, 5, 7, 4), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
]


@pytest.mark.parametrize("case", SMALL_PLANES, ids=[_ids(c) for c in SMALL_PLANES])
def test_small_planes_take_the_flat_kernels_and_match_onnxruntime(rng, monkeypatch, case):
    op, shape, attrs = case
    name = "max_pool2d_flat" if op == "MaxPool" else "average_pool2d_flat"
    real = getattr(kpool, name)
    calls: list[int] = []

    def counting(x3, *args):  # type: ignore[no-untyped-def]
        calls.append(x3.shape[0])
        real(x3, *args)

    monkeypatch.setattr(kpool, name, counting)
    x = rng.standard_normal(shape).astype(np.float32)
    model = node_model(op, {"x": x}, opset=19, **attrs)
    got, session = run_numba(model, {"x": x}, threads=2)
    again = session.run(None, {"x": x})  # the geometry kept for the shape
    assert sum(calls) == 2 * shape[0] * shape[1]
    want = run_onnxruntime(model, {"x": x})
    np.testing.assert_array_equal(got[0], again[0])
    if op == "MaxPool":
        np.testing.assert_array_equal(got[0], want[0])
    else:
        assert_close(got, want, rtol=1e-6, atol=1e-7)


def test_max_nan_helper_vectorised_semantics():
    """max_nan in a compiled loop: NaN from either side, otherwise the larger."""
    from numba import njit

    @njit
    def pairwise(a, b, out):  # type: ignore[no-untyped-def]
        for i in range(a.size):
            out[i] = kpool.max_nan(a[i], b[i])

    a = np.array([1.0, np.nan, 3.0, -np.inf, np.nan, 2.0, -1.0, 5.0, 0.5] * 3, dtype=np.float32)
    b = np.array([2.0, 1.0, np.nan, -5.0, np.nan, 2.0, np.inf, -np.inf, 0.25] * 3, dtype=np.float32)
    out = np.empty_like(a)
    pairwise(a, b, out)
    np.testing.assert_array_equal(out, np.maximum(a, b))  # numpy's maximum propagates NaN too
