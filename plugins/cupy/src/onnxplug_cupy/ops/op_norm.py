"""Softmax, LogSoftmax, LayerNormalization (ai.onnx and the project's), SkipLayerNormalization,
RMSNormalization, BatchNormalization (inference) and InstanceNormalization.

Statistics are computed in float32 for float16 inputs (as onnxruntime's ``stash_type``).
BatchNormalization with constant parameters folds them, in float64 on the host at session
creation, into one scale and one shift per channel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.codegen.expressions import FUSED_DOMAIN
from onnxplug_cupy.ops._base import FLOAT, CupyKernel, dtypes_in, normalize_axis, same_dtype
from onnxplug_cupy.provider import CupyProvider


def _work(x: Any) -> Any:
    """``x`` in a precision fit for statistics (float16 -> float32)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def softmax(xp: Any, x: Any, axis: int, log: bool) -> Any:
    """(Log)softmax along ``axis``, shifted by the max so nothing overflows."""
    work = _work(x)
    top = xp.max(work, axis=axis, keepdims=True)
    shifted = work - top
    total = xp.sum(xp.exp(shifted), axis=axis, keepdims=True)
    y = shifted - xp.log(total) if log else xp.exp(shifted) / total
    return y.astype(x.dtype, copy=False)


def layer_norm(xp: Any, x: Any, scale: Any, bias: Any, axis: int, epsilon: float) -> tuple[Any, Any, Any]:
    """(Y, mean, 1 / std) over the axes from ``axis`` on; statistics keep their axes (size 1)."""
    work = _work(x)
    axes = tuple(range(axis, x.ndim))
    mean = xp.mean(work, axis=axes, keepdims=True)
    centered = work - mean
    inv = 1.0 / xp.sqrt(xp.mean(centered * centered, axis=axes, keepdims=True) + epsilon)
    y = centered * inv * scale
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False), mean, inv


class _FloatKernel(CupyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT)


@CupyProvider.kernel("Softmax")
@CupyProvider.kernel("LogSoftmax")
class Softmax(_FloatKernel):
    """Opset 13+: along ``axis`` (default -1). Earlier: over the flattened axes from ``axis``
    (default 1) on."""

    def run(self, x: Any) -> Any:
        log = self.node.op_type == "LogSoftmax"
        if self.node.opset < 13:
            axis = normalize_axis(int(self.attr("axis", 1)), x.ndim, self.node) if x.ndim else 0
            rows = x.reshape(math.prod(x.shape[:axis]), -1)
            return softmax(self.xp, rows, 1, log).reshape(x.shape)
        axis = normalize_axis(int(self.attr("axis", -1)), x.ndim, self.node)
        return softmax(self.xp, x, axis, log)


@CupyProvider.kernel("LayerNormalization")
@CupyProvider.kernel("LayerNormalization", domain=FUSED_DOMAIN)
class LayerNormalization(CupyKernel):
    """Y, and the optional Mean and InvStdDev outputs (in their declared dtype)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT, inputs=[0, 1, 2]) if len(node.outputs) == 1 else \
            dtypes_in(view, [*node.inputs, *node.outputs], FLOAT) and \
            view.dtype_of(node.inputs[0]) == view.dtype_of(node.outputs[0])

    def run(self, x: Any, scale: Any, bias: Any = None) -> Any:
        axis = normalize_axis(int(self.attr("axis", -1)), x.ndim, self.node)
        y, mean, inv = layer_norm(self.xp, x, scale, bias, axis, float(self.attr("epsilon", 1e-5)))
        if len(self.node.outputs) == 1:
            return y
        outs = [y]
        for name, value in zip(self.node.outputs[1:], (mean, inv)):
            dtype = self.view.dtype_of(name) if name else None
            outs.append(value.astype(dtype or x.dtype, copy=False) if name else None)
        return tuple(outs)


@CupyProvider.kernel("SkipLayerNormalization", domain=FUSED_DOMAIN)
class SkipLayerNormalization(CupyKernel):
    """LayerNorm over the last axis of x + skip (+ bias); the optional last output is that sum."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        outs = [o for o in node.outputs if o]
        return len(node.outputs) <= 2 and dtypes_in(view, [*node.inputs, *outs], FLOAT) and \
            len({view.dtype_of(n) for n in [*node.inputs, *outs] if n}) == 1

    def run(self, x: Any, skip: Any, gamma: Any, beta: Any = None, bias: Any = None) -> Any:
        total = x + skip
        if bias is not None:
            total = total + bias
        y, _, _ = layer_norm(self.xp, total, gamma, beta, x.ndim - 1, float(self.attr("epsilon", 1e-5)))
        return (y, total) if len(self.node.outputs) > 1 else y


@CupyProvider.kernel("RMSNormalization")
class RMSNormalization(_FloatKernel):
    """x / sqrt(mean(x^2 over the axes from ``axis``) + epsilon) * scale."""

    def run(self, x: Any, scale: Any) -> Any:
        xp = self.xp
        work = _work(x)
        axis = normalize_axis(int(self.attr("axis", -1)), x.ndim, self.node)
        axes = tuple(range(axis, x.ndim))
        inv = 1.0 / xp.sqrt(xp.mean(work * work, axis=axes, keepdims=True) + float(self.attr("epsilon", 1e-5)))
        return (work * inv * scale).astype(x.dtype, copy=False)


@CupyProvider.kernel("BatchNormalization", 9)
class BatchNormalization(CupyKernel):
    """Inference form: y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = bias - mean * a."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if len([o for o in node.outputs if o]) != 1 or node.outputs[0] == "" or int(node.attr("training_mode", 0)):
            return False
        return same_dtype(view, node, FLOAT)

    def setup(self) -> None:
        params = [self.constant(i) for i in range(1, 5)]
        self.folded = None
        if all(p is not None for p in params):
            a, b = self._fold_host(*params)  # type: ignore[arg-type]
            self.folded = (self.backend.to_device(a), self.backend.to_device(b))

    def _fold_host(self, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                   var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dtype = scale.dtype
        a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + float(self.attr("epsilon", 1e-5)))
        b = bias.astype(np.float64) - mean.astype(np.float64) * a
        return a.astype(dtype), b.astype(dtype)

    def run(self, x: Any, scale: Any, bias: Any, mean: Any, var: Any) -> Any:
        xp = self.xp
        if self.folded is not None:
            a, b = self.folded
        else:
            work = scale.astype(np.float64)
            a = work / xp.sqrt(var.astype(np.float64) + float(self.attr("epsilon", 1e-5)))
            b = (bias.astype(np.float64) - mean.astype(np.float64) * a).astype(x.dtype)
            a = a.astype(x.dtype)
        shape = (-1,) + (1,) * (x.ndim - 2)
        return x * a.reshape(shape) + b.reshape(shape)


@CupyProvider.kernel("InstanceNormalization")
class InstanceNormalization(_FloatKernel):
    """Per sample and channel over the spatial axes, then scale[c] and bias[c]."""

    def run(self, x: Any, scale: Any, bias: Any) -> Any:
        xp = self.xp
        work = _work(x)
        axes = tuple(range(2, x.ndim))
        mean = xp.mean(work, axis=axes, keepdims=True)
        centered = work - mean
        inv = 1.0 / xp.sqrt(xp.mean(centered * centered, axis=axes, keepdims=True) + float(self.attr("epsilon", 1e-5)))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return (centered * inv * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype, copy=False)
