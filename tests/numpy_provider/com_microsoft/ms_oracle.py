"""One com.microsoft node run by onnxruntime (the oracle) and by the numpy provider, compared output
by output (dtype, shape, values). Optional inputs are skipped with ``None`` in the feeds."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper

import onnxplug
from onnxplug.ir import elem_type_of
from onnxplug.providers.numpy.registry import REGISTRY
from tests.numpy_provider.single_node_oracle import assert_same, kernels_only

MS = "com.microsoft"


def ms_model(op_type: str, feeds: Mapping[str, Any], n_outputs: int = 1, domain: str = MS,
             outputs: list[str] | None = None, default_opset: int = 17, constants: tuple[str, ...] = (),
             **attrs: Any) -> onnx.ModelProto:
    """One node over ``feeds`` in order; a ``None`` feed is an absent optional input, an output
    name '' in ``outputs`` an absent optional output, a feed named in ``constants`` an initializer."""
    names = [name if value is not None else "" for name, value in feeds.items()]
    while names and not names[-1]:
        names.pop()
    inputs = [helper.make_tensor_value_info(n, elem_type_of(np.asarray(v).dtype), np.shape(v))
              for n, v in feeds.items() if v is not None and n not in constants]
    out_names = outputs if outputs is not None else [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, out_names, domain=domain, **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_empty_tensor_value_info(n) for n in out_names if n],
                              [numpy_helper.from_array(np.asarray(feeds[n]), n) for n in constants if feeds[n] is not None])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", default_opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 9
    return model


def ort_run(model: onnx.ModelProto, feeds: Mapping[str, Any], threads: int = 0) -> list[np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, _fed(model, feeds))


def _fed(model: onnx.ModelProto, feeds: Mapping[str, Any]) -> dict[str, Any]:
    names = {vi.name for vi in model.graph.input}
    return {k: v for k, v in feeds.items() if k in names}


def ours_run(model: onnx.ModelProto, feeds: Mapping[str, Any], like: list[np.ndarray]) -> list[np.ndarray]:
    """The numpy provider's outputs; the graph outputs get the oracle's types (the loader wants them)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for out, value in zip(model.graph.output, like):
        out.type.CopyFrom(helper.make_tensor_type_proto(elem_type_of(value.dtype), [None] * value.ndim))
    for node in model.graph.node:
        opset = {o.domain: o.version for o in model.opset_import}[node.domain]
        assert REGISTRY.resolve(node.domain, node.op_type, opset) is not None, f"no numpy kernel for {node.op_type}"
    session = onnxplug.InferenceSession(model.SerializeToString(), kernels_only(), providers=["numpy"])
    return session.run(None, _fed(model, feeds))


def assert_ms_matches(op_type: str, feeds: Mapping[str, Any], n_outputs: int = 1, rtol: float = 1e-4,
                      atol: float = 1e-5, domain: str = MS, outputs: list[str] | None = None,
                      default_opset: int = 17, constants: tuple[str, ...] = (), ort_threads: int = 0,
                      **attrs: Any) -> list[np.ndarray]:
    """Run the node both ways and assert every output matches; return ours. ``ort_threads`` sets
    onnxruntime's intra-op threads (0: its default) for ops whose results depend on them."""
    model = ms_model(op_type, feeds, n_outputs, domain, outputs, default_opset, constants, **attrs)
    expected = ort_run(model, feeds, ort_threads)
    ours = ours_run(model, feeds, expected)
    assert len(ours) == len(expected)
    for i, (a, e) in enumerate(zip(ours, expected)):
        assert_same(a, e, rtol, atol, f"{op_type} output {i}")
    return ours
