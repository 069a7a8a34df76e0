"""A Loop the numba provider compiles whole still has one Node event per body node per iteration in
a profile: a profiled run runs the body step by step, with the compiled loop's results."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import numpy as np
import onnxplug as ort
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.test_profile_format import NODE_ARGS, TRACE_SCHEMA

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
TRIPS = 3


def _model() -> bytes:
    """``Loop(3)`` over x [3, 4]: t = x @ w scanned, y = Tanh(t) carried (no two elementwise nodes
    in a row, which numba would fuse into one step)."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_in", "w"], ["t"], name="body_matmul"),
         helper.make_node("Tanh", ["t"], ["y"], name="body_tanh"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond")],
        "body", [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("cond_in", B, []),
                 helper.make_tensor_value_info("x_in", F, [3, 4])],
        [helper.make_tensor_value_info("cond_out", B, []), helper.make_tensor_value_info("y", F, [3, 4]),
         helper.make_tensor_value_info("t", F, [3, 4])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "x"], ["final", "ys"], body=body, name="the_loop")],
        "g", [helper.make_tensor_value_info("x", F, [3, 4])],
        [helper.make_tensor_value_info("final", F, [3, 4]), helper.make_tensor_value_info("ys", F, [TRIPS, 3, 4])],
        [numpy_helper.from_array(np.array(TRIPS, np.int64), "n"), numpy_helper.from_array(np.array(True), "c"),
         numpy_helper.from_array(np.linspace(-0.5, 0.5, 16, dtype=np.float32).reshape(4, 4), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


@pytest.fixture
def generic_calls(monkeypatch):
    """How many Loop calls ran the body step by step instead of compiled."""
    if "numba" not in ort.get_available_providers():
        pytest.skip("the numba provider is not installed or not available here")
    from onnxplug_numba.ops import op_loop

    calls = []
    original = op_loop.Loop.run_generic

    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(op_loop.Loop, "run_generic", spy)
    return calls


def _session(profile_prefix: str | None = None) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the body's nodes as written
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(_model(), so, providers=["numba"])


def test_a_profiled_compiled_loop_has_each_body_node_per_iteration(tmp_path, generic_calls):
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    expected = onnxruntime.InferenceSession(_model(), providers=["CPUExecutionProvider"]).run(None, {"x": x})

    plain = _session()
    assert [a.provider for a in plain.get_node_assignments() if a.op_type == "Loop"] == ["numba"]
    unprofiled = plain.run(None, {"x": x})
    assert generic_calls == []  # without profiling the loop runs compiled

    sess = _session(str(tmp_path / "prof"))
    profiled = sess.run(None, {"x": x})
    assert generic_calls == [1]
    for got, same, want in zip(profiled, unprofiled, expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, same, rtol=1e-6, atol=1e-6)

    with open(sess.end_profiling()) as f:
        events = json.load(f)
    jsonschema.validate(events, TRACE_SCHEMA)
    nodes = [e for e in events if e["cat"] == "Node"]
    assert Counter(e["name"] for e in nodes) == {"the_loop_kernel_time": 1, "body_matmul_kernel_time": TRIPS,
                                                 "body_tanh_kernel_time": TRIPS, "body_cond_kernel_time": TRIPS}
    loop = next(e for e in nodes if e["name"] == "the_loop_kernel_time")
    assert loop["args"]["provider"] == "numba" and loop["args"]["op_name"] == "Loop"
    body = sorted((e for e in nodes if e is not loop), key=lambda e: e["ts"])
    for e in body:
        assert NODE_ARGS <= set(e["args"])
        assert e["args"]["parent"] == "the_loop" and e["tid"] == loop["tid"]
        assert loop["ts"] <= e["ts"] and e["ts"] + e["dur"] <= loop["ts"] + loop["dur"] + 1e-3
    # iteration by iteration, in the body's order
    assert [e["args"]["op_name"] for e in body] == ["MatMul", "Tanh", "Identity"] * TRIPS
    tanh = next(e for e in body if e["args"]["op_name"] == "Tanh")
    assert tanh["args"]["input_type_shape"] == [{"float": [3, 4]}]
    assert tanh["args"]["output_type_shape"] == [{"float": [3, 4]}]
