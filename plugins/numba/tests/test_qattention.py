"""com.microsoft QAttention on the numba provider against onnxruntime: mask_index absent, end
positions, end and start positions, per key; unidirectional; int8 and uint8 weights, per-tensor
and per-column weight scales; images over threads; the products with AVX-512 VNNI (where the CPU
has it) and without; past is left to the numpy provider. The softmax's exponentials are not
onnxruntime's, so outputs are compared to float32 tolerance."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from numba_test_helpers import run_numba, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from onnxplug_numba.kernels import vnni


@pytest.fixture(params=["vnni", "int16"])
def products(request, monkeypatch):  # type: ignore[no-untyped-def]
    if request.param == "vnni" and not vnni.AVAILABLE:
        pytest.skip("the CPU has no AVX-512 VNNI")
    monkeypatch.setattr(vnni, "AVAILABLE", request.param == "vnni")


def _model(rng, batch=2, seq=8, hidden=64, heads=4, mask="ends", w_type=np.int8, per_column=False, past=False,
           **attrs):  # type: ignore[no-untyped-def]
    params = (3 * hidden,) if per_column else ()
    info = np.iinfo(w_type)
    constants = {"w": rng.integers(info.min, info.max + 1, (hidden, 3 * hidden)).astype(w_type),
                 "bias": rng.standard_normal(3 * hidden).astype(np.float32),
                 "ws": rng.uniform(0.005, 0.02, params).astype(np.float32),
                 "wzp": rng.integers(info.min, info.max + 1, params).astype(w_type) if w_type == np.uint8
                 else np.zeros(params, w_type)}
    feeds = {"x": rng.integers(0, 256, (batch, seq, hidden)).astype(np.uint8), "xs": np.array(0.02, np.float32),
             "xzp": np.array(118, np.uint8)}
    ends = rng.integers(1, seq + 1, batch).astype(np.int32)
    if mask == "ends":
        feeds["mask"] = ends
    elif mask == "ends and starts":
        feeds["mask"] = np.concatenate((ends, np.minimum(ends - 1, rng.integers(0, 3, batch)))).astype(np.int32)
    elif mask == "per key":
        feeds["mask"] = (np.arange(seq)[None, :] < ends[:, None]).astype(np.int32)
    if past:
        feeds["past"] = rng.standard_normal((2, batch, heads, 3, hidden // heads)).astype(np.float32)
    names = ["x", "w", "bias", "xs", "ws", "mask" if "mask" in feeds else "", "xzp", "wzp", "past" if past else ""]
    node = helper.make_node("QAttention", names, ["y"], domain="com.microsoft", num_heads=heads, **attrs)
    elem = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.float32): TensorProto.FLOAT,
            np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, elem[v.dtype], v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model, feeds


def _assert_close(model: onnx.ModelProto, feeds: dict[str, np.ndarray], threads: int = 1) -> None:
    got, session = run_numba(model, feeds, threads=threads)
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [("QAttention", "numba")]
    expected = run_onnxruntime(model, feeds)[0]
    assert got[0].dtype == expected.dtype and got[0].shape == expected.shape
    np.testing.assert_allclose(got[0], expected, rtol=1e-5, atol=1e-5 * float(np.abs(expected).max()))


@pytest.mark.parametrize("mask", ["none", "ends", "ends and starts", "per key"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_masks(products, rng, mask, unidirectional):
    _assert_close(*_model(rng, mask=mask, unidirectional=unidirectional))


@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("batch, seq, hidden, heads", [(1, 1, 16, 2), (3, 19, 64, 4), (2, 5, 96, 12)])
def test_weights_and_sizes(products, rng, w_type, per_column, batch, seq, hidden, heads):
    _assert_close(*_model(rng, batch, seq, hidden, heads, w_type=w_type, per_column=per_column))


@pytest.mark.parametrize("threads", [2, 3])
def test_images_over_threads(rng, monkeypatch, threads):
    from onnxplug_numba.ops import op_integer_matmul, op_qattention

    monkeypatch.setattr(op_qattention, "THREADED_MIN_MACS", 0)
    monkeypatch.setattr(op_integer_matmul, "THREADED_MIN_MACS", 0)
    _assert_close(*_model(rng, batch=5, seq=6), threads=threads)


def test_past_is_left_to_numpy(rng):
    model, feeds = _model(rng, past=True)
    _, session = run_numba(model, feeds, fallback=True)
    assert [a.provider for a in session.get_node_assignments()] != ["numba"]
