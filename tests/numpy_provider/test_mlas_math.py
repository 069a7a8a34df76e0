"""float32 Sigmoid and Tanh give onnxruntime's values bit for bit (MLAS's rational approximations).

A Sigmoid one ulp away from onnxruntime's moved a few values of the DynamicQuantizeLinear after it
by one step, and the quantized OCR network behind it amplified that (ddddocr's quantized model).
The expected values are onnxruntime's on x86-64 (its FMA kernels, see _mlas_math).
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, run_ours


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(11)
    spread = [rng.standard_normal(50_000) * s for s in (0.01, 1.0, 4.0, 12.0, 30.0)]
    sweep = np.linspace(-20, 20, 40_001)
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 9.0, -9.0, 18.0, -18.0, np.inf, -np.inf, np.nan]
    return np.concatenate([*spread, sweep, special]).astype(np.float32)


@pytest.mark.parametrize("op_type", ["Sigmoid", "Tanh"])
def test_bit_exact_with_onnxruntime(op_type):
    assert_matches_oracle(op_type, {"x": _inputs()}, rtol=0, atol=0)


@pytest.mark.parametrize("op_type", ["Sigmoid", "Tanh"])
def test_odd_shapes_and_views(op_type):
    x = _inputs()[:3 * 5 * 7 * 11].reshape(3, 5, 7, 11)
    assert_matches_oracle(op_type, {"x": np.ascontiguousarray(x.transpose(3, 1, 0, 2))}, rtol=0, atol=0)
    assert_matches_oracle(op_type, {"x": x[0, 0, 0, :1]}, rtol=0, atol=0)


def test_sigmoid_then_dynamic_quantize_linear():
    x = _inputs()[:98_304].reshape(1, 96, 1024)
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("DynamicQuantizeLinear", ["s"], ["y", "scale", "zero"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, x.shape),
                               helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
                               helper.make_tensor_value_info("zero", TensorProto.UINT8, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    expected = onnxruntime.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"]).run(None, {"x": x})
    ours = run_ours(model, {"x": x})
    for a, e in zip(ours, expected):
        np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("op_type", ["Sigmoid", "Tanh"])
def test_blocks_and_units_split_over_the_product_threads(monkeypatch, parallel_for_calls, op_type):
    """A tensor of several units (an odd size: the last block and unit are short) shared over two
    product threads, and one of a few blocks on the calling thread: both bit-exact."""
    from onnxplug.providers.numpy.ops import _mlas_math

    monkeypatch.setattr(PRODUCT_THREADS, "threads", 2)
    splits = parallel_for_calls(_mlas_math)
    x = np.resize(_inputs(), 3 * _mlas_math._UNIT + 12_345).reshape(1, 3, -1)
    assert_matches_oracle(op_type, {"x": x}, rtol=0, atol=0)
    assert splits and splits[-1] == (4, True), splits
    x = np.resize(_inputs()[::-1], 2 * _mlas_math._BLOCK + 7)
    assert_matches_oracle(op_type, {"x": x}, rtol=0, atol=0)
    assert len(splits) == 1, "a tensor of one unit is not shared out"
