"""Shared helpers of the cupy provider's tests (imported by the test modules; fixtures live in conftest.py).

Three kinds of test live here, and they are never confused:
* device-free tests (registration, options, availability, claims, code generation): always run;
* host-emulation tests (``host_emulation.py``: numpy + the generated CUDA C compiled by g++):
  check the provider's logic without a GPU; they are NOT GPU tests;
* GPU tests (marker ``gpu``): run on a real CUDA device through CuPy, skipped with CuPy's own
  reason when there is none.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))

import onnxplug as ort  # noqa: E402

from host_emulation import EmulatedCupyProvider  # noqa: E402
from onnxplug_cupy.provider import CupyProvider  # noqa: E402

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8,
        np.dtype(np.uint32): TensorProto.UINT32, np.dtype(np.uint64): TensorProto.UINT64}

EMULATED = EmulatedCupyProvider.name


def gpu_reason() -> str:
    """Why GPU tests skip here: CuPy's own reason, or '' when a device is available."""
    availability = CupyProvider.availability()
    return "" if availability else f"no usable CUDA device: {availability.reason}"


requires_gpu = pytest.mark.skipif(bool(gpu_reason()), reason=gpu_reason() or "a CUDA device is available")


def node_model(op: str, inputs: dict[str, np.ndarray], n_outputs: int = 1, *,
               initializers: dict[str, np.ndarray] | None = None, opset: int = 17, domain: str = "",
               input_names: Sequence[str] | None = None, **attrs: Any) -> onnx.ModelProto:
    """A model of one node reading ``inputs`` (graph inputs) and ``initializers`` (constants),
    with types inferred by onnx. ``input_names`` orders (or skips, with '') the node's inputs."""
    initializers = initializers or {}
    names = list(input_names) if input_names is not None else list(inputs) + list(initializers)
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outs, domain=domain or None, **attrs)
    # onnx cannot infer custom-domain ops: their outputs get the first input's element type
    out_type = ELEM[next(iter(inputs.values())).dtype] if domain else TensorProto.UNDEFINED
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, out_type, None) for o in outs],
        [onnx.numpy_helper.from_array(v, k) for k, v in initializers.items()])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports, ir_version=8)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True) if not domain else model


def session(model: onnx.ModelProto, provider: str, *, fallback: bool = False,
            level: int = 0, **options: Any) -> ort.InferenceSession:
    """A session on ``provider`` alone (unless ``fallback``), graph optimizations at ``level``."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel(level)
    if not fallback:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ort.InferenceSession(model.SerializeToString(), so, providers=[(provider, options)])


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The oracle: onnxruntime's CPU provider, graph optimizations off; onnx's reference
    evaluator for the (op, dtype) pairs onnxruntime does not implement (e.g. float64 Tan)."""
    import onnxruntime

    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 2
    try:
        sess = onnxruntime.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception as e:
        if "NOT_IMPLEMENTED" not in str(e):
            raise
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(model).run(None, feeds))
    return sess.run(None, feeds)


def assert_close(actual: Sequence[Any], expected: Sequence[Any], rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Same count, dtypes, shapes and values (atol scaled by each output's magnitude)."""
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype, f"output {i}: dtype {a.dtype}, expected {e.dtype}"
        assert a.shape == e.shape, f"output {i}: shape {a.shape}, expected {e.shape}"
        finite = e[np.isfinite(e)] if e.dtype.kind == "f" else e
        scale = max(1.0, float(np.max(np.abs(finite)))) if finite.size and e.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol * scale, err_msg=f"output {i}")


def check_emulated(model: onnx.ModelProto, feeds: dict[str, np.ndarray], provider: str, *,
                   reference: bool = False, **tol: float) -> None:
    """The provider alone (no fallback) matches onnxruntime (or onnx's reference evaluator)."""
    sess = session(model, provider)
    assert all(a.provider == provider for a in sess.get_node_assignments())
    if reference:
        from onnx.reference import ReferenceEvaluator

        expected = list(ReferenceEvaluator(model).run(None, feeds))
    else:
        expected = onnxruntime_outputs(model, feeds)
    assert_close(sess.run(None, feeds), expected, **tol)
