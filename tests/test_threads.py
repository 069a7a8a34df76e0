"""intra_op_num_threads sizes the numpy provider's product threads (it is not silently ignored)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import threadpoolctl

import onnxplug as ort
from onnxplug.providers.numpy.runtime import blas
from onnxplug.providers.numpy.runtime.threaded_blas import is_threaded_blas_file, threaded_blas


def _numpy_blas_threads() -> set[int]:
    """Thread counts of the BLAS libraries but the provider's threaded one (numpy's, in practice)."""
    return {i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i["user_api"] == "blas" and not is_threaded_blas_file(i["filepath"])}


@pytest.fixture
def two_product_threads():
    """Two product threads for the test; the BLAS pools and the thread count restored after it."""
    controller = threadpoolctl.ThreadpoolController()
    before, threads = [(lib, lib.num_threads) for lib in controller.lib_controllers], blas.PRODUCT_THREADS.threads
    blas.PRODUCT_THREADS.configure(2)
    yield
    for lib, count in before:
        lib.set_num_threads(count)
    blas.PRODUCT_THREADS.threads = threads


def test_intra_op_num_threads_sizes_product_threads_and_pins_blas(add_relu_model, two_product_threads):
    for n in (1, 3):
        so = ort.SessionOptions()
        so.intra_op_num_threads = n
        ort.InferenceSession(add_relu_model, so, providers=["numpy"])
        assert blas.PRODUCT_THREADS.threads == n
        assert _numpy_blas_threads() == {1}  # BLAS's own pool would make results depend on the thread
        threaded = threaded_blas()
        if threaded is not None:  # the private threaded BLAS follows the session's count
            assert threaded.library_threads() == n


def test_large_product_runs_blocks_on_worker_threads_and_matches_numpy(two_product_threads, monkeypatch):
    monkeypatch.setattr(blas.PRODUCT_THREADS, "threaded_product_macs", 10**18)  # the split used without the threaded BLAS
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 96, 300)).astype(np.float32)
    b = rng.standard_normal((300, 700)).astype(np.float64)  # mixed dtypes promote as numpy does
    assert 2 * 96 * 300 * 700 >= blas.PRODUCT_THREADS.split_product_macs
    got = blas.matmul(a, b)
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-12)
    assert got.dtype == np.float64
    assert any(t.name.startswith("onnxplug-blas") for t in threading.enumerate())
    tall = rng.standard_normal((3000, 2000)).astype(np.float32)  # n < m: the rows are split
    narrow = rng.standard_normal((2000, 8)).astype(np.float32)
    np.testing.assert_allclose(blas.matmul(tall, narrow), np.matmul(tall, narrow), rtol=1e-4, atol=1e-3)


def test_product_is_the_same_from_any_thread(two_product_threads):
    rng = np.random.default_rng(1)
    for m, k, n in [(64, 576, 3136), (8, 64, 64), (512, 4608, 49)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        on_main = blas.matmul(a, b)
        with ThreadPoolExecutor(1) as pool:
            on_worker = pool.submit(blas.matmul, a, b).result()
        np.testing.assert_array_equal(on_main, on_worker)


def test_shared_units_run_once_each_and_the_caller_takes_what_a_busy_worker_cannot(two_product_threads):
    """parallel_for hands units to whichever thread is free: every unit runs exactly once, and
    with the only worker held up the calling thread does them all instead of waiting."""
    ran: list[tuple[int, str]] = []
    assert blas.parallel_for(40, lambda i: ran.append((i, threading.current_thread().name)),
                             blas.PRODUCT_THREADS.split_product_macs)
    assert sorted(i for i, _ in ran) == list(range(40))

    release = threading.Event()
    blocker = blas.PRODUCT_THREADS.pool().submit(release.wait, 30)  # the one worker is busy
    ran.clear()
    try:
        assert blas.parallel_for(6, lambda i: ran.append((i, threading.current_thread().name)),
                                 blas.PRODUCT_THREADS.split_product_macs)
        # parallel_for returned while the worker was still blocked: the caller ran every unit
        assert not blocker.done()
        assert sorted(i for i, _ in ran) == list(range(6))
        assert {name for _, name in ran} == {threading.current_thread().name}
    finally:
        release.set()
        blocker.result()


def test_an_error_in_a_unit_reaches_the_caller(two_product_threads):
    def body(i: int) -> None:
        if i == 3:
            raise ValueError("unit 3 failed")

    with pytest.raises(ValueError, match="unit 3 failed"):
        blas.parallel_for(8, body, blas.PRODUCT_THREADS.split_product_macs)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("a_shape, b_shape", [((32, 1, 128), (128, 64)), ((2, 3, 4, 16), (16, 8)),
                                              ((4, 128, 256), (256, 256)), ((2, 3, 0), (0, 5)), ((0, 3, 4), (4, 5))])
def test_batched_rows_times_a_matrix_is_numpys_product(two_product_threads, threads, a_shape, b_shape):
    """(..., M, K) @ (K, N) runs as one (rows, K) product (numpy makes a BLAS call per leading
    index): same values, shape and dtype as np.matmul, also into ``out`` and for strided operands."""
    blas.PRODUCT_THREADS.threads = threads
    rng = np.random.default_rng(4)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b).astype(np.float32)
    got = blas.matmul(a, b)
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)
    out = np.full(expected.shape, np.nan, np.float32)
    assert blas.matmul(a, b, out) is out
    np.testing.assert_array_equal(out, got)
    strided = np.swapaxes(np.swapaxes(a, 0, -2).copy(), 0, -2)  # same values, not C-contiguous
    np.testing.assert_allclose(blas.matmul(strided, b), expected, rtol=1e-5, atol=1e-4)


def test_batched_rows_with_a_mismatched_matrix_keep_numpys_error(two_product_threads):
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        blas.matmul(np.ones((2, 3, 5), np.float32), np.ones((4, 4), np.float32))
