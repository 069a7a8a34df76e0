"""BatchNormalization (inference), LayerNormalization, RMSNormalization, Softmax and LogSoftmax."""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import FUSED_DOMAIN, Step
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.kernels import norm as knorm
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, all_present_same
from onnxplug_numba.provider import NumbaProvider
from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS


#: Below this many elements per (image, channel) plane, constant BatchNormalization parameters are
#: expanded over the plane, so the pass walks whole images instead of one short row per channel.
SMALL_PLANE = 64


@NumbaProvider.kernel("BatchNormalization")
class BatchNormalization(NumbaKernel):
    """Inference BatchNormalization as one compiled pass ``x * a[c] + b[c]``, then ``activation``
    (elementwise op types, as a fused BatchNormalization -> Relu group gives), each op rounding as
    its own kernel would."""

    activation: tuple[str, ...] = ()

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._runners: dict[np.dtype, ElementwiseRunner] = {}
        self.epsilon = float(self.attr("epsilon", 1e-5))
        params = [context.constants.get(n) if n else None for n in node.inputs[1:5]]
        # constant parameters (the usual case): the affine form once per kernel, by input dtype
        self._fixed = params if len(params) == 4 and all(p is not None for p in params) else None
        self._affine: dict[np.dtype, tuple[np.ndarray, np.ndarray]] = {}
        self._planes: dict[tuple[np.dtype, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if node.opset < 9:
            return Decline("attribute", f"opset {node.opset} (spatial and the like): from opset 9 only")
        if len(node.outputs) != 1 or node.attr("training_mode", 0):
            return Decline("attribute", "training mode (running mean and variance outputs) is not computed")
        return all_present_same(view, node, FLOAT_TYPES)

    def _affine_form(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                     var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = (scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + self.epsilon))
        b = bias.astype(np.float64) - mean.astype(np.float64) * a
        shape = (-1,) + (1,) * (x.ndim - 2)
        return a.astype(x.dtype).reshape(shape), b.astype(x.dtype).reshape(shape)

    def _runner(self, dtype: np.dtype) -> ElementwiseRunner:
        runner = self._runners.get(dtype)
        if runner is None:
            t = dtype.name
            steps = [Step("Mul", ("x", "a"), "m", t), Step("Add", ("m", "b"), "v0", t)]
            steps += [Step(op, (f"v{i}",), f"v{i + 1}", t) for i, op in enumerate(self.activation)]
            program = Program(("x", "a", "b"), (t, t, t), tuple(steps), (steps[-1].out,))
            runner = self._runners[dtype] = ElementwiseRunner(program, self.threads)
        return runner

    def compute(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
                var: np.ndarray) -> np.ndarray:
        key = x.dtype if self._fixed is not None else None
        found = self._affine.get(key) if key is not None and x.ndim >= 2 else None
        if found is None or found[0].ndim != x.ndim - 1:
            found = self._affine_form(x, scale, bias, mean, var)
            if key is not None:
                self._affine[key] = found  # one assignment: threads see the old or the new entry
        if key is not None and x.ndim > 2 and 0 < math.prod(x.shape[2:]) < SMALL_PLANE:
            plane_key = (x.dtype, x.shape[1:])
            planes = self._planes.get(plane_key)
            if planes is None:
                if len(self._planes) > 16:
                    self._planes.clear()
                planes = tuple(np.ascontiguousarray(np.broadcast_to(p, x.shape[1:])) for p in found)
                self._planes[plane_key] = planes  # type: ignore[assignment]
            found = planes
        return self._runner(x.dtype)(x, found[0], found[1])[0]


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` as (prod(shape[:axis]), prod(shape[axis:])), contiguous."""
    axis = axis if axis >= 0 else axis + x.ndim
    lead = int(math.prod(x.shape[:axis]))
    return np.ascontiguousarray(x).reshape(lead, -1)


class _Softmax(NumbaKernel):
    log = False

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def _rows(self, rows: np.ndarray) -> np.ndarray:
        y = np.empty_like(rows)
        self.threads.run(lambda lo, hi: knorm.softmax(rows[lo:hi], self.log, y[lo:hi]), rows.shape[0],
                         row_grain(rows.shape[1]))
        return y

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 1 if node.opset < 13 else -1))

    def compute(self, x: np.ndarray) -> np.ndarray:
        last = x.ndim - 1
        if self.node.opset >= 13 and (self.axis == -1 or self.axis == last) and last >= 0 \
                and x.flags.c_contiguous and x.size < PARALLEL_MIN_ELEMENTS:
            # the common case, small: rows of the last axis on this thread
            rows = x.reshape(-1, x.shape[-1])
            y = np.empty_like(rows)
            knorm.softmax(rows, self.log, y)
            return y.reshape(x.shape)
        if self.node.opset < 13:  # softmax over the flattened axes from ``axis`` on
            rows = _rows(x, int(self.attr("axis", 1)))
            return self._rows(rows).reshape(x.shape)
        axis = int(self.attr("axis", -1))
        axis = axis + x.ndim if axis < 0 else axis
        moved = np.moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
        rows = _rows(moved, moved.ndim - 1) if moved.ndim else moved.reshape(1, 1)
        y = self._rows(rows).reshape(moved.shape)
        return np.ascontiguousarray(np.moveaxis(y, -1, axis)) if axis != x.ndim - 1 else y


@NumbaProvider.kernel("Softmax")
class Softmax(_Softmax):
    pass


@NumbaProvider.kernel("LogSoftmax")
class LogSoftmax(_Softmax):
    log = True


def flat_param(value: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A scale or bias broadcast to ``shape`` and flattened, contiguous in ``dtype``: the value
    itself (a view) when it already is one, as weights usually are, so no copy per run."""
    if value.shape == shape and value.dtype == dtype and value.flags.c_contiguous:
        return value.reshape(-1)
    return np.ascontiguousarray(np.broadcast_to(value, shape), dtype=dtype).reshape(-1)


@NumbaProvider.kernel("LayerNormalization")
class LayerNormalization(NumbaKernel):
    """Normalises over the axes from ``axis`` on; Mean and InvStdDev outputs when asked."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", -1))
        self.epsilon = float(self.attr("epsilon", 1e-5))
        self.constant = all(n in context.constants for n in node.inputs[1:3] if n)
        self._params: tuple | None = None  # (x dtype, tail shape, scale, bias) of constant parameters
        #: whether the node reads Mean or InvStdDev (else only Y is returned, without their reshapes)
        self.stats = any(node.outputs[1:3])

    def _flat_params(self, x: np.ndarray, tail: tuple, scale: np.ndarray,
                     bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        kept = self._params
        if kept is not None and kept[0] is x.dtype and kept[1] == tail:
            return kept[2], kept[3]
        s = flat_param(scale, tail, x.dtype)
        b = np.zeros_like(s) if bias is None else flat_param(bias, tail, x.dtype)
        if self.constant:
            self._params = (x.dtype, tail, s, b)  # one assignment: threads see the old or the new entry
        return s, b

    def compute(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        rows = _rows(x, axis)
        tail = x.shape[axis:]
        s, b = self._flat_params(x, tail, scale, bias)
        y = np.empty_like(rows)
        mean = np.empty(rows.shape[0], dtype=x.dtype)
        inv = np.empty(rows.shape[0], dtype=x.dtype)
        eps = self.epsilon
        if rows.size < PARALLEL_MIN_ELEMENTS:
            knorm.layer_norm_rows(rows, s, b, eps, y, mean, inv)
        else:
            self.threads.run(lambda lo, hi: knorm.layer_norm_rows(rows[lo:hi], s, b, eps, y[lo:hi], mean[lo:hi],
                                                                  inv[lo:hi]), rows.shape[0], row_grain(rows.shape[1]))
        if not self.stats:
            return y.reshape(x.shape)
        stat_shape = x.shape[:axis] + (1,) * (x.ndim - axis)
        return y.reshape(x.shape), mean.reshape(stat_shape), inv.reshape(stat_shape)


@NumbaProvider.kernel("RMSNormalization")
@NumbaProvider.kernel("RMSNormalization", domain=FUSED_DOMAIN)
class RMSNormalization(NumbaKernel):
    """x / sqrt(mean(x^2 over axes >= axis) + epsilon) * scale (ai.onnx from opset 23; the optimizer's
    com.onnxplug op of the same schema below it)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", -1))
        self.epsilon = float(self.attr("epsilon", 1e-5))

    def compute(self, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        rows = _rows(x, axis)
        s = flat_param(scale, x.shape[axis:], x.dtype)
        y = np.empty_like(rows)
        eps = self.epsilon
        if rows.size < PARALLEL_MIN_ELEMENTS:  # one chunk: no hand-off
            knorm.rms_norm_rows(rows, s, eps, y)
        else:
            self.threads.run(lambda lo, hi: knorm.rms_norm_rows(rows[lo:hi], s, eps, y[lo:hi]), rows.shape[0],
                             row_grain(rows.shape[1]))
        return y.reshape(x.shape)
