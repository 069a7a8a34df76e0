"""The engine-free part of onnxplug.integrations (runs without ray or dask): importing onnxplug
or the integration modules does not import the engines, options travel as a plain dict, the spec
pickles without a session, and a scorer's batches equal a plain session's runs, rows in order."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.errors import UnsupportedOptionError
from onnxplug.integrations._common import (
    PROVIDERS_COLUMN,
    WORKER_COLUMN,
    Scorer,
    ScoringSpec,
    scorer_for,
    session_options_from_dict,
    session_options_to_dict,
    summarize,
)
from onnxplug.testing import tabular


def test_imports_stay_light():
    code = ("import sys, onnxplug; assert 'onnxplug.integrations' not in sys.modules; "
            "import onnxplug.integrations.ray, onnxplug.integrations.dask; "
            "print(sorted(m for m in ('ray', 'dask', 'distributed', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_session_options_round_trip_as_a_plain_dict():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_free_dimension_override_by_name("batch", 4)
    plain = session_options_to_dict(so)
    assert plain["intra_op_num_threads"] == 3 and plain["graph_optimization_level"] == 1
    assert plain["session_config"] == {"session.disable_cpu_ep_fallback": "1"}
    assert plain["free_dimension_overrides"] == {"batch": 4}
    assert all(type(v) in (int, str, bool, dict) for v in plain.values())
    back = session_options_from_dict(plain)
    assert back.intra_op_num_threads == 3 and back.fallback_disabled
    assert back.free_dimension_overrides == {"batch": 4}


def test_refused_option_fails_on_the_client():
    with pytest.raises(UnsupportedOptionError):
        ScoringSpec.create(b"", {"session_config": {"session.set_denormal_as_zero": "1"}})


def test_spec_pickles_and_scorer_matches_a_session():
    model = tabular.build().SerializeToString()
    x = tabular.sample_rows(300, seed=5)
    features = [f"f{i}" for i in range(x.shape[1])]
    spec = pickle.loads(pickle.dumps(ScoringSpec.create(model, {"intra_op_num_threads": 1},
                                                        inputs={"features": features})))
    assert spec.key == ScoringSpec.create(model, {"intra_op_num_threads": 1}, inputs={"features": features}).key
    scorer = scorer_for(spec)
    assert scorer_for(spec) is scorer  # one session per process and spec
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    probabilities, label = ort.InferenceSession(model, so).run(None, {"features": x})
    batch = {**{f: x[:, i] for i, f in enumerate(features)}, "id": np.arange(300)}
    out = scorer.score_numpy(batch)  # pandas batches: tests/integrations (the distributed env)
    assert list(out) == ["id", "probabilities", "label", WORKER_COLUMN, PROVIDERS_COLUMN]
    np.testing.assert_array_equal(out["id"], np.arange(300))
    np.testing.assert_array_equal(out["probabilities"], probabilities)
    np.testing.assert_array_equal(out["label"], label)
    halves = [scorer.score_numpy({k: v[:100] for k, v in batch.items()}), out]
    assert summarize(halves) == [(out[WORKER_COLUMN][0], ("numpy",), 400)]
    assert scorer.rows >= 400


def test_missing_provider_falls_back_with_a_warning():
    if "cupy" in ort.get_available_providers():
        pytest.skip("onnxplug-cupy plays CUDAExecutionProvider on this machine")
    model = tabular.build().SerializeToString()
    spec = ScoringSpec.create(model, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    with pytest.warns(RuntimeWarning, match="CUDAExecutionProvider"):
        scorer = Scorer(spec, default_threads=2)
    assert scorer.providers == ["numpy"] and scorer.intra_op_num_threads == 2
    assert any("CUDAExecutionProvider" in w for w in scorer.warnings)
