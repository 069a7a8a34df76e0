"""DynamicQuantizeLSTM's stacked-direction step loop (default cell, full lengths) against
onnxruntime: uneven blocks of rows padded with zeros, both directions at once, per-column scales,
and R products in float32 or, past float32's exact range, float64."""

from __future__ import annotations

import numpy as np
import pytest

import onnxplug.providers.numpy.ops.com_microsoft._quantized_lstm_steps as steps_mod
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(83)
WEIGHTS = ("w", "r", "w_scale", "w_zp", "r_scale", "r_zp")


@pytest.fixture
def ran(monkeypatch):
    """The R dtype of every stacked step loop that ran."""
    seen = []
    original = steps_mod.Steps.run

    def spy(self, *args):
        seen.append(self.weights.dtype)
        return original(self, *args)

    monkeypatch.setattr(steps_mod.Steps, "run", spy)
    return seen


def _feeds(dirs, seq, batch, inputs, hidden, w_type=np.int8, per_column=False, states=True):
    params = (dirs, 4 * hidden) if per_column else (dirs,)
    info = np.iinfo(w_type)
    zp = np.zeros(params, w_type) if w_type == np.int8 else np.full(params, 0, w_type)
    return {
        "x": (RNG.standard_normal((seq, batch, inputs)) * 2).astype(np.float32),
        "w": RNG.integers(info.min, info.max + 1, (dirs, inputs, 4 * hidden)).astype(w_type),
        "r": RNG.integers(info.min, info.max + 1, (dirs, hidden, 4 * hidden)).astype(w_type),
        "b": RNG.standard_normal((dirs, 8 * hidden)).astype(np.float32), "lens": None,
        "h0": RNG.standard_normal((dirs, batch, hidden)).astype(np.float32) if states else None,
        "c0": RNG.standard_normal((dirs, batch, hidden)).astype(np.float32) if states else None, "p": None,
        "w_scale": RNG.uniform(0.002, 0.01, params).astype(np.float32), "w_zp": zp,
        "r_scale": RNG.uniform(0.002, 0.01, params).astype(np.float32), "r_zp": zp.copy(),
    }


@pytest.mark.parametrize("threads,batch", [(1, 1), (1, 4), (2, 2), (2, 5), (3, 7), (4, 6)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_blocks_and_directions(monkeypatch, ran, threads, batch, direction):
    monkeypatch.setattr(PRODUCT_THREADS, "threads", threads)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = _feeds(dirs, 6, batch, 5, 8, per_column=batch % 2 == 1, states=batch != 4)
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=threads, constants=WEIGHTS,
                      hidden_size=8, direction=direction)
    assert ran == [np.float32]


def test_wide_uint8_recurrence_in_float64(monkeypatch, ran):
    """uint8 R with zero point 0 and hidden size 260: sums can pass 2**24, so R stays float64."""
    monkeypatch.setattr(PRODUCT_THREADS, "threads", 1)
    feeds = _feeds(2, 3, 2, 4, 260, w_type=np.uint8)
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=1, constants=WEIGHTS,
                      hidden_size=260, direction="bidirectional")
    assert ran == [np.float64]
