"""The op a node case is about, read from its model (single node, or an expanded function body)."""

from __future__ import annotations

import pytest

from onnxplug_conformance.case_labels import case_op, op_label
from onnxplug_conformance.contract.survey import node_cases


@pytest.mark.parametrize(("name", "op"), [
    ("test_abs", "Abs"),
    ("test_layer_normalization_2d_axis0_expanded", "LayerNormalization"),
    ("test_bernoulli_expanded", "Bernoulli"),
    ("test_flexattention_expanded_ver26", "ai.onnx.preview::FlexAttention"),
    ("test_ai_onnx_ml_tree_ensemble_set_membership", "ai.onnx.ml::TreeEnsemble"),
    ("test_adagrad", "ai.onnx.preview.training::Adagrad"),
    ("test_loop11", "Loop"),
    ("test_sequence_map_identity_1_sequence", "SequenceMap"),
])
def test_known_cases(name: str, op: str) -> None:
    assert case_op(node_cases()[name]) == op


def test_every_label_is_an_onnx_op() -> None:
    import onnx

    for case in node_cases().values():
        label = case_op(case)
        domain, _, op = label.rpartition("::")
        assert onnx.defs.has(op, domain), f"{case.name}: {label}"


def test_op_label_spelling() -> None:
    assert op_label("ai.onnx", "Relu") == "Relu"
    assert op_label("ai.onnx.ml", "ZipMap") == "ai.onnx.ml::ZipMap"
