"""com.microsoft DynamicQuantizeLSTM against onnxruntime: directions, bias, initial states,
peepholes, sequence_lens, per-tensor and per-column parameters, int8 and uint8 weights, clip and
input_forget. onnxruntime quantizes h once per step over the batch rows each of its threads
takes, so its results depend on its thread count, and so do the kernel's (its product threads):
both run on one thread, but in the test of the thread counts."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from tests.numpy_provider.com_microsoft.ms_oracle import assert_ms_matches

RNG = np.random.default_rng(79)
S, B, I, H = 5, 3, 6, 4
#: initializers, as the quantization tool writes them (onnxruntime wants constant zero points)
WEIGHTS = ("w", "r", "w_scale", "w_zp", "r_scale", "r_zp")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setattr(PRODUCT_THREADS, "threads", 1)


def _feeds(direction="forward", w_type=np.int8, per_column=False, bias=True, states=False, peepholes=False,
           lens=None):
    d = 2 if direction == "bidirectional" else 1
    params = (d, 4 * H) if per_column else (d,)
    info = np.iinfo(w_type)

    def q(shape):
        return RNG.integers(info.min, info.max + 1, shape).astype(w_type)

    def zp():  # onnxruntime takes one uint8 zero point per matrix: per-column ones are all equal
        return np.zeros(params, w_type) if w_type == np.int8 else np.full(params, q(()), w_type)

    return {
        "x": RNG.standard_normal((S, B, I)).astype(np.float32),
        "w": q((d, I, 4 * H)), "r": q((d, H, 4 * H)),
        "b": RNG.standard_normal((d, 8 * H)).astype(np.float32) if bias else None,
        "lens": lens,
        "h0": RNG.standard_normal((d, B, H)).astype(np.float32) if states else None,
        "c0": RNG.standard_normal((d, B, H)).astype(np.float32) if states else None,
        "p": RNG.standard_normal((d, 3 * H)).astype(np.float32) if peepholes else None,
        "w_scale": RNG.uniform(0.002, 0.01, params).astype(np.float32), "w_zp": zp(),
        "r_scale": RNG.uniform(0.002, 0.01, params).astype(np.float32), "r_zp": zp(),
    }


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column", [False, True])
def test_directions_and_parameters(direction, w_type, per_column):
    feeds = _feeds(direction, w_type, per_column)
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=1, constants=WEIGHTS, hidden_size=H, direction=direction)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lens", [[5, 3, 1], [3, 5, 2]])
def test_states_peepholes_and_lengths(direction, lens):
    feeds = _feeds(direction, states=True, peepholes=True, lens=np.array(lens, np.int32))
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=1, constants=WEIGHTS, hidden_size=H,
                      direction=direction)


def test_a_sequence_without_steps_ends_in_zero_states():
    feeds = _feeds(states=True, lens=np.array([5, 0, 2], np.int32))
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=1, constants=WEIGHTS, hidden_size=H)


def test_no_bias_clip_and_input_forget():
    feeds = _feeds(bias=False, states=True)
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=1, constants=WEIGHTS, hidden_size=H, clip=0.5, input_forget=1)


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_h_quantized_per_block_of_rows_like_onnxruntimes_threads(monkeypatch, threads, direction):
    """Batch 3 on 2 threads: rows (0, 1) and (2) quantize h apart; on 3 threads, each row."""
    monkeypatch.setattr(PRODUCT_THREADS, "threads", threads)
    feeds = _feeds(direction, states=True)
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=threads, constants=WEIGHTS,
                      hidden_size=H, direction=direction)


@pytest.mark.parametrize("batch,hidden", [(2, 260), (4, 260), (2, 256), (5, 260)])
def test_batch_split_follows_onnxruntimes_rule(monkeypatch, batch, hidden):
    """onnxruntime splits the batch over its threads only for more than 4 rows, or 2+ rows with
    hidden size 256 or less; otherwise h is quantized over the whole batch."""
    monkeypatch.setattr(PRODUCT_THREADS, "threads", 2)
    steps, inputs = 3, 8
    feeds = {
        "x": RNG.standard_normal((steps, batch, inputs)).astype(np.float32),
        "w": RNG.integers(-128, 128, (1, inputs, 4 * hidden)).astype(np.int8),
        "r": RNG.integers(-128, 128, (1, hidden, 4 * hidden)).astype(np.int8),
        "b": RNG.standard_normal((1, 8 * hidden)).astype(np.float32), "lens": None,
        "h0": RNG.standard_normal((1, batch, hidden)).astype(np.float32),
        "c0": RNG.standard_normal((1, batch, hidden)).astype(np.float32), "p": None,
        "w_scale": np.array([0.004], np.float32), "w_zp": np.zeros(1, np.int8),
        "r_scale": np.array([0.003], np.float32), "r_zp": np.zeros(1, np.int8),
    }
    assert_ms_matches("DynamicQuantizeLSTM", feeds, n_outputs=3, ort_threads=2, constants=WEIGHTS,
                      hidden_size=hidden)
