"""The numpy provider's private threaded BLAS (large single products) and helper placement."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from onnxplug.providers.numpy.runtime import blas, placement
from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas, unavailable_reason

pytestmark = pytest.mark.skipif(threaded_blas() is None, reason=f"threaded BLAS: {unavailable_reason()}")

LINUX = sys.platform.startswith("linux")


@pytest.fixture
def two_threads():
    threads = blas.PRODUCT_THREADS.threads
    blas.PRODUCT_THREADS.configure(2)
    yield threaded_blas()
    blas.PRODUCT_THREADS.configure(threads)


def _operands(rng, m, k, n, dtype):
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("layout", ["c", "transposed a", "transposed b", "row slices", "column slices"])
def test_gemm_reads_blas_layouts_in_place_and_matches_numpy(two_threads, dtype, rtol, layout):
    rng = np.random.default_rng(0)
    a, b = _operands(rng, 150, 170, 190, dtype)
    if layout == "transposed a":
        a = np.asfortranarray(a)
    elif layout == "transposed b":
        b = np.asfortranarray(b)
    elif layout == "row slices":  # leading dimension larger than the rows
        a = np.pad(a, ((0, 0), (0, 30)))[:, :170]
        b = np.pad(b, ((0, 0), (5, 0)))[:, 5:]
    elif layout == "column slices":
        a = np.asfortranarray(np.pad(a, ((0, 7), (0, 0))))[:150]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    got = two_threads.gemm(a, b)
    assert got is not None and got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 10)
    out = np.full((160, 190), np.nan, dtype)[:150]  # a caller's output with its own row stride
    assert two_threads.gemm(a, b, out) is out
    np.testing.assert_array_equal(out, got)


@pytest.mark.parametrize("case", ["int", "mixed", "3-D", "empty", "every other column", "reversed",
                                  "aliased out", "wrong out shape", "misaligned"])
def test_gemm_declines_what_blas_cannot_take(two_threads, case):
    """None (the caller then uses numpy), never a wrong product."""
    rng = np.random.default_rng(1)
    a, b = _operands(rng, 40, 30, 20, np.float32)
    out = None
    if case == "int":
        a, b = a.astype(np.int32), b.astype(np.int32)
    elif case == "mixed":
        b = b.astype(np.float64)
    elif case == "3-D":
        a = a[None]
    elif case == "empty":
        a, b = a[:, :0], b[:0]
    elif case == "every other column":
        a = np.repeat(a, 2, axis=1)[:, ::2]
    elif case == "reversed":
        a = a[::-1]
    elif case == "aliased out":
        a = np.ones((40, 40), np.float32)
        b = np.ones((40, 40), np.float32)
        out = a
    elif case == "wrong out shape":
        out = np.empty((20, 40), np.float32)
    elif case == "misaligned":  # float32 values starting 2 bytes into a buffer
        shifted = np.zeros(a.nbytes + 4, np.uint8)[2:2 + a.nbytes].view(np.float32).reshape(a.shape)
        shifted[...] = a
        a = shifted
        assert not a.flags.aligned
    assert two_threads.gemm(a, b, out) is None


@pytest.fixture
def gemm_calls(two_threads, monkeypatch) -> list[tuple]:
    """The operand shapes of every product the threaded BLAS is asked for, in order."""
    calls: list[tuple] = []
    gemm = type(two_threads).gemm

    def spy(self, a, b, out=None):
        calls.append((a.shape, b.shape))
        return gemm(self, a, b, out)

    monkeypatch.setattr(type(two_threads), "gemm", spy)
    return calls


def test_large_single_products_go_to_the_threaded_blas_and_small_ones_do_not(gemm_calls):
    rng = np.random.default_rng(2)
    big_a, big_b = _operands(rng, 128, 256, 256, np.float32)  # 8.4M multiply-adds
    assert 128 * 256 * 256 >= blas.PRODUCT_THREADS.threaded_product_macs
    np.testing.assert_allclose(blas.matmul(big_a, big_b), big_a @ big_b, rtol=1e-4, atol=1e-3)
    small_a, small_b = _operands(rng, 16, 64, 64, np.float32)
    np.testing.assert_array_equal(blas.matmul(small_a, small_b), small_a @ small_b)
    # one image of one group (an im2col convolution at batch 1): the 2-D views take the threaded BLAS
    conv = blas.matmul(big_a[None], big_b[None, None])
    assert conv.shape == (1, 1, 128, 256)
    np.testing.assert_array_equal(conv[0, 0], blas.matmul(big_a, big_b))
    assert gemm_calls == [((128, 256), (256, 256))] * 3


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(1, 1280, 1000), (700, 600, 1), (1, 1, 9), (1, 5, 1)])
@pytest.mark.parametrize("layout", ["c", "transposed", "strided vector", "strided matrix rows"])
def test_one_row_or_one_column_products_run_as_gemv_and_match_numpy(two_threads, monkeypatch, dtype, rtol,
                                                                    shape, layout):
    gemv_calls = []
    gemv = dict(two_threads._gemv)
    monkeypatch.setattr(two_threads, "_gemv", {dt: (lambda *args, fn=fn: gemv_calls.append(args[1]) or fn(*args))
                                               for dt, fn in gemv.items()})
    rng = np.random.default_rng(4)
    m, k, n = shape
    a, b = _operands(rng, m, k, n, dtype)
    if layout == "transposed":  # the matrix stored the other way round (a classifier's W.T)
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    elif layout == "strided vector":
        a = np.repeat(a, 2, axis=1)[:, ::2] if m == 1 else a
        b = np.repeat(b, 3, axis=0)[::3] if n == 1 else b
    elif layout == "strided matrix rows":
        a = a if m == 1 else np.pad(a, ((0, 0), (0, 9)))[:, :k]
        b = b if n == 1 else np.pad(b, ((0, 0), (0, 9)))[:, :n]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    got = two_threads.gemm(a, b)
    assert got is not None and got.dtype == dtype and got.shape == (m, n)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 10)
    assert len(gemv_calls) == 1
    out = np.full((m, n + 3), np.nan, dtype)[:, :n]  # a caller's output with its own row stride
    assert two_threads.gemm(a, b, out) is out
    np.testing.assert_array_equal(out, got)
    assert len(gemv_calls) == 2


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(40, 70, 90), (1, 300, 50), (60, 80, 1)], ids=["gemm", "one row", "one column"])
def test_accumulate_adds_the_product_to_out(two_threads, dtype, rtol, shape):
    """``accumulate`` adds a @ b to what ``out`` holds (beta = 1), also through gemv; without an
    ``out`` there is nothing to add to, so the call declines."""
    rng = np.random.default_rng(9)
    m, k, n = shape
    a, b = _operands(rng, m, k, n, dtype)
    start = rng.standard_normal((m, n + 4)).astype(dtype)
    out = start.copy()[:, 2:n + 2]  # a caller's output with its own row stride
    assert two_threads.gemm(a, b, out, accumulate=True) is out
    expected = start[:, 2:n + 2].astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol * 10)
    assert two_threads.gemm(a, b, accumulate=True) is None


def test_gemm_into_writes_or_accumulates_and_declines_unfit_operands(two_threads):
    rng = np.random.default_rng(10)
    a, b = _operands(rng, 20, 30, 40, np.float32)
    out = np.empty((20, 40), np.float32)
    assert blas.gemm_into(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    assert blas.gemm_into(a, b, out, accumulate=True)
    np.testing.assert_allclose(out, 2 * (a @ b), rtol=1e-5, atol=1e-5)
    before = out.copy()
    assert not blas.gemm_into(a.astype(np.int32), b.astype(np.int32), out)
    assert not blas.gemm_into(a, b[:, ::2], out[:, :20])  # no axis of unit stride in b
    np.testing.assert_array_equal(out, before)


def test_a_large_matrix_vector_product_goes_to_the_threaded_blas_and_a_small_one_does_not(gemm_calls):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((1000, 1280)).astype(np.float32)
    x = rng.standard_normal((1, 1280)).astype(np.float32)
    assert 1280 * 1000 >= blas.PRODUCT_THREADS.threaded_gemv_macs > 64 * 64
    np.testing.assert_allclose(blas.matmul(x, weight.T), x @ weight.T, rtol=1e-4, atol=1e-4)
    small = blas.matmul(x[:, :64], weight[:64, :64].T)
    np.testing.assert_allclose(small, x[:, :64] @ weight[:64, :64].T, rtol=1e-5, atol=1e-5)
    assert gemm_calls == [((1, 1280), (1280, 1000))]


def test_product_is_the_same_from_any_thread_and_under_concurrency(two_threads):
    """A fixed thread count cuts a product the same way whoever calls: bit-identical results."""
    rng = np.random.default_rng(3)
    # inner sizes that OpenBLAS blocks differently on one thread and on two
    ops = [_operands(rng, m, k, n, np.float32)
           for m, k, n in [(128, 577, 256), (64, 2000, 96), (300, 1024, 300), (1, 2000, 1500), (1500, 2000, 1)]]
    serial = [blas.matmul(a, b) for a, b in ops]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            results = list(pool.map(lambda ab: blas.matmul(*ab), ops * 4))
            for i, got in enumerate(results):
                np.testing.assert_array_equal(got, serial[i % len(ops)])


def test_threadpoolctl_limits_do_not_stick_to_the_threaded_blas(two_threads):
    import threadpoolctl

    threadpoolctl.threadpool_limits(1, user_api="blas")  # what a session's configure did before
    assert two_threads.library_threads() == 1
    a, b = _operands(np.random.default_rng(4), 128, 256, 256, np.float32)
    blas.matmul(a, b)
    assert two_threads.library_threads() == 2


def _run(code: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})}, timeout=120).stdout


@pytest.mark.skipif(not LINUX, reason="reads thread CPU times from /proc")
def test_workers_stop_spinning_about_a_millisecond_after_a_product():
    """OpenBLAS's default keeps an idle worker spinning ~0.1 s; the provider's spins ~1 ms. CPU
    time of every thread but the main one in the half second after a product, in clock ticks."""
    code = """
        import os, time, numpy as np
        from onnxplug.providers.numpy.runtime import blas
        def ticks():
            total = 0
            for tid in os.listdir("/proc/self/task"):
                if int(tid) != os.getpid():
                    fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])
            return total
        blas.PRODUCT_THREADS.configure(2)
        a = np.ones((512, 512), np.float32)
        blas.matmul(a, a)
        time.sleep(0.5)  # the load's own spin
        blas.matmul(a, a)
        before = ticks(); time.sleep(0.5); print(ticks() - before)
        """
    spun = int(_run(code))
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    assert spun < 0.03 * ticks_per_s  # the default spin measured 10 ticks (0.1 s) here


def test_turned_off_by_environment_variable_products_stay_right():
    code = """
        import numpy as np
        from onnxplug.providers.numpy.runtime import blas
        from onnxplug.providers.numpy.runtime.threaded_blas import threaded_blas, unavailable_reason
        blas.PRODUCT_THREADS.configure(2)
        a = np.arange(256 * 300, dtype=np.float32).reshape(256, 300) / 1e4
        b = np.ones((300, 200), np.float32)
        assert np.allclose(blas.matmul(a, b), a @ b)
        print(threaded_blas() is None, unavailable_reason())
        """
    assert _run(code, {"ONNXPLUG_NUMPY_THREADED_BLAS": "0"}).strip() == \
        "True turned off by ONNXPLUG_NUMPY_THREADED_BLAS=0"


@pytest.mark.skipif(not LINUX or len(os.sched_getaffinity(0)) < 2 or not placement.PLACEMENT.enabled,
                    reason="needs Linux, glibc's sched_getcpu and two CPUs")
def test_helpers_are_kept_off_the_callers_cpu(two_threads):
    """After a hand-off, the product threads and the threaded BLAS's worker may run anywhere but on
    the CPU the caller was on at that hand-off (the caller itself may have moved since)."""
    for _ in range(2):  # the first hand-off starts (and registers) the worker
        assert blas.parallel_for(4, lambda i: None, blas.PRODUCT_THREADS.split_product_macs)
    caller_cpu = placement.PLACEMENT.kept_off
    assert caller_cpu is not None
    workers = [t for t in threading.enumerate() if t.name.startswith("onnxplug-blas")]
    assert workers
    for worker in workers:
        allowed = os.sched_getaffinity(worker.native_id)
        assert caller_cpu not in allowed and allowed <= os.sched_getaffinity(0)
    a, b = _operands(np.random.default_rng(5), 128, 256, 256, np.float32)
    blas.matmul(a, b)  # a threaded product: its worker is placed too
    caller_cpu = placement.PLACEMENT.kept_off
    mask = placement.cpu_mask(frozenset())
    assert ctypes.CDLL(two_threads.path).openblas_getaffinity(0, ctypes.sizeof(mask), mask) == 0
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    assert not mask[caller_cpu // bits] >> (caller_cpu % bits) & 1


@pytest.mark.skipif(not LINUX or len(os.sched_getaffinity(0)) < 2 or not placement.PLACEMENT.enabled,
                    reason="needs Linux, glibc's sched_getcpu and two CPUs")
def test_the_caller_is_never_pinned_also_after_the_thread_count_shrinks():
    """OpenBLAS's last thread index is the calling thread: an index kept from a larger count would
    pin the caller (and every thread it starts) off its own CPU. Run in a fresh process so that the
    caller's affinity is the process's own."""
    code = """
        import os, threading
        import numpy as np
        from onnxplug.providers.numpy.runtime import blas
        everywhere = os.sched_getaffinity(0)
        for threads in (3, 2):
            blas.PRODUCT_THREADS.configure(threads)
            for _ in range(6):  # hand-offs from whichever CPU the caller is on
                blas.parallel_for(4, lambda i: None, blas.PRODUCT_THREADS.split_product_macs)
                blas.matmul(np.ones((128, 256), np.float32), np.ones((256, 256), np.float32))
        print(os.sched_getaffinity(0) == everywhere,
              os.sched_getaffinity(threading.main_thread().native_id) == everywhere)
        """
    assert _run(code, {}).split() == ["True", "True"]
