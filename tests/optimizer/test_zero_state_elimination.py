"""ZeroStateElimination: RNN/GRU/LSTM initial states that are provably zeros are omitted."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxplug as ort
from onnxplug.errors import OnnxplugError
from onnxplug.optimizer.passes.dead_node_elimination import DeadNodeElimination
from onnxplug.optimizer.passes.zero_state_elimination import ZeroStateElimination
from onnxplug.testing.model_suite import build, sample_inputs

from .util import (F, assert_close, assert_equivalent, const, model, node, op_types, ort_run, ours_unoptimized,
                   rand, run_passes)

HIDDEN = 5


def _recurrent(op_type: str = "GRU", *, direction: str = "forward", layout: int = 0, fill=0.0,
               fill_dtype=np.float32, state_dims=None, batch_dim="batch") -> onnx.ModelProto:
    """``op_type`` over x [3, batch, 4] (layout 0) whose initial states come from the torch export's
    chain: zeros of shape [directions, Shape(x)[1], HIDDEN] (or ``state_dims`` given as constants)."""
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op_type]
    d = 2 if direction == "bidirectional" else 1
    x_shape = [3, batch_dim, 4] if layout == 0 else [batch_dim, 3, 4]
    nodes = [node("Shape", ["x"], ["x_shape"]), const("batch_axis", 1 - layout, np.int64),
             node("Gather", ["x_shape", "batch_axis"], ["batch"], axis=0), const("unsq_axes", [0], np.int64),
             node("Unsqueeze", ["batch", "unsq_axes"], ["batch_1d"]),
             const("dirs", [d], np.int64), const("hidden", [HIDDEN], np.int64),
             node("Concat", ["dirs", "batch_1d", "hidden"] if layout == 0 else ["batch_1d", "dirs", "hidden"],
                  ["state_shape"], axis=0)]
    if state_dims is not None:
        nodes = [const("state_shape", state_dims, np.int64)]
    value = onnx.numpy_helper.from_array(np.array([fill], dtype=fill_dtype))
    nodes.append(node("ConstantOfShape", ["state_shape"], ["zeros"], value=value))
    states = ["zeros"] * (2 if op_type == "LSTM" else 1)
    outputs = ["y", "y_h"] + (["y_c"] if op_type == "LSTM" else [])
    nodes.append(node(op_type, ["x", "w", "r", "b", "", *states], outputs, hidden_size=HIDDEN,
                      direction=direction, layout=layout))
    inits = {"w": rand(d, gates * HIDDEN, 4, seed=1) * 0.5, "r": rand(d, gates * HIDDEN, HIDDEN, seed=2) * 0.5,
             "b": rand(d, 2 * gates * HIDDEN, seed=3) * 0.5}
    return model(nodes, [("x", F, x_shape)], [(o, F, None) for o in outputs], inits)


def _feeds(layout: int = 0, batch: int = 2) -> dict[str, np.ndarray]:
    x = rand(3, batch, 4, seed=7)
    return {"x": x if layout == 0 else np.ascontiguousarray(x.transpose(1, 0, 2))}


@pytest.mark.parametrize("op_type", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_zero_states_are_dropped_with_their_shape_chain_and_outputs_match_onnxruntime(op_type, direction, layout):
    proto = _recurrent(op_type, direction=direction, layout=layout)
    m, reports = run_passes(proto, ZeroStateElimination, DeadNodeElimination)
    assert reports["ZeroStateElimination"].counts == {"dropped": 2 if op_type == "LSTM" else 1}
    assert op_types(m) == {op_type: 1}  # the Shape ... ConstantOfShape chain is gone
    assert m.graph.nodes[0].inputs == ["x", "w", "r", "b"]
    if layout == 0:
        assert_equivalent(proto, m, _feeds(layout))
    else:  # onnxruntime refuses layout 1: the oracle is the original model with the optimizer off
        assert_close(ours_unoptimized(m.to_proto(), _feeds(1)), ours_unoptimized(proto, _feeds(1)), rtol=0, atol=0)


@pytest.mark.parametrize("case", [
    pytest.param(dict(fill=0.5), id="non-zero fill"),
    pytest.param(dict(fill=0.0, fill_dtype=np.float64), id="other dtype"),
    pytest.param(dict(state_dims=[1, 2, HIDDEN]), id="static shape, symbolic batch"),
    pytest.param(dict(batch_dim=None), id="unnamed batch dim"),
])
def test_states_not_proven_zeros_of_the_state_shape_stay(case):
    proto = _recurrent("GRU", **case)
    m, reports = run_passes(proto, ZeroStateElimination)
    assert not reports["ZeroStateElimination"].counts.get("dropped")
    assert m.graph.nodes[-1].inputs[-1] == "zeros"


def test_a_wrong_state_shape_still_fails_as_before():
    proto = _recurrent("GRU", state_dims=[1, 3, HIDDEN])  # batch 3 against a batch-2 feed
    with pytest.raises(OnnxplugError, match="GRU"):
        ort.InferenceSession(proto.SerializeToString()).run(None, _feeds())


def test_zero_initializer_state_is_dropped_when_its_shape_is_exact():
    proto = _recurrent("LSTM", batch_dim=2)
    del proto.graph.node[:-1]  # states from one initializer of zeros [1, 2, HIDDEN]
    proto.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros((1, 2, HIDDEN), np.float32), "zeros"))
    m, reports = run_passes(proto, ZeroStateElimination)
    assert reports["ZeroStateElimination"].counts == {"dropped": 2}
    assert_equivalent(proto, m, _feeds())


@pytest.mark.parametrize("name", ["gru", "bilstm"])
def test_model_suite_recurrent_models_run_without_state_chains(name):
    proto = build(name)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["numpy"])
    kinds = [a.op_type for a in session.get_node_assignments()]
    assert not {"Shape", "ConstantOfShape", "Concat"} & set(kinds)
    feeds = sample_inputs(name, batch=3)
    assert_close(session.run(None, feeds), ort_run(proto, feeds), rtol=1e-3, atol=1e-4)
