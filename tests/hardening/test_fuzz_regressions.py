"""Escapes the fuzz harness found, each replayed as a model that must now raise a typed error."""

from __future__ import annotations

import numpy as np
import onnx
import onnxplug as ort
import pytest
from onnx import TensorProto, helper
from onnxplug.errors import ModelProtobufError, ModelValidationError, UnknownOpError
from onnxplug.ir.graph import Node
from onnxplug.ir.validate import check_known_op

from tests.hardening import fuzz


def _add_relu() -> bytes:
    return fuzz.seed_models()[0]  # x + b -> s -> Relu -> y


def test_seed_models_run():
    for data in fuzz.seed_models():
        assert fuzz.classify(data) == ("ok", "")


def test_value_name_not_utf8_is_a_protobuf_error():
    data = _add_relu().replace(b"\x12\x01s", b"\x12\x01\xff", 1)  # Add's output 's'
    with pytest.raises(ModelProtobufError, match=r"node\[0\]\.output = b'\\xff' is not valid UTF-8"):
        ort.InferenceSession(data)


def test_node_name_not_utf8_is_a_protobuf_error():
    m = onnx.ModelProto()
    m.ParseFromString(_add_relu())
    m.graph.node[0].name = "NODEA"
    data = m.SerializeToString().replace(b"NODEA", b"NO\xc3\x28A")
    with pytest.raises(ModelProtobufError, match=r"node\[0\]\.name"):
        ort.InferenceSession(data)


def test_op_type_not_utf8_is_a_protobuf_error():
    data = _add_relu().replace(b"Relu", b"Re\xffu")
    with pytest.raises(ModelProtobufError, match=r"node\[1\]\.op_type"):
        ort.InferenceSession(data)


def test_string_attribute_name_not_utf8_in_a_subgraph():
    data = fuzz.seed_models()[3].replace(b"body", b"bod\xff", 1)  # Loop's attribute name
    with pytest.raises(ModelProtobufError, match=r"attribute\[0\]\.name"):
        ort.InferenceSession(data)


def test_model_proto_with_non_utf8_string_is_refused():
    m = onnx.ModelProto()
    m.ParseFromString(_add_relu().replace(b"Relu", b"Re\xffu"))
    with pytest.raises(ModelProtobufError, match="op_type"):
        ort.InferenceSession(m)


def test_op_type_of_the_wrong_kind_is_an_unknown_op():
    node = Node(op_type=b"Relu", inputs=["x"], outputs=["y"], name="n", domain="", attributes={},
                doc_string="", opset=17, overload="")
    with pytest.raises(UnknownOpError, match="'n'"):
        check_known_op("<test>", node)


def test_valid_unicode_names_still_load_and_run():
    f = TensorProto.FLOAT
    g = helper.make_graph([helper.make_node("Relu", ["\u00e9\u4e2d"], ["y\u00ff"], name="n\u00e9")], "g",
                          [helper.make_tensor_value_info("\u00e9\u4e2d", f, [2])],
                          [helper.make_tensor_value_info("y\u00ff", f, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    out = ort.InferenceSession(m.SerializeToString()).run(None, {"\u00e9\u4e2d": np.array([-1, 2], np.float32)})
    np.testing.assert_array_equal(out[0], [0, 2])


def test_input_of_an_element_type_outside_the_enum_is_refused():
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", 999, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelValidationError, match=r"graph\.input\[0\]\.type\.tensor_type\.elem_type = 999"):
        ort.InferenceSession(m.SerializeToString())


def test_initializer_of_a_data_type_outside_the_enum_is_refused():
    m = onnx.ModelProto()
    m.ParseFromString(_add_relu())
    m.graph.initializer[0].data_type = 120
    with pytest.raises(ModelValidationError, match=r"initializer\[0\]\.data_type = 120"):
        ort.InferenceSession(m.SerializeToString())


def test_huge_declared_input_does_not_stall_shape_inference():
    # seed 2 case 1811: onnx's data propagation of Size over a [2^40] input never ended
    g = helper.make_graph([helper.make_node("Size", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**40])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    assert fuzz.classify(m.SerializeToString(), limit_s=10.0)[0] in ("ok", "typed")
    assert fuzz.classify(fuzz.make_case(2, 1811), limit_s=10.0)[0] in ("ok", "typed")


@pytest.mark.parametrize("value", [b"ne\xffrest", [b"a", b"\xc3\x28"]])
def test_string_attribute_value_not_utf8_is_refused_by_name(value):
    # seed 3 case 39356: UnicodeDecodeError from a STRING attribute's value
    m = onnx.ModelProto()
    m.ParseFromString(_add_relu())
    m.graph.node[1].attribute.append(helper.make_attribute("mode", value))
    with pytest.raises(ModelValidationError,
                       match=r"node 'Relu_1' \(Relu\): string attribute 'mode' is not valid UTF-8"):
        ort.InferenceSession(m.SerializeToString())
    assert fuzz.classify(fuzz.make_case(3, 39356))[0] in ("ok", "typed")
