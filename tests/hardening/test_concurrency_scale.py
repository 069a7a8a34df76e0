"""Concurrency at scale: 8 threads running mixed suite models, each on its own sessions and all on
shared ones, on every CPU provider, bitwise identical to serial runs; threads creating and dropping
sessions while others run. CI runs 8 x 50; ``ONNXPLUG_LONG_RUNS=1`` runs 8 x 1,000 (the figures in
docs/reliability.md come from ``python -m tests.hardening.long_runs concurrency``)."""

from __future__ import annotations

import os

import pytest

import onnxplug as ort
from tests.hardening.long_runs import SMALL_MODELS, concurrency

RUNS = 1000 if os.environ.get("ONNXPLUG_LONG_RUNS") else 50


def _require(provider: str) -> None:
    if provider == "opencl":
        pytest.importorskip("pyopencl")
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not available here")


@pytest.mark.parametrize("provider", ["numpy", "numba", "opencl"])
def test_eight_threads_match_serial_on_own_and_shared_sessions(provider):
    _require(provider)
    counts = concurrency(provider, threads=8, runs=RUNS, models=SMALL_MODELS, create_drop=3)
    assert counts["own"] == 8 * RUNS and counts["shared"] == 8 * RUNS
    assert counts["created"] == 4 * 3
    assert counts["stress_runs"] > 0


def test_a_mismatch_is_reported():
    """The harness compares for real: a session whose results change between runs is caught."""
    import numpy as np

    from tests.hardening import long_runs

    original = long_runs.session
    calls = {"n": 0}

    class Drifting:
        def __init__(self, sess):
            self.sess = sess

        def run(self, names, feeds):
            calls["n"] += 1
            out = self.sess.run(names, feeds)
            return [o + np.float32(1e-3) for o in out] if calls["n"] > 20 else out

    long_runs.session = lambda model, provider: Drifting(original(model, provider))
    try:
        with pytest.raises(AssertionError, match="differs"):
            concurrency("numpy", threads=2, runs=10, models=("gru",), create_drop=1)
    finally:
        long_runs.session = original
