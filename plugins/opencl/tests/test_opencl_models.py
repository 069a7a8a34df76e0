"""The model suite with providers=["opencl"] against onnxruntime's CPU provider."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs

#: Ops the provider leaves to the default provider on purpose (recurrent cells and control flow;
#: the bodies of If and Loop do run on OpenCL).
HOST_OPS = {"LSTM", "GRU", "If", "Loop"}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_matches_onnxruntime(name):
    model = build(name, seed=3).SerializeToString()
    feeds = sample_inputs(name, batch=2, seed=5)
    session = ort.InferenceSession(model, providers=["opencl"])
    placed = session.get_node_assignments()
    elsewhere = {a.op_type for a in placed if a.provider != "opencl"}
    assert elsewhere <= HOST_OPS, elsewhere
    assert sum(a.provider == "opencl" for a in placed) >= len(placed) - 2
    got = session.run(None, feeds)
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(w).max())))
