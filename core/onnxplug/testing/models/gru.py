"""A 1-layer GRU (torch nn.GRU(64, 128)) with a linear head, as torch.onnx exports it.

The GRU uses linear_before_reset=1 (torch's formulation). Outputs: "output" is a per-step
MatMul+Add head on Y, "logits" a Gemm classifier on the final hidden state Y_h.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxplug.testing.models._builder import BATCH_DIM, GraphBuilder, float_input
from onnxplug.testing.models._recurrent import rnn_weights, zero_state

SEQ_LEN = 32
INPUT_SIZE = 64
HIDDEN = 128
NUM_CLASSES = 10
GRU_GATES = 3


def build(seed: int = 0) -> onnx.ModelProto:
    """Build the GRU and heads with torch's default uniform initialisation."""
    b = GraphBuilder(np.random.default_rng(seed))
    h0 = zero_state(b, "input", "/gru/h0", 1, HIDDEN)
    w, r, bias = rnn_weights(b, "gru", GRU_GATES, 1, INPUT_SIZE, HIDDEN)
    y, y_h = b.node_outputs(
        "GRU", ["input", w, r, bias, "", h0], "/gru", num_outputs=2,
        hidden_size=HIDDEN, linear_before_reset=1,
    )
    y = b.node("Squeeze", [y, b.int64s("/gru", [1])], "/gru")  # [seq, batch, H]
    bound = 1.0 / np.sqrt(HIDDEN)
    head_w = b.initializer("head.weight_T", b.uniform((HIDDEN, NUM_CLASSES), -bound, bound))
    head_b = b.initializer("head.bias", b.uniform((NUM_CLASSES,), -bound, bound))
    y = b.node("MatMul", [y, head_w], "/head")
    b.node("Add", [y, head_b], "/head", output="output")
    last = b.node("Squeeze", [y_h, b.int64s("/classifier", [0])], "/classifier")  # [batch, H]
    b.gemm_classifier(last, "/classifier", "classifier", HIDDEN, NUM_CLASSES, output="logits")
    return b.make_model(
        "gru",
        [float_input("input", [SEQ_LEN, BATCH_DIM, INPUT_SIZE])],
        [
            float_input("output", [SEQ_LEN, BATCH_DIM, NUM_CLASSES]),
            float_input("logits", [BATCH_DIM, NUM_CLASSES]),
        ],
    )


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal sequences, time-major [seq, batch, features]."""
    rng = np.random.default_rng(seed)
    return {"input": rng.standard_normal((SEQ_LEN, batch, INPUT_SIZE)).astype(np.float32)}
