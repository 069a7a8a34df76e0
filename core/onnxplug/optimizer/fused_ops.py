"""Helpers of the passes that create fused ops of ``com.onnxplug``: activation parameters, node
construction, constant tests. The schemas themselves (domains, op types, activation defaults) are
in :mod:`onnxplug.fused_schemas`, re-exported here."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug.fused_schemas import (  # noqa: F401  (re-exported)
    ACTIVATION_DEFAULTS,
    BIAS_GELU,
    FUSED_CONV,
    FUSED_GEMM,
    FUSED_MATMUL,
    FUSED_OP_TYPES,
    GELU,
    INVERTED_BOTTLENECK,
    LAYER_NORM,
    MULTI_HEAD_ATTENTION,
    NHWC_DOMAIN,
    OWN_DOMAIN,
    OWN_VERSION,
    RMS_NORM,
    SKIP_LAYER_NORM,
)
from onnxplug.ir import Graph, Node
from onnxplug.optimizer.rewrite import GraphIndex, make_attribute


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
