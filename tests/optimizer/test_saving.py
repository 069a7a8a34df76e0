"""Saving optimized models: valid ONNX that onnxruntime runs, with fused ops as function calls that
onnxplug keeps as nodes when it loads the file again."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper

import onnxplug as ort
from onnxplug.engine import default_provider_computes
from onnxplug.ir import load_model
from tests.optimizer.util import F, assert_close, model, node, ort_run, rand


def _mlp() -> onnx.ModelProto:
    inits = {"w1": rand(8, 16), "b1": rand(16, seed=1), "w2": rand(16, 8, seed=2), "b2": rand(8, seed=3),
             "sqrt2": np.array(math.sqrt(2), np.float32), "one": np.array(1.0, np.float32),
             "half": np.array(0.5, np.float32), "gamma": rand(8, seed=4), "beta": rand(8, seed=5)}
    return model([node("MatMul", ["x", "w1"], ["h"]), node("Add", ["h", "b1"], ["hb"]),
                  node("Div", ["hb", "sqrt2"], ["d"]), node("Erf", ["d"], ["e"]), node("Add", ["e", "one"], ["a"]),
                  node("Mul", ["hb", "a"], ["m"]), node("Mul", ["m", "half"], ["g"]),
                  node("MatMul", ["g", "w2"], ["o"]), node("Add", ["o", "b2"], ["ob"]),
                  node("Add", ["x", "ob"], ["s"]), node("LayerNormalization", ["s", "gamma", "beta"], ["y"])],
                 [("x", F, ["b", 4, 8])], [("y", F, ["b", 4, 8])], inits)


def test_saved_model_is_valid_onnx_that_onnxruntime_runs(tmp_path):
    path = tmp_path / "opt.onnx"
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(path)
    proto, feeds = _mlp(), {"x": rand(2, 4, 8, seed=7)}
    sess = ort.InferenceSession(proto, so)
    saved = onnx.load(str(path))
    onnx.checker.check_model(saved, full_check=True)
    ops = {(n.domain, n.op_type) for n in saved.graph.node}
    assert ("com.onnxplug", "BiasGelu") in ops and ("com.onnxplug", "SkipLayerNormalization") in ops
    assert {f.name for f in saved.functions} == {"BiasGelu", "SkipLayerNormalization"}
    assert all(f.overload and all(n.domain == "" for n in f.node) for f in saved.functions)
    assert saved.ir_version >= 10
    expected = ort_run(proto, feeds)
    assert_close(sess.run(None, feeds), expected)
    assert_close(ort_run(saved, feeds), expected)


def test_reloaded_model_keeps_fused_nodes_and_saves_them_again(tmp_path):
    first, second = tmp_path / "first.onnx", tmp_path / "second.onnx"
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(first)
    proto, feeds = _mlp(), {"x": rand(3, 4, 8, seed=8)}
    ort.InferenceSession(proto, so)
    reloaded = load_model(str(first), computes=default_provider_computes)
    assert any(n.domain == "com.onnxplug" for n in reloaded.graph.nodes)
    assert {f.name for f in reloaded.functions} == {"BiasGelu", "SkipLayerNormalization"}
    so2 = ort.SessionOptions()
    so2.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so2.optimized_model_filepath = str(second)
    sess = ort.InferenceSession(str(first), so2)
    expected = ort_run(proto, feeds)
    assert_close(sess.run(None, feeds), expected)
    assert_close(ort_run(onnx.load(str(second)), feeds), expected)


def _with_function(domain: str, name: str) -> onnx.ModelProto:
    fn = helper.make_function(domain, name, ["X"], ["Y"], [helper.make_node("Neg", ["X"], ["Y"])],
                              [helper.make_opsetid("", 17)])
    graph = helper.make_graph([helper.make_node(name, ["x"], ["y"], domain=domain)], "g",
                              [helper.make_tensor_value_info("x", F, [3])], [helper.make_tensor_value_info("y", F, [3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)],
                          functions=[fn])
    m.ir_version = 8
    return m


def test_functions_without_a_kernel_are_inlined():
    for domain, name in (("custom.domain", "Negate"), ("com.onnxplug", "NoSuchFusedOp")):
        m = load_model(_with_function(domain, name), computes=default_provider_computes)
        assert [n.op_type for n in m.graph.nodes] == ["Neg"] and m.functions == []
        y = ort.InferenceSession(_with_function(domain, name)).run(None, {"x": np.array([1, -2, 3], np.float32)})
        np.testing.assert_array_equal(y[0], [-1, 2, -3])
