"""An RNN cell unrolled by an ONNX Loop: h_t = tanh(x_t @ Wx + h_{t-1} @ Wh + b).

The trip count M is the runtime sequence length (Shape -> Gather), the loop-carried state is h,
every h_t is also a scan output, and the body computes its continue-condition
max|h_t| < CONTINUE_LIMIT (always true for tanh, but a real data-dependent value a runtime must
evaluate). The body reads x, Wx, Wh, b and the limit from the outer scope.

Inputs: "input" [seq, batch, 32] (seq is symbolic too; sample_inputs uses 16 steps).
Outputs: "output" [batch, 10] (Gemm head on the final state), "states" [seq, batch, 64].
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnxplug.testing.models._builder import BATCH_DIM, GraphBuilder, float_input

SEQ_DIM = "seq"
SAMPLE_SEQ_LEN = 16
INPUT_SIZE = 32
HIDDEN = 64
NUM_CLASSES = 10
CONTINUE_LIMIT = 2.0


def _body(b: GraphBuilder, weights: dict[str, str]) -> onnx.GraphProto:
    """Loop body (iteration, cond, h_prev) -> (cond, h, h as scan output)."""
    g = b.subgraph_builder()
    iteration, cond_in, h_prev = g.reserve("iteration"), g.reserve("cond_in"), g.reserve("h_prev")
    scope = "/loop/body"
    x_t = g.node("Gather", ["input", iteration], scope, axis=0)  # [batch, INPUT_SIZE]
    from_input = g.node("MatMul", [x_t, weights["w_x"]], f"{scope}/input_proj")
    from_state = g.node("MatMul", [h_prev, weights["w_h"]], f"{scope}/state_proj")
    pre = g.node("Add", [from_input, from_state], scope)
    pre = g.node("Add", [pre, weights["bias"]], scope)
    h = g.node("Tanh", [pre], scope, output="h_next")
    peak = g.node("ReduceMax", [g.node("Abs", [h], f"{scope}/condition")], scope, keepdims=0)
    cond_out = g.node("Less", [peak, weights["limit"]], f"{scope}/condition", output="cond_out")
    scanned = g.node("Identity", [h], scope, output="h_scan")
    state_shape = [BATCH_DIM, HIDDEN]
    return g.make_graph(
        "loop_body",
        [
            helper.make_tensor_value_info(iteration, TensorProto.INT64, []),
            helper.make_tensor_value_info(cond_in, TensorProto.BOOL, []),
            float_input(h_prev, state_shape),
        ],
        [
            helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
            float_input(h, state_shape),
            float_input(scanned, state_shape),
        ],
    )


def build(seed: int = 0) -> onnx.ModelProto:
    """Build h0 = tanh(mean_t(x) @ W0) -> Loop(M = seq) -> Gemm head on the final state."""
    b = GraphBuilder(np.random.default_rng(seed))
    scale_in, scale_h = 1.0 / np.sqrt(INPUT_SIZE), 1.0 / np.sqrt(HIDDEN)
    weights = {
        "w_x": b.initializer("cell.weight_ih_T", b.normal((INPUT_SIZE, HIDDEN), scale_in)),
        "w_h": b.initializer("cell.weight_hh_T", b.normal((HIDDEN, HIDDEN), scale_h)),
        "bias": b.initializer("cell.bias", b.normal((HIDDEN,), 0.1)),
        "limit": b.initializer("cell.continue_limit", np.asarray(CONTINUE_LIMIT, np.float32)),
    }
    w_init = b.initializer("init.weight_T", b.normal((INPUT_SIZE, HIDDEN), scale_in))
    summary = b.node("ReduceMean", ["input"], "/init", axes=[0], keepdims=0)  # [batch, I]
    h0 = b.node("Tanh", [b.node("MatMul", [summary, w_init], "/init")], "/init")
    shape = b.node("Shape", ["input"], "/loop/trip_count")
    index = b.constant("/loop/trip_count", np.asarray(0, dtype=np.int64))
    trip_count = b.node("Gather", [shape, index], "/loop/trip_count", axis=0)
    keep_going = b.constant("/loop", np.asarray(True))
    final_h, _ = b.node_outputs(
        "Loop", [trip_count, keep_going, h0], "/loop",
        outputs=["final_state", "states"], body=_body(b, weights),
    )
    b.gemm_classifier(final_h, "/head", "head", HIDDEN, NUM_CLASSES)
    return b.make_model(
        "loop_model",
        [float_input("input", [SEQ_DIM, BATCH_DIM, INPUT_SIZE])],
        [
            float_input("output", [BATCH_DIM, NUM_CLASSES]),
            float_input("states", [SEQ_DIM, BATCH_DIM, HIDDEN]),
        ],
    )


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal sequences of SAMPLE_SEQ_LEN steps, time-major."""
    rng = np.random.default_rng(seed)
    return {
        "input": rng.standard_normal((SAMPLE_SEQ_LEN, batch, INPUT_SIZE)).astype(np.float32)
    }
