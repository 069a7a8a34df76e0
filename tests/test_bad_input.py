"""Malformed models and feeds: each raises a typed error from onnxplug.errors naming the culprit."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug import errors
from tests.conftest import make_model

F = TensorProto.FLOAT


def _relu(x="x", y="y", name="relu"):
    return helper.make_node("Relu", [x], [y], name=name)


def _ok_model():
    return make_model([_relu()], [("x", F, [2, 3])], [("y", F, [2, 3])])


def _truncated():
    return _ok_model().SerializeToString()[:-7]


def _cycle():
    m = make_model([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                    helper.make_node("Relu", ["a"], ["b"], name="second")],
                   [("x", F, [2])], [("a", F, [2])])
    return m


def _missing_initializer():
    return make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
                      [("x", F, [2])], [("y", F, [2])])


def _unknown_op():
    return make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob")],
                      [("x", F, [2])], [("y", F, [2])])


def _future_opset():
    return make_model([_relu()], [("x", F, [2])], [("y", F, [2])], opset=onnx.defs.onnx_opset_version() + 1)


def _future_ir():
    m = _ok_model()
    m.ir_version = onnx.IR_VERSION + 1
    return m


def _duplicate_output():
    return make_model([_relu("x", "y", "r1"), _relu("x", "y", "r2")], [("x", F, [2])], [("y", F, [2])])


def _undefined_graph_output():
    return make_model([_relu()], [("x", F, [2])], [("nowhere", F, [2])])


def _custom_domain_no_provider():
    m = make_model([helper.make_node("Magic", ["x"], ["y"], name="magic", domain="com.example")],
                   [("x", F, [2])], [("y", F, [2])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    return m


def _bad_attribute_type():
    node = helper.make_node("Gemm", ["x", "x"], ["y"], name="gemm", alpha="not a float")
    return make_model([node], [("x", F, [2, 2])], [("y", F, [2, 2])])


def _external_data(tmp_path: Path, location: str) -> str:
    m = make_model([helper.make_node("Add", ["x", "w"], ["y"], name="add_w")],
                   [("x", F, [2])], [("y", F, [2])], [numpy_helper.from_array(np.ones(2, np.float32), "w")])
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.ones(2, np.float32).tobytes())
    onnx.save_model(m, path)
    return str(path)


MODEL_CASES = [
    # (id, model factory, expected error, words the message must contain)
    ("truncated-protobuf", _truncated, errors.ModelLoadError, ["protobuf"]),
    ("empty-bytes", lambda: b"", errors.ModelLoadError, ["no graph"]),
    ("not-a-model", lambda: 42, errors.ModelLoadError, ["int"]),
    ("cycle", _cycle, errors.GraphCycleError, ["cycle", "first", "second"]),
    ("missing-initializer", _missing_initializer, errors.UndefinedValueError, ["add_w", "'w'"]),
    ("unknown-op", _unknown_op, errors.UnknownOpError, ["frob", "Frobnicate"]),
    ("opset-too-new", _future_opset, errors.UnsupportedOpsetError, ["opset", str(onnx.defs.onnx_opset_version() + 1)]),
    ("ir-version-too-new", _future_ir, errors.UnsupportedIRVersionError, ["IR version", str(onnx.IR_VERSION + 1)]),
    ("duplicate-output", _duplicate_output, errors.DuplicateDefinitionError, ["'y'", "r2"]),
    ("undefined-graph-output", _undefined_graph_output, errors.UndefinedValueError, ["nowhere"]),
    ("custom-op-no-provider", _custom_domain_no_provider, errors.NotImplementedOpError, ["magic", "com.example"]),
    ("bad-attribute-type", _bad_attribute_type, errors.ModelValidationError, ["alpha"]),
    ("missing-file", lambda: "/no/such/model.onnx", errors.ModelLoadError, ["/no/such/model.onnx"]),
]


@pytest.mark.parametrize("factory,error,words", [c[1:] for c in MODEL_CASES], ids=[c[0] for c in MODEL_CASES])
def test_bad_model_raises_typed_error(factory, error, words):
    with pytest.raises(error) as info:
        ort.InferenceSession(factory(), providers=["numpy"])
    assert isinstance(info.value, errors.OnnxplugError)
    for word in words:
        assert word in str(info.value), f"{word!r} not in: {info.value}"


@pytest.mark.parametrize("location,words", [
    ("../secret.bin", ["escapes", "w"]),
    (os.path.abspath("/etc/passwd"), ["relative", "w"]),
    ("missing.bin", ["does not exist", "w"]),
])
def test_external_data_outside_folder_is_refused(tmp_path, location, words):
    path = _external_data(tmp_path, location)
    with pytest.raises(errors.ExternalDataError) as info:
        ort.InferenceSession(path, providers=["numpy"])
    for word in words:
        assert word in str(info.value)


def test_external_data_inside_folder_loads(tmp_path):
    path = _external_data(tmp_path, "w.bin")
    (Path(path).parent / "w.bin").write_bytes(np.array([1, 2], np.float32).tobytes())
    out = ort.InferenceSession(path, providers=["numpy"]).run(None, {"x": np.zeros(2, np.float32)})[0]
    np.testing.assert_array_equal(out, [1, 2])


FEED_CASES = [
    ("wrong-dtype", {"x": np.zeros((2, 3), np.float64)}, errors.InputTypeError, ["'x'", "tensor(float)", "float64"]),
    ("wrong-rank", {"x": np.zeros((2, 3, 1), np.float32)}, errors.InputShapeError, ["'x'", "rank 2", "rank 3"]),
    ("wrong-dim", {"x": np.zeros((2, 4), np.float32)}, errors.InputShapeError, ["'x'", "dimension 1", "3"]),
    ("missing-input", {}, errors.MissingInputError, ["'x'"]),
    ("unknown-input", {"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)}, errors.UnknownInputError, ["'z'"]),
    # a list is taken, as onnxruntime takes it; a tuple or a scalar is refused, as onnxruntime refuses it
    ("tuple", {"x": ((1.0, 2.0, 3.0),) * 2}, errors.InputTypeError, ["'x'", "tuple"]),
    ("scalar", {"x": 1.0}, errors.InputTypeError, ["'x'", "scalar float"]),
    ("ragged-list", {"x": [[1.0, 2.0, 3.0], [1.0]]}, errors.InputTypeError, ["'x'", "list"]),
    ("feed-not-a-dict", [np.zeros((2, 3), np.float32)], errors.InvalidInputError, ["dict"]),
]


@pytest.mark.parametrize("feeds,error,words", [c[1:] for c in FEED_CASES], ids=[c[0] for c in FEED_CASES])
def test_bad_feed_raises_typed_error(feeds, error, words):
    sess = ort.InferenceSession(_ok_model(), providers=["numpy"])
    with pytest.raises(error) as info:
        sess.run(None, feeds)
    for word in words:
        assert word in str(info.value), f"{word!r} not in: {info.value}"
    # The session is still usable afterwards: no partial state was left behind.
    x = np.array([[-1, 0, 1], [2, -2, 3]], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], np.maximum(x, 0))


def test_unknown_output_name():
    sess = ort.InferenceSession(_ok_model(), providers=["numpy"])
    with pytest.raises(errors.InvalidOutputError, match="'nope'"):
        sess.run(["nope"], {"x": np.zeros((2, 3), np.float32)})


def test_kernel_failure_names_node():
    # Reshape to an impossible shape only fails at run time, inside the kernel.
    shape = numpy_helper.from_array(np.array([7], np.int64), "shape")
    m = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")],
                   [("x", F, ["N"])], [("y", F, [7])], [shape])
    sess = ort.InferenceSession(m, providers=["numpy"])
    with pytest.raises(errors.KernelError, match="bad_reshape"):
        sess.run(None, {"x": np.zeros(3, np.float32)})
