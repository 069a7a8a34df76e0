"""The model suite builds valid, runnable, realistic models (onnxruntime is the oracle)."""

from __future__ import annotations

import collections
import copy
import functools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxplug.testing import model_suite

ort = pytest.importorskip("onnxruntime")

NAMES = model_suite.MODEL_NAMES
CORE_DIR = Path(__file__).resolve().parents[1] / "core"


@functools.cache
def _model(name: str) -> onnx.ModelProto:
    return model_suite.build(name)


@functools.cache
def _session(name: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(
        _model(name).SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _run(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    session = _session(name)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def _histogram(graph: onnx.GraphProto) -> collections.Counter[str]:
    return collections.Counter(node.op_type for node in graph.node)


def _nodes(graph: onnx.GraphProto, op_type: str) -> list[onnx.NodeProto]:
    return [node for node in graph.node if node.op_type == op_type]


def _attr(node: onnx.NodeProto, name: str) -> object:
    return next(helper.get_attribute_value(a) for a in node.attribute if a.name == name)


def _outer_references(graph: onnx.GraphProto) -> set[str]:
    """Names a (sub)graph reads without defining them itself (its implicit inputs)."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {out for node in graph.node for out in node.output}
    used = {name for node in graph.node for name in node.input if name}
    used |= {v.name for v in graph.output}
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                used |= _outer_references(attribute.g)
    return used - defined


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def _batch_axis(value: onnx.ValueInfoProto) -> int:
    return _dims(value).index("batch")


# --- structure ---------------------------------------------------------------------------------


def test_model_names_are_published_in_order() -> None:
    assert NAMES == (
        "resnet18", "mobilenetv2", "transformer_encoder", "bilstm", "gru", "if_model", "loop_model"
    )


@pytest.mark.parametrize("name", NAMES)
def test_checker_full_check_and_header(name: str) -> None:
    model = _model(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    for value in [*model.graph.input, *model.graph.output]:
        assert value.type.tensor_type.elem_type == TensorProto.FLOAT, value.name
        assert "batch" in _dims(value), value.name
    assert {t.data_type for t in model.graph.initializer} == {TensorProto.FLOAT}


@pytest.mark.parametrize("name", NAMES)
def test_build_is_deterministic_per_seed(name: str) -> None:
    again = model_suite.build(name, seed=0).SerializeToString()
    assert again == _model(name).SerializeToString()
    assert model_suite.build(name, seed=1).SerializeToString() != again
    first = model_suite.sample_inputs(name, batch=2, seed=3)
    second = model_suite.sample_inputs(name, batch=2, seed=3)
    assert first.keys() == second.keys()
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])


def test_resnet18_topology() -> None:
    graph = _model("resnet18").graph
    assert _histogram(graph) == {
        "Conv": 20, "BatchNormalization": 20, "Relu": 17, "Add": 8, "MaxPool": 1,
        "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1,
    }
    assert all(len(conv.input) == 2 for conv in _nodes(graph, "Conv")), "bias=False convs"
    kernels = collections.Counter(tuple(_attr(c, "kernel_shape")) for c in _nodes(graph, "Conv"))
    assert kernels == {(7, 7): 1, (3, 3): 16, (1, 1): 3}
    gemm = _nodes(graph, "Gemm")[0]
    assert _attr(gemm, "transB") == 1


def test_mobilenetv2_topology() -> None:
    model = _model("mobilenetv2")
    graph = model.graph
    counts = _histogram(graph)
    assert counts["Conv"] == 52 and counts["BatchNormalization"] == 52
    assert counts["Clip"] == 35 and counts["Add"] == 10 and counts["Gemm"] == 1
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    depthwise = [c for c in _nodes(graph, "Conv") if _attr(c, "group") > 1]
    assert len(depthwise) == 17
    for conv in depthwise:
        assert _attr(conv, "group") == weights[conv.input[1]].shape[0]
        assert weights[conv.input[1]].shape[1] == 1
    for clip in _nodes(graph, "Clip"):
        assert len(clip.input) == 3
        assert float(weights[clip.input[1]]) == 0.0 and float(weights[clip.input[2]]) == 6.0


def test_transformer_uses_primitive_ops_and_runtime_shapes() -> None:
    graph = _model("transformer_encoder").graph
    counts = _histogram(graph)
    assert counts["Softmax"] == 4 and counts["Erf"] == 4
    assert counts["ReduceMean"] == 16 and counts["Pow"] == 8 and counts["Sqrt"] == 8
    assert counts["MatMul"] == 32
    assert not {"LayerNormalization", "Gelu", "Attention"} & counts.keys()
    producers = {out: node for node in graph.node for out in node.output}

    def reaches_shape(name: str) -> bool:
        node = producers.get(name)
        if node is None:
            return False
        return node.op_type == "Shape" or any(reaches_shape(i) for i in node.input)

    runtime_reshapes = [
        r for r in _nodes(graph, "Reshape")
        if producers[r.input[1]].op_type == "Concat" and reaches_shape(r.input[1])
    ]
    assert len(runtime_reshapes) >= 1


def test_bilstm_uses_two_bidirectional_lstms_with_optional_inputs() -> None:
    graph = _model("bilstm").graph
    lstms = _nodes(graph, "LSTM")
    assert len(lstms) == 2
    for lstm in lstms:
        assert _attr(lstm, "direction") == b"bidirectional"
        assert _attr(lstm, "hidden_size") == 128
        x, w, r, bias, seq_lens, h0, c0 = lstm.input
        assert bias and h0 and c0 and seq_lens == ""
    assert _histogram(graph)["Transpose"] == 2 and _histogram(graph)["Reshape"] == 2


def test_gru_uses_torch_reset_formulation() -> None:
    graph = _model("gru").graph
    (gru,) = _nodes(graph, "GRU")
    assert _attr(gru, "linear_before_reset") == 1 and _attr(gru, "hidden_size") == 128
    assert _histogram(graph)["Gemm"] == 1 and _histogram(graph)["MatMul"] == 1


def test_if_branches_read_outer_scope() -> None:
    model = _model("if_model")
    (if_node,) = _nodes(model.graph, "If")
    initializers = {t.name for t in model.graph.initializer}
    branches = {a.name: a.g for a in if_node.attribute}
    assert branches.keys() == {"then_branch", "else_branch"}
    for branch in branches.values():
        outer = _outer_references(branch)
        assert outer & initializers, "branch weights come from the outer graph"
        assert outer - initializers, "branch reads an outer computed value"
        assert len(branch.node) >= 3


def test_loop_body_reads_outer_scope_and_computes_its_condition() -> None:
    model = _model("loop_model")
    (loop,) = _nodes(model.graph, "Loop")
    assert loop.input[0] and loop.input[1], "trip count M and initial condition given"
    body = next(a.g for a in loop.attribute if a.name == "body")
    initializers = {t.name for t in model.graph.initializer}
    assert _outer_references(body) & initializers
    producers = {out: node for node in body.node for out in node.output}
    assert producers[body.output[0].name].op_type == "Less"
    assert len(body.output) == 3  # condition, carried state, scan output


# --- running under the oracle -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_onnxruntime_runs_batch_1_and_8(name: str) -> None:
    declared = {o.name: _dims(o) for o in _model(name).graph.output}
    for batch in (1, 8):
        outputs = _run(name, model_suite.sample_inputs(name, batch=batch))
        assert outputs.keys() == declared.keys()
        for output_name, value in outputs.items():
            dims = declared[output_name]
            assert value.dtype == np.float32
            assert value.shape[dims.index("batch")] == batch
            assert all(
                got == want for got, want in zip(value.shape, dims, strict=True)
                if isinstance(want, int)
            ), (output_name, value.shape, dims)
            assert np.isfinite(value).all(), output_name
            assert value.std() > 1e-3, (output_name, value.std())


@pytest.mark.parametrize("name", [n for n in NAMES if n != "if_model"])
def test_batch_rows_are_independent(name: str) -> None:
    """Row 3 of a batch-8 run equals a batch-1 run on row 3 alone (batch dim really dynamic).

    if_model is excluded on purpose: its If condition is a mean over the whole batch.
    """
    model = _model(name)
    feeds = model_suite.sample_inputs(name, batch=8, seed=5)
    full = _run(name, feeds)
    single_feeds = {
        v.name: np.take(feeds[v.name], [3], axis=_batch_axis(v)) for v in model.graph.input
    }
    single = _run(name, single_feeds)
    for output in model.graph.output:
        row = np.take(full[output.name], [3], axis=_batch_axis(output))
        np.testing.assert_allclose(single[output.name], row, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["resnet18", "mobilenetv2"])
def test_cnn_logits_neither_vanish_nor_explode(name: str) -> None:
    logits = _run(name, model_suite.sample_inputs(name, batch=8))["output"]
    assert 0.1 <= logits.std() <= 10.0, logits.std()


def test_transformer_mask_hides_padded_tokens() -> None:
    feeds = model_suite.sample_inputs("transformer_encoder", batch=1, seed=2)
    kept = int(feeds["attention_mask"].sum())
    assert kept < feeds["attention_mask"].shape[1], "sample must contain padding"
    changed = {k: v.copy() for k, v in feeds.items()}
    changed["input"][:, kept:] += 3.0
    before = _run("transformer_encoder", feeds)["output"]
    after = _run("transformer_encoder", changed)["output"]
    np.testing.assert_allclose(after[:, :kept], before[:, :kept], rtol=1e-4, atol=1e-4)
    assert np.abs(after[:, kept:] - before[:, kept:]).max() > 0.1


def _forced_branch_session(take_then: bool) -> ort.InferenceSession:
    """if_model with the If condition replaced by a constant: the oracle for one branch."""
    model = copy.deepcopy(_model("if_model"))
    (if_node,) = _nodes(model.graph, "If")
    model.graph.initializer.append(
        numpy_helper.from_array(np.asarray(take_then), "forced_condition")
    )
    if_node.input[0] = "forced_condition"
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_if_both_branches_reachable_by_seed_parity() -> None:
    forced = {True: _forced_branch_session(True), False: _forced_branch_session(False)}
    for seed in (0, 1, 2, 3):
        feeds = model_suite.sample_inputs("if_model", batch=4, seed=seed)
        expect_then = seed % 2 == 0  # documented: even seed -> then_branch
        got = _run("if_model", feeds)["output"]
        taken = forced[expect_then].run(None, feeds)[0]
        other = forced[not expect_then].run(None, feeds)[0]
        np.testing.assert_allclose(got, taken, rtol=1e-5, atol=1e-6)
        assert np.abs(got - other).max() > 1e-2


@pytest.mark.parametrize("steps", [16, 5])
def test_loop_matches_numpy_recurrence(steps: int) -> None:
    weights = {t.name: numpy_helper.to_array(t) for t in _model("loop_model").graph.initializer}
    x = np.random.default_rng(7).standard_normal((steps, 3, 32)).astype(np.float32)
    h = np.tanh(x.mean(axis=0) @ weights["init.weight_T"])
    states = []
    for x_t in x:
        h = np.tanh(x_t @ weights["cell.weight_ih_T"] + h @ weights["cell.weight_hh_T"]
                    + weights["cell.bias"])
        states.append(h)
    expected_output = h @ weights["head.weight"].T + weights["head.bias"]
    got = _run("loop_model", {"input": x})
    assert got["states"].shape == (steps, 3, 64)
    np.testing.assert_allclose(got["states"], np.stack(states), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["output"], expected_output, rtol=1e-4, atol=1e-5)


# --- API edges and CLI -------------------------------------------------------------------------


def test_unknown_name_is_a_value_error_naming_valid_models() -> None:
    for call in (lambda: model_suite.build("resnet50"),
                 lambda: model_suite.sample_inputs("resnet50")):
        with pytest.raises(ValueError, match="resnet50") as info:
            call()
        assert all(valid in str(info.value) for valid in NAMES)


def test_cli_lists_and_writes_a_model(tmp_path: Path) -> None:
    python_path = os.pathsep.join([str(CORE_DIR), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": python_path}
    command = [sys.executable, "-m", "onnxplug.testing.model_suite"]
    listed = subprocess.run(
        [*command, "--list"], env=env, capture_output=True, text=True, check=True
    )
    assert tuple(listed.stdout.split()) == NAMES
    target = tmp_path / "gru.onnx"
    subprocess.run([*command, "gru", "-o", str(target)], env=env, capture_output=True, check=True)
    assert onnx.load(str(target)).SerializeToString() == _model("gru").SerializeToString()
    bad = subprocess.run(
        [*command, "nope", "-o", str(target)], env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "resnet18" in bad.stderr
