"""The fused ops the optimizer creates, in the project's domain ``com.onnxplug`` (version 1).

docs/fused-ops.md documents each schema; the names and attributes here are stable, since
providers (numpy, numba, ...) register kernels for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug.ir import Graph, Node
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute

#: The project's domain and its one version.
OWN_DOMAIN = "com.onnxplug"
OWN_VERSION = 1
#: Domain of ops rewritten to channels-last layout for a provider that asked (same op types).
NHWC_DOMAIN = "com.onnxplug.nhwc"

FUSED_CONV = "FusedConv"
FUSED_GEMM = "FusedGemm"
FUSED_MATMUL = "FusedMatMul"
GELU = "Gelu"
BIAS_GELU = "BiasGelu"
LAYER_NORM = "LayerNormalization"
SKIP_LAYER_NORM = "SkipLayerNormalization"
MULTI_HEAD_ATTENTION = "MultiHeadAttention"
#: Of ``com.onnxplug.nhwc`` only: an expansion, depthwise and projection chain (channels-last).
INVERTED_BOTTLENECK = "InvertedBottleneck"

#: Every op of ``com.onnxplug`` the built-in passes create.
FUSED_OP_TYPES = (FUSED_CONV, FUSED_GEMM, FUSED_MATMUL, GELU, BIAS_GELU, LAYER_NORM,
                  SKIP_LAYER_NORM, MULTI_HEAD_ATTENTION)

#: Activations FusedConv / FusedGemm / FusedMatMul accept, with their parameter defaults.
ACTIVATION_DEFAULTS: dict[str, tuple[float, ...]] = {
    "Relu": (),
    "Sigmoid": (),
    "Tanh": (),
    "LeakyRelu": (0.01,),
    "HardSigmoid": (0.2, 0.5),
    "Clip": (float("-inf"), float("inf")),
}


def activation_params(index: GraphIndex, node: Node) -> list[float] | None:
    """``activation_params`` for a fusable activation node, or None when it cannot be fused.

    Clip qualifies when its bounds are constants (inputs from opset 11, attributes before).
    """
    if node.domain != "" or node.op_type not in ACTIVATION_DEFAULTS:
        return None
    if node.op_type == "LeakyRelu":
        return [float(node.attr("alpha", 0.01))]
    if node.op_type == "HardSigmoid":
        return [float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))]
    if node.op_type == "Clip":
        if node.opset < 11:
            return [float(node.attr("min", float("-inf"))), float(node.attr("max", float("inf")))]
        bounds = []
        for position, default in ((1, float("-inf")), (2, float("inf"))):
            name = node.inputs[position] if len(node.inputs) > position else ""
            if not name:
                bounds.append(default)
                continue
            value = index.constant(name)
            if value is None or value.size != 1:
                return None
            bounds.append(float(value.reshape(())))
        return bounds
    return []


def ensure_domain(graph: Graph, domain: str = OWN_DOMAIN) -> None:
    """Import ``domain`` in the model. The loader gives every graph the model's opset dict; the
    main graph's is updated too in case a subgraph was built with a copy."""
    graph.opsets.setdefault(domain, OWN_VERSION)
    while graph.parent is not None:
        graph = graph.parent
    graph.opsets.setdefault(domain, OWN_VERSION)


def fused_node(op_type: str, inputs: list[str], outputs: list[str], name: str,
               attributes: dict[str, Any] | None = None, domain: str = OWN_DOMAIN) -> Node:
    """A node of the project's domain (opset 1) with python-valued attributes."""
    attrs = {k: make_attribute(v) for k, v in (attributes or {}).items() if v is not None}
    return Node(op_type=op_type, inputs=list(inputs), outputs=list(outputs), name=name, domain=domain,
                attributes=attrs, opset=OWN_VERSION)


def scalar_of(index: GraphIndex, name: str) -> float | None:
    """The value of a one-element floating or integer constant, else None."""
    value = index.constant(name)
    if value is None or value.size != 1 or value.dtype.kind not in "fiu":
        return None
    return float(np.asarray(value, dtype=np.float64).reshape(()))


def near(value: float | None, target: float, rtol: float = 1e-3) -> bool:
    """Whether a constant is ``target`` to ``rtol`` (exporters round their literals)."""
    return value is not None and abs(value - target) <= rtol * abs(target)
