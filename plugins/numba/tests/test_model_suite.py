"""Every model of the project's suite on providers=["numba"] matches onnxruntime."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_matches_onnxruntime(name):
    import onnxruntime

    model = build(name).SerializeToString()
    feeds = sample_inputs(name, batch=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = ort.InferenceSession(model, providers=["numba"])
    got = session.run(None, feeds)
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * max(1.0, float(np.abs(w).max())))
    on_numba = sum(a.provider == "numba" for a in session.get_node_assignments())
    # control flow (If, Loop) stays on the default provider; everything else is ours
    assert on_numba >= len(session.get_node_assignments()) - 1
