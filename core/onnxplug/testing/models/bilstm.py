"""A 2-layer bidirectional LSTM (torch nn.LSTM(64, 128, 2, bidirectional=True)) as exported.

Each layer is one ONNX LSTM with B, an empty sequence_lens and zero initial_h/initial_c built
from the runtime batch size. Between layers the exporter turns Y [seq, 2, batch, H] into
[seq, batch, 2H] with Transpose + Reshape; the last layer's Y gets the same treatment.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxplug.testing.models._builder import BATCH_DIM, GraphBuilder, float_input
from onnxplug.testing.models._recurrent import rnn_weights, zero_state

SEQ_LEN = 32
INPUT_SIZE = 64
HIDDEN = 128
NUM_LAYERS = 2
DIRECTIONS = 2
LSTM_GATES = 4


def build(seed: int = 0) -> onnx.ModelProto:
    """Build the BiLSTM with torch's U(+-1/sqrt(H)) weights."""
    b = GraphBuilder(np.random.default_rng(seed))
    h0 = zero_state(b, "input", "/lstm/h0", DIRECTIONS, HIDDEN)
    c0 = zero_state(b, "input", "/lstm/c0", DIRECTIONS, HIDDEN)
    x, input_size = "input", INPUT_SIZE
    for layer in range(NUM_LAYERS):
        scope = f"/lstm/layer{layer}"
        w, r, bias = rnn_weights(b, f"lstm.l{layer}", LSTM_GATES, DIRECTIONS, input_size, HIDDEN)
        y = b.node_outputs(
            "LSTM", [x, w, r, bias, "", h0, c0], scope, num_outputs=3,
            direction="bidirectional", hidden_size=HIDDEN,
        )[0]
        y = b.node("Transpose", [y], scope, perm=[0, 2, 1, 3])  # [seq, batch, 2, H]
        last = layer == NUM_LAYERS - 1
        x = b.node(
            "Reshape", [y, b.int64s(scope, [0, 0, -1])], scope, output="output" if last else None
        )
        input_size = DIRECTIONS * HIDDEN
    return b.make_model(
        "bilstm",
        [float_input("input", [SEQ_LEN, BATCH_DIM, INPUT_SIZE])],
        [float_input("output", [SEQ_LEN, BATCH_DIM, DIRECTIONS * HIDDEN])],
    )


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal sequences, time-major [seq, batch, features]."""
    rng = np.random.default_rng(seed)
    return {"input": rng.standard_normal((SEQ_LEN, batch, INPUT_SIZE)).astype(np.float32)}
