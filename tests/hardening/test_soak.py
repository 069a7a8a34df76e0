"""Soak: suite models run with the batch (loop_model: also sequence) size changing every run, on
numpy and numba; every result matches onnxruntime at its size, and resident memory after a warm-up
pass over the sizes grows by less than the bound. CI runs 240 runs per model; the long run
(``python -m tests.hardening.long_runs soak --runs 10000``) is recorded in docs/reliability.md."""

from __future__ import annotations

import os

import pytest

import onnxplug as ort
from tests.hardening.long_runs import SMALL_MODELS, soak

RUNS = 10_000 if os.environ.get("ONNXPLUG_LONG_RUNS") else 240


@pytest.mark.parametrize("model", SMALL_MODELS)
@pytest.mark.parametrize("provider", ["numpy", "numba"])
def test_changing_sizes_match_onnxruntime_and_memory_stays_flat(provider, model):
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not available here")
    result = soak(provider, model, RUNS)
    assert result["runs"] == RUNS
    # a few hundred runs: allocator noise is a larger share than over 10,000, so the bound is looser
    assert result["growth_pct"] < (2.0 if RUNS >= 10_000 else 3.0), result


def test_soak_compares_every_run():
    """The soak harness calls its check on every run (a failing check stops it)."""
    seen = []
    soak("numpy", "gru", 12, sizes=(1, 2, 3), check=lambda got, expected: seen.append(len(got)))
    assert len(seen) == 12

    def wrong(got, expected):
        raise AssertionError("mismatch")

    with pytest.raises(AssertionError, match="mismatch"):
        soak("numpy", "gru", 5, sizes=(1, 2), check=wrong)
