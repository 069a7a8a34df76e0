"""Steps computed from the feeds' shapes alone run once per shape (onnxplug.shape_memo): results
match onnxruntime as shapes change, data-dependent shapes and random ops are never reused, and a
returned memo value is the caller's own copy."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onnxplug as ort
from onnxplug.shape_memo import memo_steps

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()


def _const(name: str, values) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(values, np.int64), name)


def _reshape_by_shape_model() -> bytes:
    """y = Reshape(x, [batch * seq, -1]) + Range(0, seq) as float, the sizes read through Shape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Gather", ["s", "one"], ["t"], axis=0),
             helper.make_node("Mul", ["b", "t"], ["bt"]),
             helper.make_node("Unsqueeze", ["bt", "axes"], ["bt1"]),
             helper.make_node("Concat", ["bt1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Range", ["zero", "t", "one"], ["pos"]),
             helper.make_node("Cast", ["pos"], ["posf"], to=F),
             helper.make_node("Tile", ["posf", "b1"], ["post"]),
             helper.make_node("Unsqueeze", ["post", "last"], ["col"]),
             helper.make_node("Add", ["r", "col"], ["y"])]
    inits = [_const("zero", 0), _const("one", 1), _const("axes", [0]), _const("minus1", [-1]),
             _const("last", [1])]
    nodes.insert(9, helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]))
    return _model(nodes, [helper.make_tensor_value_info("x", F, ["batch", "seq", 4])],
                  [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("shape", I64, None)],
                  inits)


def _count_calls(session: ort.InferenceSession, op_type: str) -> list[int]:
    """Wrap the kernels of ``op_type`` steps (before the plan is compiled) to count their calls."""
    calls = [0]
    for step in session.engine.plan.steps:
        node = getattr(step.kernel, "node", None)
        if node is not None and node.op_type == op_type:
            compute = step.kernel.compute

            def counted(*args, _compute=compute, **kwargs):
                calls[0] += 1
                return _compute(*args, **kwargs)

            step.kernel.compute = counted
    return calls


@pytest.mark.parametrize("provider", ["numpy", "numba"])
def test_shape_steps_run_once_per_shape_and_match_onnxruntime(provider):
    if provider not in ort.get_available_providers():
        pytest.skip(f"provider {provider!r} is not available here")
    model = _reshape_by_shape_model()
    sess = ort.InferenceSession(model, providers=[provider])
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    indices, exported = memo_steps(sess.engine.plan)
    memo_ops = sorted(sess.engine.plan.steps[i].op_type for i in indices)
    assert "Shape" in memo_ops and "Range" in memo_ops and "Reshape" not in memo_ops
    shapes = sess.engine.plan.steps
    calls = _count_calls(sess, "Shape")
    rng = np.random.default_rng(0)
    runs = [(2, 3), (2, 3), (5, 1), (2, 3), (5, 1), (1, 7)]
    for batch, seq in runs:
        x = rng.standard_normal((batch, seq, 4)).astype(np.float32)
        got = sess.run(None, {"x": x})
        expected = oracle.run(None, {"x": x})
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6)
    assert calls[0] == 3, calls  # one per distinct shape
    assert shapes is sess.engine.plan.steps


def test_a_returned_memo_value_is_the_callers_copy():
    sess = ort.InferenceSession(_reshape_by_shape_model(), providers=["numpy"])
    x = np.zeros((2, 3, 4), np.float32)
    first = sess.run(["shape"], {"x": x})[0]
    first[0] = 999  # the caller changes what it got
    again = sess.run(None, {"x": x})
    np.testing.assert_array_equal(again[1], [6, -1])
    np.testing.assert_array_equal(again[0].shape, (6, 4))


def test_shapes_that_depend_on_values_are_recomputed():
    """NonZero's output length depends on x's values: the Shape after it is no memo step."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]), helper.make_node("Shape", ["nz"], ["s"]),
             helper.make_node("Reshape", ["x", "minus1"], ["flat"]),
             helper.make_node("Slice", ["flat", "zero", "s1"], ["y"]),
             helper.make_node("Slice", ["s", "one", "two"], ["s1"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [6])], [helper.make_tensor_value_info("y", F, None)],
                   [_const("minus1", [-1]), _const("zero", [0]), _const("one", [1]), _const("two", [2])])
    sess = ort.InferenceSession(model, providers=["numpy"])
    oracle = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert memo_steps(sess.engine.plan)[0] == set()
    for x in ([0, 1, 0, 2, 3, 0], [1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 4]):
        x = np.asarray(x, np.float32)
        np.testing.assert_array_equal(sess.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0])


def test_random_ops_after_shape_steps_are_not_reused():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["zeros"], value=helper.make_tensor("v", F, [1], [0.0])),
             helper.make_node("RandomUniformLike", ["zeros"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [64])], [helper.make_tensor_value_info("y", F, None)])
    sess = ort.InferenceSession(model, providers=["numpy"])
    indices, _ = memo_steps(sess.engine.plan)
    assert all(sess.engine.plan.steps[i].op_type != "RandomUniformLike" for i in indices)
    x = np.zeros(64, np.float32)
    a, b = sess.run(None, {"x": x})[0], sess.run(None, {"x": x})[0]
    assert not np.array_equal(a, b)


def test_profiled_runs_report_every_step(tmp_path):
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "memo")
    sess = ort.InferenceSession(_reshape_by_shape_model(), options, providers=["numpy"])
    x = np.zeros((2, 3, 4), np.float32)
    for _ in range(3):
        sess.run(None, {"x": x})
    import json

    with open(sess.end_profiling()) as f:
        events = json.load(f)
    shapes = [e for e in events if e.get("cat") == "Node" and e.get("args", {}).get("op_name") == "Shape"
              and e["name"].endswith("_kernel_time")]
    assert len(shapes) == 3


def test_large_memo_values_are_not_kept_but_stay_correct(monkeypatch):
    from onnxplug import shape_memo

    monkeypatch.setattr(shape_memo, "MAX_KEPT_BYTES", 8)
    sess = ort.InferenceSession(_reshape_by_shape_model(), providers=["numpy"])
    oracle = onnxruntime.InferenceSession(_reshape_by_shape_model(), providers=["CPUExecutionProvider"])
    calls = _count_calls(sess, "Shape")
    x = np.ones((3, 5, 4), np.float32)
    for _ in range(3):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], oracle.run(None, {"x": x})[0])
    assert calls[0] == 3  # nothing kept: computed every run
