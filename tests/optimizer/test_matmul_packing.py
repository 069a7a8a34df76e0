"""MatMulPacking: MatMuls of one input with constant weights become one MatMul (+ Add) and a Split."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

import onnxplug
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.passes.matmul_packing import MatMulPacking
from onnxplug.testing.model_suite import build, sample_inputs
from tests.optimizer.util import F, assert_close, assert_equivalent, model, node, op_types, ort_run, rand, run_passes


def _projections(biases: tuple[bool, ...], x_shape: list, opset: int = 17, widths: tuple[int, ...] = (8, 8, 6)):
    nodes, outputs, inits = [], [], {}
    for i, (with_bias, width) in enumerate(zip(biases, widths)):
        inits[f"w{i}"] = rand(x_shape[-1], width, seed=i)
        nodes.append(node("MatMul", ["x", f"w{i}"], [f"m{i}"]))
        out = f"m{i}"
        if with_bias:
            inits[f"b{i}"] = rand(width, seed=10 + i)
            nodes.append(node("Add", [f"m{i}", f"b{i}"] if i % 2 else [f"b{i}", f"m{i}"], [f"y{i}"]))
            out = f"y{i}"
        nodes.append(node("Relu", [out], [f"r{i}"]))
        outputs.append((f"r{i}", F, [*x_shape[:-1], width]))
    return model(nodes, [("x", F, x_shape)], outputs, inits, opset=opset)


@pytest.mark.parametrize("x_shape", [[2, 5, 4], ["batch", 7, 4], [5, 4]])
def test_three_projections_with_biases_become_one_matmul_add_and_split(x_shape):
    proto = _projections((True, True, True), x_shape)
    m, reports = run_passes(proto, MatMulPacking, DeadNodeElimination)
    assert reports["MatMulPacking"].counts == {"packed": 1, "matmuls": 3}
    assert op_types(m) == {"MatMul": 1, "Add": 1, "Split": 1, "Relu": 3}
    assert_equivalent(proto, m, {"x": rand(*[3 if d == "batch" else d for d in x_shape], seed=5)})


def test_a_projection_without_bias_keeps_the_adds_after_the_split():
    proto = _projections((True, False, True), [2, 5, 4])
    m, _ = run_passes(proto, MatMulPacking, DeadNodeElimination)
    assert op_types(m) == {"MatMul": 1, "Split": 1, "Add": 2, "Relu": 3}
    assert_equivalent(proto, m, {"x": rand(2, 5, 4, seed=6)})


def test_before_opset_13_the_split_sizes_are_an_attribute():
    proto = _projections((True, True), [3, 4], opset=11)
    m, _ = run_passes(proto, MatMulPacking, DeadNodeElimination)
    split = next(n for n in m.graph.nodes if n.op_type == "Split")
    assert list(split.attr("split")) == [8, 8] and len(split.inputs) == 1
    assert_equivalent(proto, m, {"x": rand(3, 4, seed=7)})


def test_projection_outputs_that_are_graph_outputs_keep_their_names():
    proto = _projections((True, True), [2, 4])
    proto.graph.output.append(proto.graph.output[0])
    proto.graph.output[-1].name = "y1"
    m, _ = run_passes(proto, MatMulPacking, DeadNodeElimination)
    assert op_types(m)["Split"] == 1
    assert_equivalent(proto, m, {"x": rand(2, 4, seed=8)})


def test_lone_matmul_variable_weight_or_overridable_weight_is_not_packed():
    lone = _projections((True,), [2, 4])
    m, reports = run_passes(lone, MatMulPacking)
    assert "Split" not in op_types(m) and not reports["MatMulPacking"].counts
    variable = model([node("MatMul", ["x", "w0"], ["m0"]), node("MatMul", ["x", "w1"], ["m1"])],
                     [("x", F, [2, 4]), ("w1", F, [4, 3])], [("m0", F, [2, 3]), ("m1", F, [2, 3])],
                     {"w0": rand(4, 3)})
    m, _ = run_passes(variable, MatMulPacking)
    assert op_types(m) == {"MatMul": 2}
    overridable = model([node("MatMul", ["x", "w0"], ["m0"]), node("MatMul", ["x", "w1"], ["m1"])],
                        [("x", F, [2, 4]), ("w1", F, [4, 3])], [("m0", F, [2, 3]), ("m1", F, [2, 3])],
                        {"w0": rand(4, 3), "w1": rand(4, 3, seed=1)})  # w1 is a graph input with a default
    m, _ = run_passes(overridable, MatMulPacking)
    assert op_types(m) == {"MatMul": 2}


def test_a_bias_that_is_not_a_vector_keeps_its_add():
    proto = _projections((True, True), [2, 3, 4])
    for init in proto.graph.initializer:
        if init.name == "b1":  # [1, 8] broadcasts like a vector but is no [N] bias
            init.dims[:] = [1, 8]
    m, _ = run_passes(proto, MatMulPacking, DeadNodeElimination)
    assert op_types(m) == {"MatMul": 1, "Split": 1, "Add": 2, "Relu": 2}
    assert_equivalent(proto, m, {"x": rand(2, 3, 4, seed=9)})


@pytest.mark.parametrize("batch", [1, 3])
def test_transformer_encoder_keeps_its_attention_fusions_and_onnxruntime_outputs(batch, tmp_path):
    proto = build("transformer_encoder")
    options = onnxplug.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = onnxplug.InferenceSession(proto.SerializeToString(), options, providers=["numpy"])
    kinds = Counter(n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node)
    assert kinds["Split"] == 4 and kinds["MultiHeadAttention"] == 4 and kinds["MatMul"] == 16
    feeds = sample_inputs("transformer_encoder", batch=batch)
    assert_close(session.run(None, feeds), ort_run(proto, feeds), rtol=1e-4, atol=2e-5)
