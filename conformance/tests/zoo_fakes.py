"""Small zoo models built with ``onnx.helper``, for the zoo's self-tests (``ONNXPLUG_ZOO_RECIPES=zoo_fakes``).

They cover the kinds of values the zoo feeds and compares (floats, integers, token ids with a
mask, strings, quantized integers), an ``onnx.reference`` oracle and a recipe that fails.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

OPSET = 17


@pytest.fixture
def fake_zoo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The zoo made of this module's models, in an empty folder of its own (returned)."""
    folder = tmp_path / "zoo"
    monkeypatch.setenv("ONNXPLUG_ZOO_RECIPES", "zoo_fakes")
    monkeypatch.setenv("ONNXPLUG_ZOO_DIR", str(folder))
    return folder


def _save(graph: onnx.GraphProto, path: Path, opset: int = OPSET) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build_mlp(path: Path) -> None:
    """x [N, 4] -> MatMul -> Add -> Relu -> y [N, 3], and ArgMax -> label [N] (int64)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"]), helper.make_node("ArgMax", ["y"], ["label"], axis=1, keepdims=0)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])], [w, b])
    _save(graph, path)


def build_tokens(path: Path) -> None:
    """Token ids [B, S] and a mask [B, S] -> embeddings zeroed where the mask is 0 [B, S, 3]."""
    table = numpy_helper.from_array(np.arange(30, dtype=np.float32).reshape(10, 3) / 7, "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["e"]),
         helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["m", "axes"], ["m3"]), helper.make_node("Mul", ["e", "m3"], ["out"])],
        "tokens", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "S"]),
                   helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", "S"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["B", "S", 3])],
        [table, numpy_helper.from_array(np.array([2], dtype=np.int64), "axes")])
    _save(graph, path)


def build_strings(path: Path) -> None:
    """Strings [N] -> the same strings, and whether each equals "red" (bool)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["colour"], ["same"]),
         helper.make_node("Equal", ["colour", "red"], ["is_red"])],
        "strings", [helper.make_tensor_value_info("colour", TensorProto.STRING, ["N"])],
        [helper.make_tensor_value_info("same", TensorProto.STRING, ["N"]),
         helper.make_tensor_value_info("is_red", TensorProto.BOOL, ["N"])],
        [helper.make_tensor("red", TensorProto.STRING, [], [b"red"])])
    _save(graph, path, 19)


def build_quantized(path: Path) -> None:
    """x [N, 5] -> QuantizeLinear (uint8) -> q."""
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"])],
        "quantized", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, ["N", 5])],
        [numpy_helper.from_array(np.array(0.02, dtype=np.float32), "scale"),
         numpy_helper.from_array(np.array(128, dtype=np.uint8), "zero")])
    _save(graph, path)


def build_broken(path: Path) -> None:
    raise RuntimeError("the exporter exploded\nsecond line")


def _x(n_features: int) -> tuple[InputSpec, ...]:
    return (InputSpec("x", "float32", ((2, n_features), (5, n_features)), "normal"),)


MODELS = [
    ZooModel("fake_mlp", "vision", "onnx", "MatMul, Add, Relu, ArgMax by onnx.helper", "onnx.helper", OPSET,
             _x(4), build_mlp, tier="ci"),
    ZooModel("fake_tokens", "transformers", "onnx", "Gather of token ids times a mask", "onnx.helper", OPSET,
             (InputSpec("input_ids", "int64", ((2, 4), (3, 9)), "integers", {"high": 10}),
              InputSpec("attention_mask", "int64", ((2, 4), (3, 9)), "mask")), build_tokens, seed=3),
    ZooModel("fake_strings", "sklearn", "onnx", "Identity and Equal on strings", "onnx.helper", 19,
             (InputSpec("colour", "object", ((3,), (7,)), "choice", {"values": ["red", "green", "blue"]}),),
             build_strings),
    ZooModel("fake_quantized", "quantized", "onnx", "QuantizeLinear to uint8", "onnx.helper", OPSET, _x(5),
             build_quantized, quantized=True),
    ZooModel("fake_reference", "vision", "onnx", "the MLP, checked with onnx.reference", "onnx.helper", OPSET,
             _x(4), build_mlp, oracle="reference", notes="checks the reference oracle"),
    ZooModel("fake_broken", "vision", "onnx", "a recipe whose exporter fails", "onnx.helper", OPSET, _x(4),
             build_broken, tier="ci"),
]
