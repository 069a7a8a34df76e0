"""Run one ONNX node with the numpy provider and with an oracle (onnxruntime, else onnx.reference).

Used by the elementwise and shape-op kernel tests: the expected values never come from onnxplug.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
import onnxruntime
from onnx import helper, shape_inference
from onnx.reference import ReferenceEvaluator

import onnxplug
from onnxplug.ir import elem_type_of
from onnxplug.providers.numpy.registry import REGISTRY

_OrtNotImplemented = onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented
_OrtInvalidGraph = onnxruntime.capi.onnxruntime_pybind11_state.InvalidGraph
_OrtFail = onnxruntime.capi.onnxruntime_pybind11_state.Fail

_NARROW = {"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
           "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2", "uint2"}


def node_model(op_type: str, feeds: Mapping[str, Any], n_outputs: int = 1, opset: int = 21,
               input_names: Sequence[str] | None = None, **attrs: Any) -> onnx.ModelProto:
    """A one-node model over ``feeds`` (arrays, or lists for sequences); '' in input_names skips an input."""
    names = list(input_names) if input_names is not None else list(feeds)
    inputs = [helper.make_value_info(n, _type_of(v)) for n, v in feeds.items()]
    outputs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(n_outputs)]
    node = helper.make_node(op_type, names, [o.name for o in outputs], **attrs)
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset < 23 else 11
    return shape_inference.infer_shapes(model, strict_mode=True)


def _type_of(value: Any, symbolic: bool = False) -> onnx.TypeProto:
    if isinstance(value, list):
        return helper.make_sequence_type_proto(_type_of(value[0], symbolic))
    value = np.asarray(value)
    shape = [f"d{i}" for i in range(value.ndim)] if symbolic else value.shape
    return helper.make_tensor_type_proto(elem_type_of(value.dtype), shape)


def with_output_types(model: onnx.ModelProto, values: Sequence[Any]) -> onnx.ModelProto:
    """A copy of ``model`` whose outputs lacking a shape get the type and rank of ``values``."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for out, value in zip(model.graph.output, values):
        tensor = out.type.tensor_type
        if value is not None and not (out.type.HasField("tensor_type") and tensor.HasField("shape")):
            if not out.type.HasField("sequence_type"):
                out.type.CopyFrom(_type_of(value, symbolic=True))
    return model


def kernels_only() -> onnxplug.SessionOptions:
    """Session options without graph optimizations, so every node runs its kernel (no constant folding)."""
    options = onnxplug.SessionOptions()
    options.graph_optimization_level = onnxplug.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def run_ours(model: onnx.ModelProto, feeds: Mapping[str, Any], like: Sequence[Any] | None = None,
             provider_options: Mapping[str, Any] | None = None) -> list[Any]:
    """The outputs of onnxplug's numpy provider (with ``provider_options``); fails if the op has no
    numpy-provider kernel.

    ``like`` (e.g. the oracle's outputs) declares output ranks that shape inference could not find
    (the onnx checker, which the loader runs, wants a shape on every graph output).
    """
    model = with_output_types(model, like) if like is not None else model
    opset = {o.domain: o.version for o in model.opset_import}[""]
    for node in model.graph.node:
        assert REGISTRY.resolve("", node.op_type, opset) is not None, f"no numpy kernel for {node.op_type}"
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(),
                                        providers=[("numpy", dict(provider_options or {}))])
    return session.run(None, dict(feeds))


def run_oracle(model: onnx.ModelProto, feeds: Mapping[str, Any], oracle: str = "ort") -> list[Any]:
    """Outputs from onnxruntime (``oracle='ort'``) or onnx.reference (``'ref'``).

    onnxruntime lacks some type/opset combinations (e.g. float64 Acos, opset 28); then onnx.reference
    is the oracle.
    """
    if oracle == "ort":
        try:
            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except (_OrtNotImplemented, _OrtInvalidGraph, _OrtFail):
            pass
        else:
            return session.run(None, dict(feeds))
    with np.errstate(all="ignore"):  # the reference's own overflow warnings are not ours
        return list(ReferenceEvaluator(model).run(None, dict(feeds)))


def assert_matches_oracle(op_type: str, feeds: Mapping[str, Any], oracle: str = "ort", n_outputs: int = 1,
          rtol: float = 1e-5, atol: float = 1e-6, provider_options: Mapping[str, Any] | None = None,
          **kwargs: Any) -> list[Any]:
    """Build the node, run it both ways (ours with the numpy ``provider_options``), assert the same
    dtypes, shapes and values; return ours."""
    model = node_model(op_type, feeds, n_outputs, **kwargs)
    expected = run_oracle(model, feeds, oracle)
    ours = run_ours(model, feeds, like=expected, provider_options=provider_options)
    assert len(ours) == len(expected)
    for i, (a, e) in enumerate(zip(ours, expected)):
        assert_same(a, e, rtol, atol, f"{op_type} output {i}")
    return ours


def assert_same(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-6, where: str = "") -> None:
    """Exact dtype and shape; strings equal; numbers within tolerance, NaN matching NaN."""
    if expected is None or isinstance(expected, list):
        assert type(actual) is type(expected), where
        for a, e in zip(actual or [], expected or []):
            assert_same(a, e, rtol, atol, where)
        return
    assert isinstance(actual, np.ndarray), f"{where}: {type(actual).__name__} is not an ndarray"
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "OUS":
        assert actual.dtype == object, f"{where}: strings must be object arrays, got {actual.dtype}"
        assert actual.tolist() == expected.astype(object).tolist(), where
        return
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.name in _NARROW:
        actual, expected = actual.astype(np.float32), expected.astype(np.float32)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
