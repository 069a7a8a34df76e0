"""Kernels in If/Loop bodies see the enclosing graph's constant initializers as constants, and an
initializer that is also a graph input (a feed may override it) as a value read on every run."""

from __future__ import annotations

import importlib.util

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxplug as ort
from onnxplug.engine import _outer_constants
from onnxplug.ir import load_model
from tests.oracle import assert_close, ort_outputs

PROVIDERS = ["numpy"] + (["numba"] if importlib.util.find_spec("onnxplug_numba") else [])


def _if_conv_model(overridable: bool) -> onnx.ModelProto:
    """If(cond): then Conv(x, W, B) + Pad (reflect) read from the outer graph; else x * 2."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    pads = np.array([0, 0, 2, 0, 0, 1], np.int64)
    then = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads"], ["xp"], mode="reflect"),
         helper.make_node("Conv", ["xp", "W", "B"], ["y_then"], pads=[1, 1])],
        "then", [], [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, None)])
    other = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y_else"])],
        "else", [], [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, None)])
    inputs = [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "l"])]
    if overridable:
        inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3, 3]))
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)], "g", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"), numpy_helper.from_array(pads, "pads"),
         numpy_helper.from_array(np.array(2, np.float32), "two")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_outer_constants_found_and_overridable_left_out() -> None:
    for overridable, expected in ((False, {"W", "B", "pads"}), (True, {"B", "pads"})):
        graph = load_model(_if_conv_model(overridable).SerializeToString()).graph
        body = next(g for g in graph.nodes[0].subgraphs if g.name == "then")
        found = _outer_constants(body, body.outer_scope_reads())
        assert set(found) == expected
        assert all(found[name] is graph.initializers[name] for name in found)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_body_kernels_with_outer_constants_match_onnxruntime(provider: str) -> None:
    model = _if_conv_model(False)
    session = ort.InferenceSession(model.SerializeToString(), providers=[provider])
    rng = np.random.default_rng(0)
    for length in (7, 12, 7):  # a shape seen before reuses what the kernels kept for it
        for cond in (True, False):
            feeds = {"cond": np.array(cond), "x": rng.standard_normal((2, 3, length)).astype(np.float32)}
            assert_close(session.run(None, feeds), ort_outputs(model, feeds))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_overridable_initializer_fed_to_a_body_is_read_each_run(provider: str) -> None:
    model = _if_conv_model(True)
    session = ort.InferenceSession(model.SerializeToString(), providers=[provider])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 9)).astype(np.float32)
    for _ in range(2):
        w = rng.standard_normal((4, 3, 3)).astype(np.float32)
        feeds = {"cond": np.array(True), "x": x, "W": w}
        got = session.run(None, feeds)
        assert_close(got, ort_outputs(model, feeds))
    default = {"cond": np.array(True), "x": x}
    assert_close(session.run(None, default), ort_outputs(model, default))
