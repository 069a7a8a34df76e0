"""The numpy provider's default-activation LSTM and GRU fast paths against onnxruntime.

Those paths run one direction at a time, gate-major (the batch-1 product transposed), divide by
1 + exp(-x) for sigmoids (the minus folded into the weights), reorder the LSTM's gates, read reverse
directions back to front and keep GRU's Rb_h in the step feed (the LSTM gate-blocked from batch 4 to
12); these cases cover batch 1 and 8 (and 2 to 16 for the LSTM's layouts), every direction, given or omitted initial states and bias, layout 1,
full ``sequence_lens`` given, inputs large enough to saturate the gates (exp overflows to inf) and
float64. Expected values come from onnxruntime (onnx.reference for layout 1 and float64, which
onnxruntime rejects).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from onnxplug.providers.numpy.ops.ai_onnx import op_gru, op_lstm
from onnxplug.providers.numpy.ops._rnn_util import blocked_steps
from tests.numpy_provider.single_node_oracle import assert_matches_oracle, node_model, run_ours

RNG = np.random.default_rng(2026)
SEQ, INPUT, HIDDEN = 6, 8, 16


def _feeds(gates: int, directions: int, batch: int, init: bool = False, bias: bool = True, layout: int = 0,
           full_lens: bool = False, x_scale: float = 1.0, dtype: type = np.float32,
           states: tuple[str, ...] = ("h0",)) -> tuple[dict[str, np.ndarray], list[str]]:
    """Inputs and the node's input names ('' for omitted optional inputs)."""
    def rand(*shape: int, scale: float = 0.5) -> np.ndarray:
        return np.asarray(RNG.standard_normal(shape) * scale, dtype=dtype)

    x = rand(batch, SEQ, INPUT, scale=x_scale) if layout else rand(SEQ, batch, INPUT, scale=x_scale)
    feeds = {"x": x, "w": rand(directions, gates * HIDDEN, INPUT), "r": rand(directions, gates * HIDDEN, HIDDEN)}
    names = ["x", "w", "r", "", "", ""]
    if bias:
        feeds["b"] = rand(directions, 2 * gates * HIDDEN)
        names[3] = "b"
    if full_lens:
        feeds["lens"] = np.full(batch, SEQ, dtype=np.int32)
        names[4] = "lens"
    if init:
        for name in states:
            feeds[name] = rand(batch, directions, HIDDEN) if layout else rand(directions, batch, HIDDEN)
        names = names[:5] + list(states)
    while names[-1] == "":
        names.pop()
    return feeds, names


CONFIGS = [  # direction, batch, initial states, bias
    ("forward", 1, False, True), ("forward", 8, True, True), ("reverse", 1, True, True),
    ("reverse", 8, False, False), ("bidirectional", 1, True, True), ("bidirectional", 8, True, True),
    ("bidirectional", 8, False, False),
]


@pytest.mark.parametrize("direction,batch,init,bias", CONFIGS)
def test_lstm_fast_path(direction: str, batch: int, init: bool, bias: bool) -> None:
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _feeds(4, d, batch, init, bias, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction=direction, hidden_size=HIDDEN)


@pytest.mark.parametrize("direction,batch,init,bias", CONFIGS)
@pytest.mark.parametrize("lbr", [0, 1])
def test_gru_fast_path(direction: str, batch: int, init: bool, bias: bool, lbr: int) -> None:
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _feeds(3, d, batch, init, bias)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction=direction, hidden_size=HIDDEN, linear_before_reset=lbr)


@pytest.mark.parametrize("batch", [1, 8])
def test_fast_paths_layout_1_with_full_lengths(batch: int) -> None:
    """Batch-major layout (onnxruntime rejects it: onnx.reference is the oracle), all lengths given full."""
    feeds, names = _feeds(4, 2, batch, init=True, layout=1, full_lens=True, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN, layout=1)
    feeds, names = _feeds(3, 2, batch, init=True, layout=1, full_lens=True)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN, layout=1, linear_before_reset=1)


@pytest.mark.parametrize("batch", [1, 8])
def test_fast_paths_saturated_gates(batch: int) -> None:
    """Inputs x30 push many exp(-x) to inf (sigmoid 0) and tanh to +-1. The pre-activations are ~30x
    larger, so are their rounding differences: the tolerance is 30x looser than elsewhere."""
    feeds, names = _feeds(4, 2, batch, init=True, x_scale=30.0, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=3e-4, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN)
    for lbr in (0, 1):
        feeds, names = _feeds(3, 2, batch, init=True, x_scale=30.0)
        assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=3e-4, opset=14, input_names=names,
                              direction="bidirectional", hidden_size=HIDDEN, linear_before_reset=lbr)


def test_fast_paths_float64() -> None:
    """onnxruntime's LSTM has no float64 kernel: onnx.reference is the oracle here."""
    feeds, names = _feeds(4, 2, 3, init=True, dtype=np.float64, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-10, atol=1e-12, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN, oracle="ref")
    feeds, names = _feeds(3, 2, 3, init=True, dtype=np.float64)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-10, atol=1e-12, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN, linear_before_reset=1, oracle="ref")


def test_cases_above_take_the_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases above test the fast paths only if the kernels pick them (default activations, full lengths)."""
    calls = []
    for module, name in ((op_lstm, "_lstm_direction"), (op_gru, "_gru_direction")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name: calls.append(_n) or _f(*a))
    feeds, names = _feeds(4, 2, 8, init=True, full_lens=True, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN)
    feeds, names = _feeds(3, 1, 1)
    assert_matches_oracle("GRU", feeds, n_outputs=2, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          hidden_size=HIDDEN, linear_before_reset=1)
    assert calls == ["_lstm_direction", "_lstm_direction", "_gru_direction"]


@pytest.mark.parametrize("batch,blocked", [(1, False), (2, False), (4, True), (8, True), (12, True), (16, False)])
def test_lstm_runs_gate_blocked_from_batch_4_to_12(monkeypatch: pytest.MonkeyPatch, batch: int, blocked: bool) -> None:
    """Batches 4 to 12 (hidden 16) run the LSTM gate-blocked, the others gate-major; each matches
    onnxruntime, bidirectional with initial states."""
    seen = []
    real = op_lstm.blocked_steps
    monkeypatch.setattr(op_lstm, "blocked_steps", lambda b, h: seen.append(real(b, h)) or seen[-1])
    feeds, names = _feeds(4, 2, batch, init=True, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction="bidirectional", hidden_size=HIDDEN)
    assert seen == [blocked]


@pytest.mark.parametrize("blocked", [False, True], ids=["gate-major", "gate-blocked"])
@pytest.mark.parametrize("direction,init,bias,layout", [("forward", True, True, 0), ("reverse", False, False, 0),
                                                        ("bidirectional", True, True, 1)])
def test_lstm_either_layout_at_batch_8(monkeypatch: pytest.MonkeyPatch, blocked: bool, direction: str, init: bool,
                                       bias: bool, layout: int) -> None:
    """Batch 8 forced into each layout, so neither is only tested through the other's batches."""
    monkeypatch.setattr(op_lstm, "blocked_steps", lambda b, h: blocked)
    d = 2 if direction == "bidirectional" else 1
    feeds, names = _feeds(4, d, 8, init, bias, layout=layout, states=("h0", "c0"))
    assert_matches_oracle("LSTM", feeds, n_outputs=3, rtol=1e-4, atol=1e-5, opset=14, input_names=names,
                          direction=direction, hidden_size=HIDDEN, layout=layout,
                          oracle="ref" if layout else "ort")


def test_blocked_steps_limits() -> None:
    assert [blocked_steps(b, 128) for b in (1, 2, 3, 4, 8, 12, 13, 16)] == [False] * 3 + [True] * 3 + [False] * 2
    assert blocked_steps(8, 256) and not blocked_steps(8, 512) and not blocked_steps(4, 512)


def test_fast_paths_empty_sequence() -> None:
    """No steps at all: Y is empty and the final states are zeros, as onnxruntime's LSTM gives Y_h (its
    Y_c is uninitialised memory and its GRU aborts the process, so the expectation is written here)."""
    for (op, gates, states), batch in itertools.product((("LSTM", 4, ("h0", "c0")), ("GRU", 3, ("h0",))), (3, 8)):
        feeds, names = _feeds(gates, 2, batch, init=True, states=states)
        feeds["x"] = feeds["x"][:0]
        y_like = np.zeros((0, 2, batch, HIDDEN), np.float32)
        state_like = np.zeros((2, batch, HIDDEN), np.float32)
        model = node_model(op, feeds, 1 + len(states), opset=14, input_names=names, direction="bidirectional",
                           hidden_size=HIDDEN)
        y, *final = run_ours(model, feeds, like=[y_like] + [state_like] * len(states))
        assert y.shape == y_like.shape and y.dtype == np.float32
        for state in final:
            assert state.shape == state_like.shape and not state.any()
