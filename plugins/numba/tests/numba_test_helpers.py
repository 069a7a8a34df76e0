"""Helpers of the numba provider tests: one-node models, runs on the numba provider and on onnxruntime."""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper

# Generated kernels of the tests go to a private folder, so tests never touch the user's cache.
os.environ.setdefault("ONNXPLUG_NUMBA_CACHE_DIR", os.path.join(tempfile.gettempdir(), "onnxplug-numba-tests"))

import onnxplug as ort  # noqa: E402

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.float16): TensorProto.FLOAT16, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
        np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def node_model(op: str, inputs: dict[str, np.ndarray], n_outputs: int = 1, *, initializers: dict | None = None,
               opset: int = 17, domain: str = "", **attrs: Any) -> onnx.ModelProto:
    """A model of one node reading ``inputs`` (graph inputs) and ``initializers`` (constants)."""
    initializers = initializers or {}
    names = list(inputs) + list(initializers)
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, names, outs, domain=domain or None, **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], v.shape) for k, v in inputs.items()],
        # custom-domain ops get no inferred output type: declare the first input's
        [helper.make_tensor_value_info(o, ELEM[next(iter(inputs.values())).dtype] if domain else
                                       TensorProto.UNDEFINED, None) for o in outs],
        [onnx.numpy_helper.from_array(v, k) for k, v in initializers.items()])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=imports, ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def run_numba(model: onnx.ModelProto, feeds: dict[str, np.ndarray], *, fallback: bool = False,
              threads: int = 0, level: int | None = 0) -> tuple[list[np.ndarray], ort.InferenceSession]:
    """Run on the numba provider (only, unless ``fallback``); returns outputs and the session."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    if level is not None:
        options.graph_optimization_level = ort.GraphOptimizationLevel(level)
    if not fallback:
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["numba"])
    return session.run(None, feeds), session


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The oracle's outputs."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"]).run(None, feeds)


def assert_close(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float = 1e-4,
                 atol: float = 1e-5) -> None:
    """Same count, dtypes, shapes and values (tolerances scaled by each output's magnitude)."""
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype, (a.dtype, e.dtype)
        assert a.shape == e.shape, (a.shape, e.shape)
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size and e.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol * scale)


def assert_matches_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], **tol: float) -> None:
    """The numba provider alone (no fallback) matches onnxruntime."""
    got, _ = run_numba(model, feeds)
    assert_close(got, run_onnxruntime(model, feeds), **tol)


def assert_node_on_numba_matches(model: onnx.ModelProto, feeds: dict[str, np.ndarray], op: str, threads: int = 0,
                                 atol: float = 1e-5) -> list:
    """Node ``op`` runs on numba (other nodes may fall back) and the outputs equal onnxruntime's:
    dtypes and shapes, integers and strings exactly, floats to float32 tolerance. Returns ours."""
    ours, session = run_numba(model, feeds, fallback=True, threads=threads)
    placed = {a.op_type: a.provider for a in session.get_node_assignments()}
    assert placed[op] == "numba", session.get_node_assignments()
    expected = run_onnxruntime(model, feeds)
    assert len(ours) == len(expected)
    for a, e in zip(ours, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, e.dtype, a.shape, e.shape)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=atol)
        else:
            np.testing.assert_array_equal(a, e)
    return ours
