"""BatchNormalization -> Relu, run as one pass: ``max(x * a[c] + b[c], 0)`` with the affine form
of constant parameters, instead of a BatchNormalization pass and a Relu pass over the tensor (a
BatchNormalization after a Concat, as DenseNet's, cannot fold into a conv). Each op rounds as its
own kernel would, so the result equals the two kernels' bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import FusedSubgraph, GraphView, KernelContext, Node

from onnxplug_numba.fusion.conv_groups import _constant, _sole_reader
from onnxplug_numba.ops.op_norm import BatchNormalization

#: Activations that may follow the normalisation in the same pass (single-input, no attributes).
ACTIVATIONS = ("Relu",)


def find_bn_activation(view: GraphView) -> list[list[Node]]:
    """(BatchNormalization, activation) pairs: inference BatchNormalization with constant
    parameters whose sole reader is an activation of the same dtype."""
    offered = {id(n) for n in view.nodes}
    pairs = []
    for node in view.nodes:
        if node.op_type != "BatchNormalization" or node.domain not in ("", "ai.onnx") or \
                not BatchNormalization.supports(node, view) or len(node.inputs) != 5 or \
                any(_constant(view, n) is None for n in node.inputs[1:]):
            continue
        act = _sole_reader(view, offered, node)
        if act is None or act.op_type not in ACTIVATIONS or len(act.outputs) != 1 or \
                view.dtype_of(act.outputs[0]) != view.dtype_of(node.outputs[0]):
            continue
        pairs.append([node, act])
        offered -= {id(node), id(act)}
    return pairs


class BatchNormActivationKernel(BatchNormalization):
    """The BatchNormalization kernel with the pair's activation in its pass."""

    def __init__(self, subgraph: FusedSubgraph, context: KernelContext) -> None:
        norm, act = subgraph.nodes
        self.activation = (act.op_type,)
        super().__init__(norm, context)
        if self._fixed is None:
            self._fixed = [_constant(subgraph.view, n) for n in norm.inputs[1:5]]
        self.positions = [subgraph.inputs.index(n) for n in norm.inputs]

    def compute(self, *inputs: Any) -> np.ndarray:  # type: ignore[override]
        return super().compute(*[inputs[i] for i in self.positions])
