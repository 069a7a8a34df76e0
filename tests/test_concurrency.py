"""One session serves many threads: concurrent runs give exactly the serial results."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

import onnxplug as ort
from onnxplug.testing.model_suite import build, sample_inputs

THREADS = 8
RUNS = 50


def test_eight_threads_fifty_runs_match_serial():
    model = build("transformer_encoder")
    sess = ort.InferenceSession(model, providers=["numpy"])
    feeds = [sample_inputs("transformer_encoder", batch=1, seed=s) for s in range(THREADS)]
    serial = [sess.run(None, f) for f in feeds]

    def worker(i: int) -> list[list[np.ndarray]]:
        return [sess.run(None, feeds[i]) for _ in range(RUNS)]

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(worker, range(THREADS)))
    for i, runs in enumerate(results):
        assert len(runs) == RUNS
        for outs in runs:
            for got, want in zip(outs, serial[i]):
                np.testing.assert_array_equal(got, want)
    # Different feeds really gave different outputs, so a mix-up between threads would show.
    assert not np.array_equal(serial[0][0], serial[1][0])


def test_concurrent_loop_model_matches_serial():
    model = build("loop_model")
    sess = ort.InferenceSession(model, providers=["numpy"])
    feeds = [sample_inputs("loop_model", batch=2, seed=s) for s in range(THREADS)]
    serial = [sess.run(None, f) for f in feeds]
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(lambda i: [sess.run(None, feeds[i]) for _ in range(RUNS)], range(THREADS)))
    for i, runs in enumerate(results):
        for outs in runs:
            for got, want in zip(outs, serial[i]):
                np.testing.assert_array_equal(got, want)
