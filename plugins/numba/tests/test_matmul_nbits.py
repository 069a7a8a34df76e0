"""com.microsoft MatMulNBits on the numba provider against onnxruntime: 4 and 8 bits, block sizes,
K not a multiple of the block, zero points absent or packed, bias, batched A, weights constant or
fed. The weights are dequantized to float32 and multiplied by BLAS, so outputs are compared to
float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import run_numba, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper


def _pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """Codes (rows, count) packed low bits first into uint8 (rows, count * bits / 8)."""
    per = 8 // bits
    rows, count = codes.shape
    padded = np.zeros((rows, -(-count // per) * per), np.uint8)
    padded[:, :count] = codes
    grouped = padded.reshape(rows, -1, per).astype(np.uint16)
    return sum(grouped[..., i] << (bits * i) for i in range(per)).astype(np.uint8)


def _model(rng, bits, block, k, n, zero_points, bias, constant, a_shape):  # type: ignore[no-untyped-def]
    blocks = -(-k // block)
    codes = rng.integers(0, 1 << bits, (n, blocks * block)).astype(np.uint8)
    values = {"b": _pack(codes, bits).reshape(n, blocks, block * bits // 8),
              "scales": rng.uniform(0.01, 0.1, n * blocks).astype(np.float32)}
    if zero_points:
        values["zp"] = _pack(rng.integers(0, 1 << bits, (n, blocks)).astype(np.uint8), bits).reshape(-1)
    if bias:
        values["bias"] = rng.standard_normal(n).astype(np.float32)
    feeds = {"a": rng.standard_normal((*a_shape, k)).astype(np.float32)}
    if not constant:
        feeds.update(values)
    names = ["a", "b", "scales", "zp" if zero_points else "", "", "bias" if bias else ""]
    node = helper.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=k, N=n, bits=bits, block_size=block)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k_, elem[v.dtype], v.shape) for k_, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [] if not constant else [numpy_helper.from_array(v, k_) for k_, v in values.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model, feeds


@pytest.mark.parametrize("bits, block, k, n", [(4, 32, 64, 64), (4, 16, 40, 24), (8, 32, 96, 17)])
@pytest.mark.parametrize("zero_points, bias, constant", [(False, False, True), (True, True, True), (True, False, False)])
@pytest.mark.parametrize("a_shape", [(5,), (2, 3)])
def test_matmul_nbits(rng, bits, block, k, n, zero_points, bias, constant, a_shape):
    model, feeds = _model(rng, bits, block, k, n, zero_points, bias, constant, a_shape)
    got, session = run_numba(model, feeds, threads=1)
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [("MatMulNBits", "numba")]
    expected = run_onnxruntime(model, feeds)[0]
    assert got[0].shape == expected.shape and got[0].dtype == expected.dtype
    np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(expected).max())))
