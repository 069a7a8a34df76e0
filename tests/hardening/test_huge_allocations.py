"""A model asking for more memory than there is fails with a typed error naming the node and the size.

With the default limit (half of physical memory, ``session.onnxplug.max_allocation_bytes``) a
node's request is refused before allocating, as AllocationLimitError; a tensor header claiming
more elements than its data holds is refused by the loader. tests/hardening/test_allocation_limit.py
checks each op kind against a small limit.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxplug as ort
import pytest
from onnx import TensorProto, helper
from onnxplug.errors import AllocationLimitError, ModelValidationError

_I = onnx.numpy_helper.from_array
_HUGE = np.array([2**20, 2**20], np.int64)  # 2^40 elements: 4 TiB of float32


def _model(nodes, inits) -> bytes:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("op,inputs", [("ConstantOfShape", ["s"]), ("Expand", ["x", "s"])])
def test_huge_shape_is_refused_under_the_default_limit_naming_node_and_size(op, inputs):
    sess = ort.InferenceSession(_model([helper.make_node(op, inputs, ["y"], name="huge")], [_I(_HUGE, "s")]))
    with pytest.raises(AllocationLimitError, match=r"node 'huge' .*float32\[1048576, 1048576\]: 4398046511104 "
                                                   r"bytes \(4\.00 TiB\), over the limit of \d+ bytes"):
        sess.run(None, {"x": np.ones(1, np.float32)})
    np.testing.assert_array_equal(  # the session still runs a sane request afterwards
        ort.InferenceSession(_model([helper.make_node("Relu", ["x"], ["y"])], [])).run(
            None, {"x": np.array([-1], np.float32)})[0], [0])


def test_tensor_header_claiming_2_to_the_60_elements_is_refused_at_load():
    t = _I(np.zeros(4, np.float32), "big")
    del t.dims[:]
    t.dims.extend([2**30, 2**30])
    with pytest.raises(ModelValidationError, match="tensor 'big' cannot be read"):
        ort.InferenceSession(_model([helper.make_node("Add", ["x", "big"], ["y"])], [t]))
