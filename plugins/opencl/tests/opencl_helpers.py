"""Small-model helpers: build a one- or few-node ONNX model, run it on opencl and on onnxruntime."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort


def make_model(nodes: Sequence[onnx.NodeProto], inputs: dict[str, np.ndarray], outputs: Sequence[str],
               initializers: dict[str, np.ndarray] | None = None, opset: int = 17) -> bytes:
    """A model whose graph inputs have the given arrays' types and fixed shapes; outputs untyped shapes."""
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
                    for n, a in inputs.items()]
    inits = [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()]
    outs = [onnx.ValueInfoProto(name=o) for o in outputs]
    graph = helper.make_graph(list(nodes), "test", graph_inputs, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model)
    for out in inferred.graph.output:  # give outputs their inferred types (the core checker wants them)
        found = [v for v in inferred.graph.value_info if v.name == out.name]
        if found:
            out.CopyFrom(found[0])
    return inferred.SerializeToString()


def run_both(model: bytes, feeds: dict[str, np.ndarray], *, only_opencl: bool = True,
             options: dict[str, Any] | None = None) -> tuple[list[Any], list[Any], ort.InferenceSession]:
    """Outputs of onnxplug with providers=['opencl'] and of onnxruntime's CPU provider."""
    so = ort.SessionOptions()
    if only_opencl:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    session = ort.InferenceSession(model, so, providers=[("opencl", options or {})])
    got = session.run(None, feeds)
    want = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    return got, want, session


def assert_close(got: Sequence[Any], want: Sequence[Any], rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Same dtypes, shapes and values (NaN equal to NaN)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)


__all__ = ["TensorProto", "assert_close", "helper", "make_model", "run_both"]
