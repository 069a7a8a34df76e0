"""The activations com.onnxplug FusedConv / FusedGemm / FusedMatMul apply (no op registered here)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from onnxplug.ir import Node

#: Activation names the fused kernels accept.
ACTIVATIONS = frozenset({"", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid"})


#: numpy's clip ufunc, called directly: ``np.clip`` reaches it through three Python-level wrappers.
_CLIP = getattr(getattr(getattr(np, "_core", None), "umath", None), "clip", None) or np.clip
_BOUNDS: dict[tuple[np.dtype, tuple[float, ...]], tuple[np.generic, np.generic]] = {}


def _clip_bounds(dtype: np.dtype, params: tuple[float, ...]) -> tuple[np.generic, np.generic]:
    """Clip's (low, high) as scalars of ``dtype``, missing or infinite bounds at its finite range."""
    key = (dtype, params)
    bounds = _BOUNDS.get(key)
    if bounds is None:
        low = params[0] if len(params) > 0 else -np.inf
        high = params[1] if len(params) > 1 else np.inf
        info = np.finfo(dtype)
        bounds = _BOUNDS[key] = (dtype.type(max(low, float(info.min))), dtype.type(min(high, float(info.max))))
    return bounds


def clip_in_place(y: np.ndarray, params: tuple[float, ...]) -> np.ndarray:
    """Clip with ``params`` (low[, high]) applied to the writable ``y`` in place."""
    low, high = _clip_bounds(y.dtype, params)
    return _CLIP(y, low, high, out=y)


def apply_activation(y: np.ndarray, name: str, params: Sequence[float]) -> np.ndarray:
    """Apply the activation to ``y``, in place when ``y`` is writable; keeps the dtype."""
    if not y.flags.writeable:
        y = y.copy()
    if not name:
        return y
    if name == "Relu":
        return np.maximum(y, 0, out=y)
    if name == "Clip":
        return clip_in_place(y, tuple(params[:2]))
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


def in_place_activation(name: str, params: Sequence[float]) -> Callable[[np.ndarray], np.ndarray]:
    """``apply_activation`` for a fixed activation, for results the kernel made itself (writable):
    the common ones bound to their ufunc once, instead of dispatching by name on every call (a Loop
    body's FusedGemm runs thousands of times)."""
    if not name:
        return _unchanged
    if name == "Tanh":
        return _tanh_in_place
    if name == "Clip":
        bounds = tuple(params[:2])
        return lambda y: clip_in_place(y, bounds)
    return lambda y: apply_activation(y, name, params)


def _unchanged(y: np.ndarray) -> np.ndarray:
    return y


def _tanh_in_place(y: np.ndarray) -> np.ndarray:
    return np.tanh(y, y)


def activation_of(kernel) -> tuple[str, list[float]]:
    """A fused kernel's (activation name, parameters), read once when the kernel is made."""
    return kernel.attr("activation", ""), list(kernel.attr("activation_params", []) or [])


def activation_supported(node: Node) -> bool:
    """Whether a fused node names an activation these kernels implement."""
    return node.attr("activation", "") in ACTIVATIONS
