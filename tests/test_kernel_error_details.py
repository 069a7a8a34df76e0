"""A kernel failing at run time: the error names the node, op and provider, and the element types
and shapes of what the node was given, in a main graph and in a Loop body."""

from __future__ import annotations

import numpy as np
import onnxplug as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxplug import errors

from tests.conftest import make_model

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def test_error_names_the_inputs_types_and_shapes():
    shape = numpy_helper.from_array(np.array([7], np.int64), "shape")
    m = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")],
                   [("x", F, ["N", 2])], [("y", F, [7])], [shape])
    sess = ort.InferenceSession(m, providers=["numpy"])
    with pytest.raises(errors.KernelError) as info:
        sess.run(None, {"x": np.zeros((3, 2), np.float32)})
    message = str(info.value)
    assert "bad_reshape" in message and "Reshape" in message and "'numpy'" in message
    assert "given (x: float[3, 2], shape: int64[1])" in message


def test_error_in_a_loop_body_names_what_the_body_node_was_given():
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Reshape", ["s_in", "bad_shape"], ["s_out"], name="bad_reshape")],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("s_in", F, [3])],
        [vi("cond_out", B, []), vi("s_out", F, [3])],
        initializer=[helper.make_tensor("bad_shape", I64, [1], [4])])
    trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
    m = make_model([helper.make_node("Loop", ["trips", "", "s0"], ["s"], name="loop", body=body)],
                   [("s0", F, [3])], [("s", F, [3])], [trips])
    sess = ort.InferenceSession(m, providers=["numpy"])
    with pytest.raises(errors.KernelError, match=r"bad_reshape.*given \(s_in: float\[3\], bad_shape: int64\[1\]\)"):
        sess.run(None, {"s0": np.zeros(3, np.float32)})
