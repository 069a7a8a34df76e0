"""onnxplug.integrations.ray on a real local Ray cluster (2 CPUs, loopback): results identical to a
single-process run and in order, sessions per actor with the actor's CPU share as threads, the
per-worker provider report, and an actor process killed mid-job."""

from __future__ import annotations

import os
import signal

import numpy as np
import pandas as pd
import pytest
import ray
import ray.data

from onnxplug.integrations import ray as onnx_ray
from tests.integrations import reference as ref


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", configure_logging=False)
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    yield
    ray.shutdown()


def test_images_numpy_batches_identical_in_order():
    images = ref.images()
    model = ref.image_model()
    ds = ray.data.from_items([{"id": i, "input": images[i]} for i in range(len(images))], override_num_blocks=10)
    out = onnx_ray.score(ds, model, session_options=ref.options(), concurrency=2, batch_size=50).to_pandas()
    assert list(out.columns) == ["id", "output", onnx_ray.WORKER_COLUMN, onnx_ray.PROVIDERS_COLUMN]
    np.testing.assert_array_equal(out["id"].to_numpy(), np.arange(ref.IMAGES))
    (expected,) = ref.run_reference(model, {"input": images}, batch=50)
    np.testing.assert_array_equal(np.stack(out["output"].to_numpy()), expected)
    workers = onnx_ray.report(out)
    assert sum(w.rows for w in workers) == ref.IMAGES
    assert {w.providers for w in workers} == {("numpy",)}
    assert len({w.worker for w in workers}) == 2  # the pool's two actors both scored


def test_tabular_pandas_10000_rows_with_a_missing_provider():
    x = np.random.default_rng(1).standard_normal((ref.ROWS, len(ref.FEATURES))).astype(np.float32)
    frame = pd.DataFrame(x, columns=ref.FEATURES).assign(id=np.arange(ref.ROWS))
    model = ref.tabular_model()
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]  # no GPU provider here: skipped, warned
    ds = ray.data.from_pandas([frame.iloc[i:i + 1000] for i in range(0, ref.ROWS, 1000)])
    scored = onnx_ray.score(ds, model, session_options=ref.options(), providers=providers,
                            inputs={"features": ref.FEATURES}, concurrency=2, batch_size=500,
                            batch_format="pandas").materialize()
    out = scored.to_pandas()
    assert list(out.columns) == ["id", "probabilities", "label", onnx_ray.WORKER_COLUMN, onnx_ray.PROVIDERS_COLUMN]
    np.testing.assert_array_equal(out["id"].to_numpy(), np.arange(ref.ROWS))
    probabilities, label = ref.run_reference(model, {"features": x}, batch=500)
    np.testing.assert_array_equal(np.stack(out["probabilities"].to_numpy()), probabilities)
    np.testing.assert_array_equal(out["label"].to_numpy(), label)
    workers = onnx_ray.report(scored)
    assert sum(w.rows for w in workers) == ref.ROWS
    assert {w.providers for w in workers} == {ref.ran_providers(model, providers)}
    assert "MapBatches(OnnxScorer)" in scored.stats()  # Ray Data's own progress and stats name the scorer


def test_threads_default_to_the_actors_cpu_share():
    model = ref.tabular_model()

    @ray.remote(num_cpus=2)
    def two_cpus():
        return onnx_ray.cpu_share(), onnx_ray.OnnxScorer(model)._scorer.intra_op_num_threads

    @ray.remote(num_cpus=1)
    def one_cpu_with_options():
        return onnx_ray.OnnxScorer(model, session_options={"intra_op_num_threads": 2})._scorer.intra_op_num_threads

    assert ray.get(two_cpus.remote()) == (2, 2)
    assert ray.get(one_cpu_with_options.remote()) == 2  # an explicit setting wins
    assert onnx_ray.cpu_share() is None or onnx_ray.cpu_share() >= 1


def test_actor_killed_mid_job_every_row_once(tmp_path):
    feeds = ref.fault_inputs()
    model = ref.fault_model(tmp_path)
    rows = [{"id": i, "input": feeds["input"][i], "attention_mask": feeds["attention_mask"][i]}
            for i in range(ref.FAULT_ROWS)]
    ds = ray.data.from_items(rows, override_num_blocks=ref.FAULT_ROWS // ref.FAULT_BATCH)
    scored = onnx_ray.score(ds, model, session_options=ref.options(), concurrency=2, batch_size=ref.FAULT_BATCH)
    batches, killed = [], None
    for batch in scored.iter_batches(batch_size=None, batch_format="numpy"):
        batches.append(batch)
        if killed is None:
            killed = int(str(batch[onnx_ray.WORKER_COLUMN][0]).rsplit(":", 1)[1])
            os.kill(killed, signal.SIGKILL)
            killed_after = sum(len(b["id"]) for b in batches)
    assert killed_after < ref.FAULT_ROWS  # rows were left when the actor died
    ids = np.concatenate([b["id"] for b in batches])
    np.testing.assert_array_equal(ids, np.arange(ref.FAULT_ROWS))  # every row once, in order
    (expected,) = ref.run_reference(model, feeds, batch=ref.FAULT_BATCH)
    np.testing.assert_array_equal(np.concatenate([b["output"] for b in batches]), expected)
    # Ray restarted the killed actor (the GCS actor table; ray.util.state needs the dashboard)
    from ray._private.state import actors

    pool = [a for a in actors().values() if "OnnxScorer" in a["ActorClassName"]]
    assert any(a["NumRestarts"] >= 1 for a in pool)
