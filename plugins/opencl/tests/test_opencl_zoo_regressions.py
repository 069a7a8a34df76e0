"""Regressions found by the model zoo: each a one- or two-node model compared with onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper
from opencl_helpers import TensorProto, assert_close, helper, run_both


def _model(nodes, inputs, outputs, opset: int = 17) -> bytes:
    """A model with symbolic input dims (so the optimizer cannot fold shapes) and typed outputs."""
    graph = helper.make_graph(nodes, "test", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def test_gather_of_a_shape_with_a_scalar_index_is_0d():
    """Shape -> Gather with a 0-d index (Faster R-CNN's RPN): the host-mirrored result stays 0-d.
    The Constant index is also an output, so it is not folded and carries a host mirror."""
    index = numpy_helper.from_array(np.array(2, np.int64))
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Constant", [], ["i"], value=index),
             helper.make_node("Gather", ["s", "i"], ["g"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c", "h", "w"])],
                   [helper.make_tensor_value_info("g", TensorProto.INT64, []),
                    helper.make_tensor_value_info("i", TensorProto.INT64, [])])
    x = np.zeros((1, 3, 5, 7), np.float32)
    got, want, _ = run_both(model, {"x": x})
    assert_close(got, want)
