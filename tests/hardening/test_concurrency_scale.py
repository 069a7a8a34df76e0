"""Concurrency at scale: 8 threads running mixed suite models (and, where a zoo is built, zoo
models), each on its own sessions and all on shared ones, every other run through IOBinding, on
every CPU provider, bitwise identical to serial runs; threads creating and dropping sessions while
others run. CI runs 8 x 50; ``ONNXPLUG_LONG_RUNS=1`` runs 8 x 1,000 (the figures in
docs/reliability.md come from ``python -m tests.hardening.long_runs concurrency``). The zoo tests
run in the zoo env on its CI tier; they skip only where ``$ONNXPLUG_ZOO_DIR`` is unset or holds
no manifest, and fail when a model they need is not built there."""

from __future__ import annotations

import os

import numpy as np
import pytest

import onnxplug as ort
from tests.hardening import long_runs
from tests.hardening.long_runs import CI_ZOO_MODELS, SMALL_MODELS, concurrency

RUNS = 1000 if os.environ.get("ONNXPLUG_LONG_RUNS") else 50
PROVIDERS = ["numpy", "numba", "opencl"]


def _require(provider: str) -> None:
    if provider == "opencl":
        pytest.importorskip("pyopencl")
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not available here")


def _check_counts(counts: dict, runs: int, creators: int, create_drop: int) -> None:
    assert counts["own"] == 8 * runs and counts["shared"] == 8 * runs
    assert 0.4 * 16 * runs <= counts["iobinding"] <= 0.6 * 16 * runs
    assert counts["created"] == creators * create_drop
    assert counts["stress_runs"] > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_eight_threads_match_serial_on_own_and_shared_sessions(provider):
    _require(provider)
    counts = concurrency(provider, threads=8, runs=RUNS, models=SMALL_MODELS, create_drop=3)
    _check_counts(counts, RUNS, 4, 3)


def _zoo_built() -> None:
    """Skip without a zoo; fail when the zoo lacks a model of :data:`CI_ZOO_MODELS`."""
    from onnxplug_conformance.zoo import manifest

    if not os.environ.get("ONNXPLUG_ZOO_DIR") or not manifest.load(manifest.zoo_dir()):
        pytest.skip("no built zoo in $ONNXPLUG_ZOO_DIR (the zoo env builds its CI tier)")
    _, missing = long_runs.built_zoo_models(CI_ZOO_MODELS)
    assert not missing, (f"the zoo in {manifest.zoo_dir()} lacks {missing}: "
                         "python -m onnxplug_conformance.zoo.build --tier ci")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_eight_threads_match_serial_on_zoo_and_suite_models(provider):
    _zoo_built()
    _require(provider)
    models = ("gru", "if_model") + CI_ZOO_MODELS
    counts = concurrency(provider, threads=8, runs=RUNS, models=models, create_drop=3)
    assert counts["cases"] == 2 * 3 + len(CI_ZOO_MODELS) * 2
    _check_counts(counts, RUNS, 4, 3)


def _drifting(monkeypatch, drift_run: bool, drift_binding: bool) -> None:
    """Sessions whose results move by 1e-3 after their first 5 runs (the serial runs of gru are 3),
    through ``run`` or through IOBinding."""
    original = long_runs.session
    calls = {"n": 0}

    def later(out):
        calls["n"] += 1
        return [o + np.float32(1e-3) for o in out] if calls["n"] > 5 else out

    class Binding:
        def __init__(self, binding):
            self.binding = binding

        def __getattr__(self, name):
            return getattr(self.binding, name)

        def copy_outputs_to_cpu(self):
            out = self.binding.copy_outputs_to_cpu()
            return later(out) if drift_binding else out

    class Drifting:
        def __init__(self, sess):
            self.sess = sess

        def __getattr__(self, name):
            return getattr(self.sess, name)

        def run(self, names, feeds):
            out = self.sess.run(names, feeds)
            return later(out) if drift_run else out

        def io_binding(self):
            return Binding(self.sess.io_binding())

        def run_with_iobinding(self, binding):
            self.sess.run_with_iobinding(binding.binding)

    monkeypatch.setattr(long_runs, "session", lambda model, provider: Drifting(original(model, provider)))


def test_a_mismatch_is_reported(monkeypatch):
    """The harness compares for real: a session whose results change between runs is caught."""
    _drifting(monkeypatch, drift_run=True, drift_binding=False)
    with pytest.raises(AssertionError, match=r"differs \(run\)"):
        concurrency("numpy", threads=2, runs=10, models=("gru",), create_drop=1)


def test_a_mismatch_through_iobinding_is_reported(monkeypatch):
    """IOBinding runs are compared too: results that drift only through IOBinding are caught."""
    _drifting(monkeypatch, drift_run=False, drift_binding=True)
    with pytest.raises(AssertionError, match=r"differs \(IOBinding\)"):
        concurrency("numpy", threads=2, runs=10, models=("gru",), create_drop=1)


def test_a_zoo_model_that_is_not_built_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("ONNXPLUG_ZOO_DIR", str(tmp_path))
    assert long_runs.built_zoo_models(("zoo:sklearn-logreg",)) == ((), ("zoo:sklearn-logreg",))
    with pytest.raises(FileNotFoundError, match="sklearn-logreg.*onnxplug_conformance.zoo.build --only sklearn-logreg"):
        concurrency("numpy", threads=2, runs=2, models=("zoo:sklearn-logreg",))
