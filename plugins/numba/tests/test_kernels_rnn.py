"""LSTM and GRU of the numba provider against onnxruntime, and the tiled recurrent product
(kernels/rnn_tile.py) against a float64 numpy product."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba_test_helpers import assert_close, run_numba, run_onnxruntime
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnxplug_numba.kernels.rnn_tile import PANEL, add_panel_products, pack_panels


@njit(nogil=True)
def _panel_product(acc, panels, h):  # type: ignore[no-untyped-def]
    add_panel_products(acc, panels, h, 0, panels.shape[0])


@pytest.mark.parametrize("batch", [1, 2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("hidden, cols", [(1, 4), (5, 15), (16, 48), (20, 80), (37, 111), (128, 512)])
def test_panel_product(rng, batch, hidden, cols):
    rt = rng.standard_normal((hidden, cols)).astype(np.float32)
    h = rng.standard_normal((batch, hidden)).astype(np.float32)
    panels = pack_panels(rt)
    assert panels.shape == (-(-cols // PANEL), hidden, PANEL)
    start = rng.standard_normal((batch, panels.shape[0] * PANEL)).astype(np.float32)
    acc = start.copy()
    _panel_product(acc, panels, h)
    expected = start[:, :cols].astype(np.float64) + h.astype(np.float64) @ rt.astype(np.float64)
    np.testing.assert_allclose(acc[:, :cols], expected, rtol=1e-5, atol=1e-5 * np.sqrt(hidden))
    # the padding columns get products with zero weights: unchanged
    np.testing.assert_array_equal(acc[:, cols:], start[:, cols:])


def _recurrent_case(rng, op, direction, hidden, batch, dtype=np.float32, *, steps=7, inputs=3, states=False,
                    peepholes=False, layout=0, weights_as_inputs=False, **attrs):  # type: ignore[no-untyped-def]
    """A one-node LSTM/GRU model (weights constant unless ``weights_as_inputs``) and its feeds."""
    gates, dirs = (4 if op == "LSTM" else 3), (2 if direction == "bidirectional" else 1)
    scale = 1.0 / np.sqrt(hidden)
    values = {"x": rng.standard_normal((batch, steps, inputs) if layout else (steps, batch, inputs)),
              "w": rng.standard_normal((dirs, gates * hidden, inputs)) * scale,
              "r": rng.standard_normal((dirs, gates * hidden, hidden)) * scale,
              "b": rng.standard_normal((dirs, 2 * gates * hidden)) * scale}
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    if states or peepholes:
        values["h0"] = rng.standard_normal(state_shape)
        if op == "LSTM":
            values["c0"] = rng.standard_normal(state_shape)
    if peepholes:
        values["p"] = rng.standard_normal((dirs, 3 * hidden))
    values = {k: v.astype(dtype) for k, v in values.items()}
    names = ["x", "w", "r", "b", "", *[k for k in ("h0", "c0", "p") if k in values]]
    outputs = ["y", "y_h", "y_c"][:3 if op == "LSTM" else 2]
    node = helper.make_node(op, names, outputs, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    constant = {"w", "r", "b"} if not weights_as_inputs else set()
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, elem, v.shape) for k, v in values.items() if k not in constant],
        [helper.make_tensor_value_info(o, elem, None) for o in outputs],
        [numpy_helper.from_array(values[k], k) for k in ("w", "r", "b") if k in constant])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    return model, {k: v for k, v in values.items() if k not in constant}


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("hidden, batch", [(5, 1), (20, 3), (37, 8), (128, 8), (16, 5)])
def test_lstm(rng, direction, hidden, batch):
    model, feeds = _recurrent_case(rng, "LSTM", direction, hidden, batch)
    assert_close(run_numba(model, feeds)[0], run_onnxruntime(model, feeds))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("hidden, batch", [(5, 1), (20, 3), (37, 8), (128, 8), (16, 5)])
def test_gru(rng, direction, linear_before_reset, hidden, batch):
    model, feeds = _recurrent_case(rng, "GRU", direction, hidden, batch, linear_before_reset=linear_before_reset)
    assert_close(run_numba(model, feeds)[0], run_onnxruntime(model, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
@pytest.mark.parametrize("layout", [0, 1])
def test_initial_states_and_layout(rng, op, layout):
    model, feeds = _recurrent_case(rng, op, "bidirectional", 12, 3, states=True, layout=layout)
    # onnxruntime has no batch-major layout: onnx's reference implementation is the oracle there
    expected = ReferenceEvaluator(model).run(None, feeds) if layout else run_onnxruntime(model, feeds)
    assert_close(run_numba(model, feeds)[0], expected)


def test_lstm_peepholes(rng):
    model, feeds = _recurrent_case(rng, "LSTM", "bidirectional", 9, 4, peepholes=True)
    assert_close(run_numba(model, feeds)[0], run_onnxruntime(model, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_float64(rng, op):
    model, feeds = _recurrent_case(rng, op, "bidirectional", 10, 3, np.float64)
    # onnxruntime's LSTM has no float64 kernel
    assert_close(run_numba(model, feeds)[0], ReferenceEvaluator(model).run(None, feeds), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_same_results_on_one_and_two_threads(rng, op, direction, monkeypatch):
    """Each thread runs whole directions or whole batch rows with the same per-row arithmetic."""
    from onnxplug_numba.ops import op_rnn

    monkeypatch.setattr(op_rnn, "RNN_BAND_MIN_ROWS", 1)  # bands of a few rows, so two threads split
    model, feeds = _recurrent_case(rng, op, direction, 24, 6, steps=5)
    one, _ = run_numba(model, feeds, threads=1)
    two, _ = run_numba(model, feeds, threads=2)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_weights_as_inputs_change_between_runs(rng, op):
    """Weights that are graph inputs are repacked on every run, not cached from the first."""
    model, feeds = _recurrent_case(rng, op, "bidirectional", 8, 2, weights_as_inputs=True)
    _, session = run_numba(model, feeds)
    for _ in range(2):
        feeds = {k: v if k == "x" else (v * 1.5).astype(v.dtype) for k, v in feeds.items()}
        assert_close(session.run(None, feeds), run_onnxruntime(model, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_bidirectional_layer_runs_both_directions_in_one_prange_region(rng, op):
    from onnxplug_numba.kernels import native_parallel
    from onnxplug_numba.kernels import rnn as krnn

    if not native_parallel.PRANGE_AVAILABLE:
        pytest.skip("numba has no thread-safe threading layer here")
    model, feeds = _recurrent_case(rng, op, "bidirectional", 32, 3, steps=6)
    got, _ = run_numba(model, feeds, threads=2)
    kernel = krnn.lstm_both_directions if op == "LSTM" else krnn.gru_both_directions
    assert kernel.signatures, "the two directions did not run in the prange kernel"
    assert_close(got, run_onnxruntime(model, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_weights_computed_each_run_are_packed_once_per_value(rng, op, monkeypatch):
    """Weights that are not constants but repeat their values (a graph computing them from
    constants) are packed once; a change, in place or not, is packed again; results as onnxruntime's."""
    from onnxplug_numba.ops import op_rnn

    packs = []
    kernel = getattr(op_rnn, op)
    original = kernel.recurrent_weights

    def counting(self, *args):  # type: ignore[no-untyped-def]
        packs.append(1)
        return original(self, *args)

    monkeypatch.setattr(kernel, "recurrent_weights", counting)
    model, feeds = _recurrent_case(rng, op, "forward", 8, 2, weights_as_inputs=True)
    _, session = run_numba(model, feeds)
    first = len(packs)
    same = {k: v.copy() for k, v in feeds.items()}  # new arrays, same values
    assert_close(session.run(None, same), run_onnxruntime(model, same))
    assert len(packs) == first
    w_name = next(k for k in feeds if k != "x")
    same[w_name] *= np.float32(0.5)  # in place: the kept copy tells it apart
    assert_close(session.run(None, same), run_onnxruntime(model, same))
    assert len(packs) == first + 1
