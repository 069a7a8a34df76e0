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


def _float_inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 18.0, -18.0, 9.0, -9.0, 1e-30, -1e-30], np.float32)
    return np.concatenate([(rng.standard_normal(50_000) * 8).astype(np.float32),
                           np.linspace(-30, 30, 20_001, dtype=np.float32), edges])


def _onnxruntime_one_thread(model: bytes, feeds: dict) -> list:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)


def test_sigmoid_tanh_and_silu_give_onnxruntimes_float32_bits():
    """float32 Sigmoid and Tanh as MLAS computes them (an ulp off moved a DynamicQuantizeLinear step of
    ddddocr's quantized OCR model), alone and inside a fused chain (x * Sigmoid(x))."""
    import onnxplug as ort

    x = _float_inputs()
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Tanh", ["x"], ["t"]),
             helper.make_node("Mul", ["x", "s"], ["silu"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                   [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["n"]) for n in ("s", "t", "silu")])
    session = ort.InferenceSession(model, providers=["opencl"])
    assert {a.provider for a in session.get_node_assignments()} == {"opencl"}
    expected = _onnxruntime_one_thread(model, {"x": x})
    for name, got, want in zip(("s", "t", "silu"), session.run(None, {"x": x}), expected):
        assert np.isnan(got[-7]) and np.isnan(want[-7]), name
        same = got.view(np.uint32) == want.view(np.uint32)
        assert same.all(), f"{name}: {np.count_nonzero(~same)} values differ from onnxruntime's bits"
