"""com.microsoft QEmbedLayerNormalization on the numba provider against onnxruntime: uint8 and
int8 tables, with and without segment embeddings and a mask, tables constant or fed."""

from __future__ import annotations

import numpy as np
import pytest
from numba_test_helpers import run_numba, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

_ELEM = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
         np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


def _model(rng, q_type, segments: bool, mask: bool, constant: bool, batch=3, seq=7, hidden=32, vocab=50):  # type: ignore[no-untyped-def]
    info = np.iinfo(q_type)

    def q(shape):  # type: ignore[no-untyped-def]
        return rng.integers(info.min, info.max + 1, shape).astype(q_type)

    tables = {"word": (vocab, hidden), "position": (16, hidden), "segment": (2, hidden), "gamma": (hidden,),
              "beta": (hidden,)}
    values = {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int32),
              "segment_ids": rng.integers(0, 2, (batch, seq)).astype(np.int32)}
    names = ["input_ids", "segment_ids" if segments else ""]
    names += [f"{t}_q" if segments or t != "segment" else "" for t in tables]
    if mask:
        values["mask"] = (rng.uniform(size=(batch, seq)) < 0.8).astype(np.int32)
    names.append("mask" if mask else "")
    for t, shape in tables.items():
        values[f"{t}_q"] = q(shape)
        values[f"{t}_s"] = np.array(rng.uniform(0.01, 0.05), np.float32)
        values[f"{t}_zp"] = q(())
    names += [f"{t}_s" if segments or t != "segment" else "" for t in tables]
    names += [f"{t}_zp" if segments or t != "segment" else "" for t in tables]
    node = helper.make_node("QEmbedLayerNormalization", names, ["y", "mask_index"], domain="com.microsoft",
                            epsilon=1e-12)
    fed = {"input_ids", "segment_ids", "mask"} if constant else set(values)
    feeds = {k: v for k, v in values.items() if k in fed and k in names}
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, _ELEM[v.dtype], v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("mask_index", TensorProto.INT32, None)],
        [numpy_helper.from_array(v, k) for k, v in values.items() if k not in fed and k in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model, feeds


@pytest.mark.parametrize("q_type", [np.uint8, np.int8])
@pytest.mark.parametrize("segments, mask, constant", [(True, True, True), (False, False, True), (True, False, False)])
def test_qembed_layer_normalization(rng, q_type, segments, mask, constant):
    model, feeds = _model(rng, q_type, segments, mask, constant)
    got, session = run_numba(model, feeds, threads=1)
    assert [(a.op_type, a.provider) for a in session.get_node_assignments()] == [("QEmbedLayerNormalization", "numba")]
    expected = run_onnxruntime(model, feeds)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], expected[1])
