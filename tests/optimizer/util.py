"""Helpers of the optimizer tests: tiny models, running chosen passes, checking equivalence."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.ir import Model, load_model
from onnxplug.optimizer import GraphPass, PassManager
from onnxplug.optimizer.functions import attach_functions
from onnxplug.optimizer.manager import PassReport
from onnxplug.options import SessionOptions
from onnxplug.provider import ExecutionProvider
from onnxplug.provider_specs import create_providers

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[tuple], outputs: Sequence[tuple],
          initializers: Mapping[str, np.ndarray] | None = None, opset: int = 17) -> onnx.ModelProto:
    """A model from nodes, (name, elem_type, shape) inputs/outputs and named numpy initializers."""
    graph = helper.make_graph(
        list(nodes), "test",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> onnx.NodeProto:
    """A NodeProto named after its first output."""
    return helper.make_node(op_type, list(inputs), list(outputs), name=f"{op_type}_{outputs[0]}", **attrs)


def const(name: str, value: Any, dtype: Any = np.float32) -> onnx.NodeProto:
    """A Constant node."""
    return helper.make_node("Constant", [], [name], name=f"Constant_{name}",
                            value=numpy_helper.from_array(np.asarray(value, dtype=dtype)))


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    """float32 normal values."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def numpy_providers() -> list[ExecutionProvider]:
    """The default session providers (numpy only)."""
    return create_providers(None, None, SessionOptions())


def run_passes(proto: onnx.ModelProto, *passes: type[GraphPass],
               providers: Sequence[ExecutionProvider] | None = None) -> tuple[Model, dict[str, PassReport]]:
    """Load ``proto`` and run only ``passes`` (to a fixed point); returns the model and reports."""
    m = load_model(proto)
    reports = PassManager([p() for p in passes]).run(m, providers if providers is not None else numpy_providers())
    attach_functions(m)
    return m, {r.name: r for r in reports}


def op_types(m: Model) -> Counter:
    """op types of the main graph, prefixed with their domain when not ai.onnx."""
    return Counter(f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in m.graph.nodes)


def ort_run(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    """onnxruntime's outputs with its own optimizations disabled (the oracle)."""
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 2
    return onnxruntime.InferenceSession(proto.SerializeToString(), so,
                                        providers=["CPUExecutionProvider"]).run(None, dict(feeds))


def ours_unoptimized(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
                     numpy_options: Mapping[str, str] | None = None) -> list[Any]:
    """onnxplug's outputs with the optimizer off (so an optimized proto runs as it is); with
    ``numpy_options``, on the numpy provider given them."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    providers = None if numpy_options is None else [("numpy", dict(numpy_options))]
    return ort.InferenceSession(proto, so, providers=providers).run(None, dict(feeds))


def assert_close(actual: Iterable[Any], expected: Iterable[Any], rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Same dtypes and shapes; values within tolerances scaled by each output's magnitude."""
    actual, expected = list(actual), list(expected)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape, f"output {i}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
        scale = max(float(np.max(np.abs(e))), 1.0) if e.size and e.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol * scale, err_msg=f"output {i}")


def assert_equivalent(original: onnx.ModelProto, optimized: Model, feeds: Mapping[str, np.ndarray],
                      numpy_options: Mapping[str, str] | None = None) -> None:
    """The optimized model gives onnxruntime's outputs of the original, run by onnxplug (with
    ``numpy_options``, see ``ours_unoptimized``) and, from its saved form (fused ops with function
    bodies), by onnxruntime."""
    expected = ort_run(original, feeds)
    saved = optimized.to_proto()
    onnx.checker.check_model(saved)
    assert_close(ours_unoptimized(saved, feeds, numpy_options), expected)
    assert_close(ort_run(saved, feeds), expected)
