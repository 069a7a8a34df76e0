"""onnxplug.integrations.dask on a real LocalCluster (2 worker processes, 1 thread each, loopback):
results identical to a single-process run and in order, one session per worker process, the
per-worker provider report, Dask's own progress bar, and a worker process killed mid-job."""

from __future__ import annotations

import io
import os
import signal

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.diagnostics import ProgressBar
from distributed import Client, LocalCluster, futures_of, wait

from onnxplug.integrations import dask as onnx_dask
from onnxplug.integrations._common import ScoringSpec
from tests.integrations import reference as ref


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def _sessions(client, spec_key):
    """Per worker address, the rows its process scored with the session of ``spec_key``."""
    return {addr: [s for s in sessions if s["key"] == spec_key[:12]]
            for addr, sessions in onnx_dask.worker_sessions(client).items()}


def test_images_array_identical_in_order(client):
    images = ref.images()
    model = ref.image_model()
    x = da.from_array(images, chunks=(50, 3, 32, 32))
    scored = onnx_dask.score_array(x, model, session_options=ref.options())
    assert scored.shape == (ref.IMAGES, 10) and scored.chunks[0] == (50,) * 20
    assert scored.name.startswith("onnxplug-score")  # the name Dask's progress bar and dashboard show
    (expected,) = ref.run_reference(model, {"input": images}, batch=50)
    np.testing.assert_array_equal(scored.compute(), expected)
    spec = ScoringSpec.create(model, ref.options(), outputs=["output"], report=False)
    sessions = _sessions(client, spec.key)
    assert sum(s["rows"] for ss in sessions.values() for s in ss) == ref.IMAGES
    assert all(len(ss) == 1 and ss[0]["threads"] == 1 for ss in sessions.values())  # one session a process


def test_tabular_frame_10000_rows_with_a_missing_provider(client):
    x = np.random.default_rng(1).standard_normal((ref.ROWS, len(ref.FEATURES))).astype(np.float32)
    frame = pd.DataFrame(x, columns=ref.FEATURES).assign(id=np.arange(ref.ROWS))
    model = ref.tabular_model()
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]  # no GPU provider here: skipped, warned
    ddf = dd.from_pandas(frame, npartitions=10)
    scored = onnx_dask.score_frame(ddf, model, session_options=ref.options(), providers=providers,
                                   inputs={"features": ref.FEATURES})
    out = scored.compute()
    assert list(out.columns) == ["id", "probabilities", "label", onnx_dask.WORKER_COLUMN, onnx_dask.PROVIDERS_COLUMN]
    np.testing.assert_array_equal(out.index.to_numpy(), np.arange(ref.ROWS))
    np.testing.assert_array_equal(out["id"].to_numpy(), np.arange(ref.ROWS))
    probabilities, label = ref.run_reference(model, {"features": x}, batch=1000)
    np.testing.assert_array_equal(np.stack(out["probabilities"].to_numpy()), probabilities)
    np.testing.assert_array_equal(out["label"].to_numpy(), label)
    workers = onnx_dask.report(out)
    assert sum(w.rows for w in workers) == ref.ROWS and len(workers) == 2
    assert {w.providers for w in workers} == {ref.ran_providers(model, providers)}
    spec = ScoringSpec.create(model, ref.options(), providers, {"features": ref.FEATURES})
    for sessions in _sessions(client, spec.key).values():
        assert any("CUDAExecutionProvider" in w for s in sessions for w in s["warnings"])


def test_progress_through_dasks_own_bar():
    model = ref.tabular_model()
    x = da.from_array(np.random.default_rng(2).standard_normal((400, 16)).astype(np.float32), chunks=100)
    scored = onnx_dask.score_array(x, model, output="label")
    out = io.StringIO()
    with ProgressBar(out=out):
        got = scored.compute(scheduler="threads")
    assert "100%" in out.getvalue()
    (_, expected) = ref.run_reference(model, {"features": x.compute()}, batch=100)
    np.testing.assert_array_equal(got, expected)


def test_worker_killed_mid_job_every_row_once(client, tmp_path):
    feeds = ref.fault_inputs()
    model = ref.fault_model(tmp_path)
    frame = pd.DataFrame({"id": np.arange(ref.FAULT_ROWS), "input": list(feeds["input"]),
                          "attention_mask": list(feeds["attention_mask"])})
    with dask.config.set({"dataframe.convert-string": False}):  # keep the columns of arrays as objects
        ddf = dd.from_pandas(frame, npartitions=ref.FAULT_ROWS // ref.FAULT_BATCH, sort=False)
        scored = onnx_dask.score_frame(ddf, model, session_options=ref.options())
    pids = client.run(os.getpid)
    scored = client.persist(scored)
    futures = futures_of(scored)
    wait(futures, return_when="FIRST_COMPLETED")
    victim = sorted(pids)[0]
    os.kill(pids[victim], signal.SIGKILL)
    left = sum(not f.done() for f in futures)
    assert left > 0  # partitions were left when the worker died
    out = scored.compute()
    np.testing.assert_array_equal(out["id"].to_numpy(), np.arange(ref.FAULT_ROWS))  # every row once, in order
    (expected,) = ref.run_reference(model, feeds, batch=ref.FAULT_BATCH)
    np.testing.assert_array_equal(np.stack(out["output"].to_numpy()), expected)
    client.wait_for_workers(2, timeout=300)  # a busy machine starts the replacement slowly
    new_pids = set(client.run(os.getpid).values())
    assert len(new_pids) == 2 and pids[victim] not in new_pids  # the nanny started a replacement
