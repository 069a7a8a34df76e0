"""The zoo's scikit-learn and onnxruntime-tools recipes: their specs hang together, and the CI models build."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from onnxplug_conformance.zoo.inputs import feeds
from onnxplug_conformance.zoo.recipes import ort_tools, sklearn_models

MODELS = [*sklearn_models.MODELS, *ort_tools.MODELS]


def _by_name(name: str):
    return next(m for m in MODELS if m.name == name)


def test_names_families_and_one_ci_model_per_family():
    assert len({m.name for m in MODELS}) == len(MODELS)
    assert {m.family for m in sklearn_models.MODELS} == {"sklearn"}
    assert {m.exporter for m in sklearn_models.MODELS} == {"skl2onnx", "onnxmltools"}
    assert {m.family for m in ort_tools.MODELS} == {"quantized", "ort-tools"}
    assert {(m.source_package, m.exporter) for m in ort_tools.MODELS} == {("onnxruntime", "onnxruntime-tools")}
    assert [m.name for m in sklearn_models.MODELS if m.tier == "ci"] == ["sklearn-logreg"]
    assert [m.name for m in ort_tools.MODELS if m.tier == "ci"] == ["quantized-cnn-qdq", "ort-quantized-lstm"]
    assert all(m.quantized for m in ort_tools.MODELS if m.family == "quantized")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_shape_sets_differ_and_share_one_batch_size(model):
    for spec in model.inputs:
        first, second = spec.shapes
        assert len(first) == len(second) and first[0] != second[0], spec.name
    for shape_set in (0, 1):
        assert len({s.shapes[shape_set][0] for s in model.inputs}) == 1  # one batch size
        feeds(model, shape_set)  # the generators accept the specs


def test_tfidf_text_is_drawn_from_the_fitted_words():
    (spec,) = _by_name("sklearn-tfidf-text").inputs
    assert spec.generator == "text" and tuple(spec.params["vocabulary"]) == sklearn_models.WORDS


def _ops(path) -> Counter:
    import onnx

    return Counter(f"{n.domain or 'ai.onnx'}::{n.op_type}" for n in onnx.load(str(path)).graph.node)


def test_ci_sklearn_model_builds_and_numpy_gives_onnxruntimes_answers(tmp_path):
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    import onnxplug

    model = _by_name("sklearn-logreg")
    path = tmp_path / "model.onnx"
    model.build(path)
    assert _ops(path) == Counter({"ai.onnx.ml::LinearClassifier": 1, "ai.onnx.ml::Normalizer": 1})
    oracle = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session = onnxplug.InferenceSession(str(path), providers=["numpy"])
    for shape_set in (0, 1):
        x = feeds(model, shape_set)
        label, probabilities = oracle.run(None, x)
        got_label, got_probabilities = session.run(None, x)
        np.testing.assert_array_equal(got_label, label)
        np.testing.assert_allclose(got_probabilities, probabilities, rtol=1e-3, atol=1e-4)


def test_ci_ort_tools_model_builds_with_dynamic_quantize_lstm(tmp_path):
    pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")

    model = _by_name("ort-quantized-lstm")
    path = tmp_path / "model.onnx"
    model.build(path)
    assert _ops(path)["com.microsoft::DynamicQuantizeLSTM"] == 1
    oracle = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in oracle.get_inputs()] == [s.name for s in model.inputs]
    for shape_set in (0, 1):
        x = feeds(model, shape_set)
        (scores,) = oracle.run(None, x)
        assert scores.shape == (*x["x"].shape[:2], 8)
