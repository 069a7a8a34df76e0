"""Running built zoo models: matches, a mismatch a wrong provider causes, errors, claimed fractions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug_conformance.provider_spec import resolve_provider
from onnxplug_conformance.zoo.build import build_all
from onnxplug_conformance.zoo.registry import all_models, get_model
from onnxplug_conformance.zoo.runner import error_line, run_zoo_model
from zoo_fakes import fake_zoo  # noqa: F401 - a fixture

BUILT = ("fake_mlp", "fake_tokens", "fake_strings", "fake_quantized", "fake_reference")


@pytest.fixture
def built(fake_zoo: Path) -> Path:
    build_all(all_models(), isolate=False)
    return fake_zoo / "models"


@pytest.mark.parametrize("name", BUILT)
def test_every_kind_of_model_matches_on_numpy(built: Path, name: str) -> None:
    result = run_zoo_model(get_model(name), built / f"{name}.onnx", "numpy")
    assert result.match, result.summary
    assert result.error == "" and result.problems == [] and result.claimed == 1.0
    assert result.nodes == result.assignments["numpy"] >= 1 and result.time_s > 0
    assert result.oracle == ("reference" if name == "fake_reference" else "onnxruntime")


def test_a_wrong_provider_is_caught_and_its_share_of_nodes_recorded(built: Path) -> None:
    wrong = resolve_provider("broken_providers:WrongReluProvider")
    path = built / "fake_mlp.onnx"
    result = run_zoo_model(get_model("fake_mlp"), path, wrong.name)
    assert not result.match and result.error == ""
    assert any(p.startswith("shape set 0: output 'y'") for p in result.problems)
    assert any(p.startswith("shape set 1: output 'y'") for p in result.problems)
    session = ort.InferenceSession(str(path), providers=[wrong.name])
    counts = Counter(a.provider for a in session.get_node_assignments())
    assert counts[wrong.name] == 1  # Relu alone
    assert result.claimed == pytest.approx(1 / sum(counts.values()))
    assert result.assignments == dict(counts)


def test_a_provider_that_raises_is_an_error_with_its_first_line(built: Path) -> None:
    greedy = resolve_provider("broken_providers:GreedyProvider")
    result = run_zoo_model(get_model("fake_tokens"), built / "fake_tokens.onnx", greedy.name)
    assert not result.match and not result.oracle_error
    assert result.error.startswith("NotImplementedOpError: provider 'greedy' claimed node")
    assert "\n" not in result.error and result.claimed is None


def test_an_oracle_that_fails_is_reported_as_the_oracle_s(built: Path, tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 99  # newer than onnxruntime reads
    path = tmp_path / "future.onnx"
    onnx.save(model, str(path))
    result = run_zoo_model(get_model("fake_mlp"), path, "numpy")
    assert result.oracle_error and not result.match and result.error.startswith("oracle onnxruntime: ")


def test_error_line_keeps_the_type_and_first_line() -> None:
    assert error_line(ValueError("first\nsecond")) == "ValueError: first"
    assert error_line(KeyError()) == "KeyError"
