"""The zoo's text-transformer recipes: their specs hang together, and the CI model builds and runs."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug_conformance.zoo.recipes.transformers_text import MODELS


def _by_name(name: str):
    return next(m for m in MODELS if m.name == name)


def test_names_and_seeds_are_distinct():
    assert len({m.name for m in MODELS}) == len(MODELS)
    assert len({m.seed for m in MODELS}) == len(MODELS)
    assert {m.family for m in MODELS} == {"transformers"}
    assert {m.source_package for m in MODELS} == {"transformers"}


def test_one_ci_model_both_exporters_and_three_opsets():
    assert [m.name for m in MODELS if m.tier == "ci"] == ["bert"]
    dynamo = [m for m in MODELS if m.exporter == "dynamo"]
    assert len(dynamo) >= 5 and all(m.opset >= 18 for m in dynamo)
    assert len({m.opset for m in dynamo}) >= 2
    assert len([m for m in MODELS if m.exporter == "torchscript" and m.opset == 13]) >= 2


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_shape_sets_agree(model):
    for spec in model.inputs:
        first, second = spec.shapes
        assert len(first) == len(second) and first != second, spec.name
        if spec.name.endswith("input_ids"):  # token ids span the vocabulary
            assert f"vocab_size={spec.params['high']}," in model.recipe
    for shape_set in (0, 1):
        shapes = {s.name: s.shapes[shape_set] for s in model.inputs}
        assert len({shape[0] for shape in shapes.values()}) == 1  # one batch size
        if "past_key_0" in shapes and "attention_mask" in shapes:  # decoder-only step: mask spans past + new
            assert shapes["attention_mask"][1] == shapes["input_ids"][1] + shapes["past_key_0"][2]


def _feeds(model, shape_set: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(model.seed + shape_set)
    out = {}
    for spec in model.inputs:
        shape = spec.shapes[shape_set]
        if spec.generator == "integers":
            out[spec.name] = rng.integers(0, spec.params["high"], shape).astype(spec.dtype)
        elif spec.generator == "mask":
            mask = np.ones(shape, dtype=spec.dtype)
            mask[1:, -2:] = 0
            out[spec.name] = mask
        else:
            out[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return out


def test_ci_model_builds_and_numpy_gives_onnxruntimes_answers(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    import onnxplug

    model = _by_name("bert")
    path = tmp_path / "bert.onnx"
    model.build(path)
    oracle = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in oracle.get_inputs()] == [s.name for s in model.inputs]
    session = onnxplug.InferenceSession(str(path), providers=["numpy"])
    for shape_set in (0, 1):
        feeds = _feeds(model, shape_set)
        expected = oracle.run(None, feeds)
        assert expected[0].shape[:2] == feeds["input_ids"].shape
        for got, want in zip(session.run(None, feeds), expected):
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * max(1.0, float(np.abs(want).max())))
