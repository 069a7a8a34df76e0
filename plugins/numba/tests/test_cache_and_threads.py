"""The on-disk cache (a second process loads machine code instead of compiling) and thread control."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from numba_test_helpers import assert_close, node_model, run_numba, run_onnxruntime
_PROBE = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    warnings.simplefilter("ignore")
    sys.path.insert(0, sys.argv[1])
    import onnxplug as ort
    from test_fusion import chain_model
    from onnxplug_numba.kernels import conv
    model = chain_model((2, 3, 4, 5), (3, 1, 1)).SerializeToString()
    session = ort.InferenceSession(model, providers=["numba"])
    session.run(None, {"x": np.ones((2, 3, 4, 5), np.float32), "b": np.ones((3, 1, 1), np.float32)})
    x = np.ones((1, 2, 5, 5), np.float32)
    cols = np.empty((18, 25), np.float32)
    conv.im2col(x[0], 0, 2, 3, 3, 1, 1, 1, 1, 1, 1, 5, 5, cols)
    chain = session.engine.plan.steps[0].kernel
    dispatchers = [m.kernel for m in chain.runner._kernels.values()] + [conv.im2col]
    print(json.dumps({"hits": sum(sum(d.stats.cache_hits.values()) for d in dispatchers),
                      "misses": sum(sum(d.stats.cache_misses.values()) for d in dispatchers)}))
""")


def _probe(cache_dir: str) -> dict:
    env = {**os.environ, "ONNXPLUG_NUMBA_CACHE_DIR": cache_dir, "NUMBA_CACHE_DIR": cache_dir}
    out = subprocess.run([sys.executable, "-c", _PROBE, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_compiled_kernels_from_disk(tmp_path):
    first = _probe(str(tmp_path))
    second = _probe(str(tmp_path))
    assert second["misses"] == 0, second
    assert second["hits"] >= 1, second
    assert first["misses"] + first["hits"] >= 1
    # the generated module's folder; numba's own cache folders beside it are also named numba-*
    assert any(p.name.startswith("k_") and p.suffix == ".py"
               for folder in tmp_path.glob("numba-*") for p in folder.iterdir())


@pytest.mark.parametrize("threads", [1, 2])
def test_intra_op_num_threads_is_how_many_threads_run_a_kernel(rng, monkeypatch, threads):
    from onnxplug_numba.kernels import depthwise
    from test_kernels_depthwise import _numpy_depthwise

    seen: set[int] = set()
    compiled = depthwise.depthwise_phased

    def spy(*args):  # type: ignore[no-untyped-def]
        seen.add(threading.get_ident())
        return compiled(*args)

    monkeypatch.setattr(depthwise, "depthwise_phased", spy)
    # float64: the Python thread pool's path (float32 convs share work in numba prange regions)
    x = rng.standard_normal((2, 128, 128, 128))  # large enough to be shared
    w = rng.standard_normal((128, 1, 3, 3))
    model = node_model("Conv", {"x": x}, initializers={"w": w}, group=128, pads=[1, 1, 1, 1])
    # Threads take chunks as they become free, and a helper the OS has not scheduled before the
    # work is done is cancelled: on a busy machine one run may use fewer threads, never more.
    for _ in range(5):
        got, _ = run_numba(model, {"x": x}, threads=threads)
        assert len(seen) <= threads
        if len(seen) == threads:
            break
    assert len(seen) == threads
    np.testing.assert_allclose(got[0], _numpy_depthwise(x, w, np.zeros(128), [1, 1, 1, 1], [1, 1]), rtol=1e-10,
                               atol=1e-10)


def test_blas_runs_one_thread_per_call_and_matmul_is_split(rng):
    from onnxplug_numba.threads import blas_threads

    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((128, 96)).astype(np.float32)
    model = node_model("MatMul", {"a": a, "b": b})
    got, _ = run_numba(model, {"a": a, "b": b}, threads=2)
    if blas_threads() is not None:
        assert blas_threads() == 1
    assert_close(got, run_onnxruntime(model, {"a": a, "b": b}))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs a choice of at least two CPUs")
def test_spread_keeps_pool_threads_off_the_callers_cpu_and_restores_them():
    import ctypes
    import time

    from onnxplug_numba.threads import ThreadControl

    getcpu = ctypes.CDLL(None).sched_getcpu
    caller = threading.get_ident()
    allowed = os.sched_getaffinity(0)
    seen: list[tuple[int, set[int], int]] = []

    def work(lo: int, hi: int) -> None:
        time.sleep(0.05)  # long enough that the pool thread takes a chunk
        seen.append((threading.get_ident(), os.sched_getaffinity(0), getcpu()))

    ThreadControl(2).run(lambda lo, hi: time.sleep(0.05), 2)  # the pool exists, made by an unpinned thread
    os.sched_setaffinity(0, {min(allowed)})  # the caller on a known CPU for the call
    try:
        ThreadControl(2).run(work, 2, spread=True)
    finally:
        os.sched_setaffinity(0, allowed)
    helpers = [(mask, cpu) for ident, mask, cpu in seen if ident != caller]
    assert len(seen) == 2 and helpers, seen
    for mask, cpu in helpers:
        assert min(allowed) not in mask and cpu != min(allowed)
    # afterwards the pool thread may run anywhere again
    after: list[set[int]] = []
    ThreadControl(2).run(lambda lo, hi: (time.sleep(0.05), after.append(os.sched_getaffinity(0))), 2)
    assert all(mask == allowed for mask in after), after
