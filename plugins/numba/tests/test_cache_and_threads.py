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
    chain = session._plan.steps[0].kernel
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
