"""Every model of the suite gives onnxruntime's outputs on the default numpy provider."""

from __future__ import annotations

import pytest

import onnxplug as ort
from onnxplug.testing.model_suite import MODEL_NAMES, build, sample_inputs
from tests.oracle import assert_close, ort_outputs


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_matches_onnxruntime(name, batch):
    model = build(name)
    feeds = sample_inputs(name, batch=batch)
    sess = ort.InferenceSession(model, providers=["numpy"])
    assert {a.provider for a in sess.get_node_assignments()} == {"numpy"}
    assert_close(sess.run(None, feeds), ort_outputs(model, feeds))


@pytest.mark.parametrize("seed", [0, 1])
def test_both_if_branches_match_onnxruntime(seed):
    model = build("if_model")
    feeds = sample_inputs("if_model", batch=2, seed=seed)  # even seeds take then_branch, odd else_branch
    sess = ort.InferenceSession(model, providers=["numpy"])
    assert_close(sess.run(None, feeds), ort_outputs(model, feeds))
