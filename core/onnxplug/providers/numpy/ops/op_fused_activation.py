"""The activations com.onnxplug FusedConv / FusedGemm / FusedMatMul apply (no op registered here)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.ir import Node

#: Activation names the fused kernels accept.
ACTIVATIONS = frozenset({"", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"})


def apply_activation(y: np.ndarray, name: str, params: Sequence[float]) -> np.ndarray:
    """Apply the activation to ``y``, in place when ``y`` is writable; keeps the dtype."""
    if not y.flags.writeable:
        y = y.copy()
    if not name:
        return y
    if name == "Relu":
        return np.maximum(y, 0, out=y)
    if name == "Clip":
        low = params[0] if len(params) > 0 else -np.inf
        high = params[1] if len(params) > 1 else np.inf
        return np.clip(y, y.dtype.type(max(low, np.finfo(y.dtype).min)),
                       y.dtype.type(min(high, np.finfo(y.dtype).max)), out=y)
    if name == "LeakyRelu":
        alpha = y.dtype.type(params[0] if params else 0.01)
        return np.where(y < 0, y * alpha, y).astype(y.dtype, copy=False)
    if name == "Tanh":
        return np.tanh(y, out=y)
    with np.errstate(over="ignore"):
        if name == "Sigmoid":
            np.negative(y, out=y)
            np.exp(y, out=y)
            y += 1
            return np.reciprocal(y, out=y)
        if name == "HardSigmoid":
            alpha = params[0] if params else 0.2
            beta = params[1] if len(params) > 1 else 0.5
            y *= y.dtype.type(alpha)
            y += y.dtype.type(beta)
            return np.clip(y, 0, 1, out=y)
    raise ValueError(f"unknown fused activation {name!r}")


def activation_of(kernel) -> tuple[str, list[float]]:
    """A fused kernel's (activation name, parameters), read once when the kernel is made."""
    return kernel.attr("activation", ""), list(kernel.attr("activation_params", []) or [])


def activation_supported(node: Node) -> bool:
    """Whether a fused node names an activation these kernels implement."""
    return node.attr("activation", "") in ACTIVATIONS
