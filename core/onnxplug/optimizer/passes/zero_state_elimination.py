"""Zero initial states of RNN, GRU and LSTM dropped: an omitted initial_h or initial_c is zeros.

torch.onnx exports a recurrent layer called without a state as a chain that builds zeros of the
state's shape from the input's (Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape), read as
initial_h (and initial_c). The ops' spec makes an omitted initial state zeros, so the input is
dropped when it is provably zeros of exactly the state's shape and the input's dtype; the chain,
then unread, goes with dead-node elimination. A state whose shape is not proven (unknown or
unnamed dims) stays, so a model with a wrong state still fails as before.
"""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.ir.types import Dim
from onnxplug.optimizer.pass_base import GraphRewritePass, RewriteContext
from onnxplug.optimizer.rewrite import GraphIndex
from onnxplug.options import GraphOptimizationLevel

#: Input positions of the initial states, per op type.
STATE_INPUTS = {"RNN": (5,), "GRU": (5,), "LSTM": (5, 6)}


def state_shape(index: GraphIndex, node: Node) -> tuple[Dim, ...] | None:
    """The shape a state of ``node`` must have, when the input's batch dimension is known or named."""
    x_shape = index.shape_of(node.inputs[0])
    hidden = node.attr("hidden_size", None)
    if x_shape is None or len(x_shape) != 3 or hidden is None:
        return None
    directions = 2 if node.attr("direction", "forward") == "bidirectional" else 1
    layout = node.attr("layout", 0)
    batch = x_shape[0] if layout == 1 else x_shape[1]
    if batch is None:
        return None
    return (batch, directions, int(hidden)) if layout == 1 else (directions, batch, int(hidden))


def _zero_fill(index: GraphIndex, name: str) -> np.ndarray | None:
    """The fill value when ``name`` is all zeros: a zero initializer or a ConstantOfShape of 0."""
    constant = index.constant(name)
    if constant is not None:
        return constant.reshape(-1)[:1] if not np.any(constant) else None
    producer = index.producer_of(name, "ConstantOfShape")
    if producer is None:
        return None
    value = producer.attr("value", None)
    value = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
    return value if value.size == 1 and not np.any(value) else None


def is_zero_state(index: GraphIndex, node: Node, position: int) -> bool:
    """Whether input ``position`` of ``node`` is zeros of the state's shape and the input's dtype."""
    name = node.inputs[position] if position < len(node.inputs) else ""
    if not name or index.is_graph_output(name):
        return False
    fill = _zero_fill(index, name)
    expected = state_shape(index, node)
    return (fill is not None and expected is not None and fill.dtype == index.dtype_of(node.inputs[0])
            and index.shape_of(name) == expected)


class ZeroStateElimination(GraphRewritePass):
    """Drop RNN, GRU and LSTM initial states that are provably zeros of the state's shape."""

    level = GraphOptimizationLevel.ORT_ENABLE_BASIC
    changes = "RNN/GRU/LSTM initial_h and initial_c inputs that are zeros: omitted (the spec's default)"
    order = 14

    def rewrite(self, index: GraphIndex, context: RewriteContext) -> dict[str, int]:
        dropped = 0
        for node in list(index.graph.nodes):
            positions = STATE_INPUTS.get(node.op_type) if node.domain == "" else None
            if not positions:
                continue
            inputs = list(node.inputs)
            for position in positions:
                if is_zero_state(index, node, position):
                    inputs[position] = ""
                    dropped += 1
            if inputs != node.inputs:
                while inputs and not inputs[-1]:  # trailing omitted inputs need no placeholder
                    inputs.pop()
                index.set_inputs(node, inputs)
        return {"dropped": dropped}


PASSES = [ZeroStateElimination]
