"""Datasets and single-process reference runs shared by the Ray and Dask tests.

The reference runs one plain onnxplug session in the test process, batch by batch with the same
batch boundaries as the distributed job, one intra-op thread, as every worker runs.
"""

from __future__ import annotations

import numpy as np

import onnxplug as ort
from onnxplug.testing import model_suite, tabular

IMAGES = 1000
IMAGE_SEEDS = 10  # 100 images per seed: each 50-image batch drives the If one way (see if_model)
ROWS = 10_000
FEATURES = [f"f{i}" for i in range(tabular.FEATURES)]
# the rows of the fault jobs: a model slow enough that a worker is killed while batches remain
FAULT_ROWS = 60
FAULT_BATCH = 5


def options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return so


def images() -> np.ndarray:
    per = IMAGES // IMAGE_SEEDS
    return np.concatenate([model_suite.sample_inputs("if_model", per, seed=s)["input"] for s in range(IMAGE_SEEDS)])


def image_model() -> bytes:
    return model_suite.build("if_model").SerializeToString()


def tabular_model() -> bytes:
    return tabular.build().SerializeToString()


def fault_model(directory) -> str:
    """The fault jobs' model as a file: workers read the path (as on a shared file system) rather
    than receive its 12 MB with every task."""
    path = directory / "transformer_encoder.onnx"
    if not path.exists():
        path.write_bytes(model_suite.build("transformer_encoder").SerializeToString())
    return str(path)


def fault_inputs() -> dict[str, np.ndarray]:
    return model_suite.sample_inputs("transformer_encoder", FAULT_ROWS, seed=3)


def run_reference(model: bytes | str, feeds: dict[str, np.ndarray], batch: int,
                  providers: list | None = None) -> list[np.ndarray]:
    """Every output of ``model`` on ``feeds``, ``batch`` rows per run, concatenated."""
    sess = ort.InferenceSession(model, options(), providers=providers)
    n = len(next(iter(feeds.values())))
    parts = [sess.run(None, {k: v[i:i + batch] for k, v in feeds.items()}) for i in range(0, n, batch)]
    return [np.concatenate(p) for p in zip(*parts)]


def ran_providers(model: bytes, providers: list | None) -> tuple[str, ...]:
    """The providers a session here runs the model on (those assigned at least one node)."""
    sess = ort.InferenceSession(model, options(), providers=providers)
    used = {a.provider for a in sess.get_node_assignments()}
    return tuple(p for p in sess.get_providers() if p in used)
