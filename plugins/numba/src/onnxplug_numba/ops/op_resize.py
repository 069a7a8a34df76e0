"""Resize (opset 11+): every mode, coordinate transform, nearest rounding, antialias and axes.

Tap tables (indices and weights per output position) follow the ONNX specification's
per-axis formulation; the compiled kernel applies one table along one axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node
from onnxplug_sdk.helpers import untyped_reason

from onnxplug_numba.kernels import native_parallel
from onnxplug_numba.kernels.resize import (
    apply_taps,
    gather_planes,
    gather_planes_shared,
    taps_planes,
    taps_planes_shared,
)
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, dtypes_in, row_grain
from onnxplug_numba.provider import NumbaProvider
from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS

_MODES = {"nearest", "linear", "cubic"}
_TRANSFORMS = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize"}
_NEAREST = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}


def _coeffs(mode: str, nearest: str, a: float, antialias: bool, ratio: np.ndarray, scale: float) -> np.ndarray:
    """Weights (positions, taps) for fractional offsets ``ratio`` (1.0 on integer coordinates)."""
    if mode == "nearest":
        whole = ratio == 1.0
        if nearest == "round_prefer_floor":
            second = ratio > 0.5
        elif nearest == "round_prefer_ceil":
            second = ratio >= 0.5
        elif nearest == "floor":
            second = np.zeros_like(ratio, dtype=bool)
        else:
            second = np.ones_like(ratio, dtype=bool)
        second = np.where(whole, True, second)
        return np.stack([~second, second], axis=1).astype(np.float64)
    if mode == "linear" and not antialias:
        return np.stack([1 - ratio, ratio], axis=1)
    if mode == "linear":
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start)[None, :] - ratio[:, None]) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum(axis=1, keepdims=True)
    if not antialias:
        r = ratio[:, None]
        cols = [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1,
                ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a]
        return np.concatenate(cols, axis=1)
    s = min(scale, 1.0)
    start = int(np.floor(-2 / s) + 1)
    x = np.abs(s * (np.arange(start, 2 - start)[None, :] - ratio[:, None]))
    c = np.where(x <= 1, (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1,
                 np.where(x < 2, a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a, 0.0))
    return c / c.sum(axis=1, keepdims=True)


def _source_coords(transform: str, out_len: int, scale: float, in_len: int,
                   roi: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray | None]:
    y = np.arange(out_len, dtype=np.float64)
    out_width = scale * in_len
    outside = None
    if transform == "align_corners":
        x = np.zeros(out_len) if out_width == 1 else y * (in_len - 1) / (out_width - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_crop_and_resize":
        lo, hi = roi if roi is not None else (0.0, 1.0)
        x = np.full(out_len, (hi - lo) * (in_len - 1) / 2) if out_width == 1 else \
            y * (hi - lo) * (in_len - 1) / (out_width - 1)
        x = x + lo * (in_len - 1)
        outside = (x < 0) | (x > in_len - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(out_len, -0.5) if out_width == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_len / 2 * (1 - out_len / out_width)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def tap_table(mode: str, nearest: str, a: float, antialias: bool, exclude_outside: bool, transform: str,
              in_len: int, out_len: int, scale: float, roi: tuple[float, float] | None):  # type: ignore[no-untyped-def]
    """(index (out, taps) int64, weight (out, taps) float64, outside mask or None) for one axis."""
    x, outside = _source_coords(transform, out_len, scale, in_len, roi)
    floor = np.floor(x)
    ratio = np.where(x == floor, 1.0, x - floor)
    weight = _coeffs(mode, nearest, a, antialias, ratio, scale)
    n = weight.shape[1]
    pad = int(np.ceil(n / 2))
    xp = x + pad
    p = np.floor(xp).astype(np.int64)
    frac = xp - p
    if n % 2 == 0:
        offset = np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        base = -((n - 1) // 2)
        offset = np.where(frac <= 0.5, base, base + 1)
    index = (p + offset)[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        weight = np.where((index < 0) | (index >= in_len), 0.0, weight)
        total = weight.sum(axis=1, keepdims=True)
        weight = weight / np.where(total == 0, 1.0, total)
    return np.ascontiguousarray(np.clip(index, 0, in_len - 1)), np.ascontiguousarray(weight), outside


@NumbaProvider.kernel("Resize", 11)
class Resize(NumbaKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._plans: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if node.attr("mode", "nearest") not in _MODES or \
                node.attr("coordinate_transformation_mode", "half_pixel") not in _TRANSFORMS or \
                node.attr("nearest_mode", "round_prefer_floor") not in _NEAREST or \
                node.attr("keep_aspect_ratio_policy", "stretch") not in ("stretch", "not_larger", "not_smaller"):
            return Decline("attribute", "its mode, coordinate_transformation_mode, nearest_mode or "
                                        "keep_aspect_ratio_policy is not one computed here")
        if dtypes_in(view, [node.inputs[0], node.outputs[0]], FLOAT_TYPES) and view.dtype_of(
                node.inputs[0]) == view.dtype_of(node.outputs[0]):
            return True
        untyped = next((n for n in (node.inputs[0], node.outputs[0]) if view.dtype_of(n) is None), None)
        if untyped is not None:
            return Decline("dtype", untyped_reason(view, untyped))
        return Decline("dtype", f"input {view.dtype_of(node.inputs[0])} and output {view.dtype_of(node.outputs[0])}: "
                                "the same of float32 or float64 only")

    def _targets(self, x: np.ndarray, scales: np.ndarray | None, sizes: np.ndarray | None,
                 axes: list[int]) -> tuple[list[float], list[int]]:
        r = x.ndim
        if sizes is not None and sizes.size:
            size = [x.shape[i] for i in range(r)]
            for i, d in enumerate(axes):
                size[d] = int(sizes.reshape(-1)[i])
            scale = [size[i] / x.shape[i] for i in range(r)]
            policy = self.attr("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                s = pick(scale[d] for d in axes)
                scale = [s if i in axes else 1.0 for i in range(r)]
                size = [int(s * x.shape[i] + 0.5) if i in axes else x.shape[i] for i in range(r)]
            return scale, size
        scale = [1.0] * r
        for i, d in enumerate(axes):
            scale[d] = float(scales.reshape(-1)[i])  # type: ignore[union-attr]
        size = [int(np.floor(scale[i] * x.shape[i])) for i in range(r)]
        return scale, size

    def _plan(self, x: np.ndarray, roi: np.ndarray | None, scales: np.ndarray | None,
              sizes: np.ndarray | None) -> tuple[Any, ...]:
        """The tap tables of every resized axis for this call's shapes and parameters."""
        r = x.ndim
        raw_axes = self.attr("axes")
        axes = [int(a) + r if int(a) < 0 else int(a) for a in raw_axes] if raw_axes is not None else list(range(r))
        scale, size = self._targets(x, scales, sizes, axes)
        roi_full = None
        if roi is not None and roi.size:
            flat = roi.reshape(-1).astype(np.float64)
            roi_full = [0.0] * r + [1.0] * r
            for i, d in enumerate(axes):
                roi_full[d], roi_full[r + d] = flat[i], flat[len(axes) + i]
        mode = self.attr("mode", "nearest")
        transform = self.attr("coordinate_transformation_mode", "half_pixel")
        shape = list(x.shape)
        steps = []
        for axis in axes:
            axis_roi = None if roi_full is None else (roi_full[axis], roi_full[axis + r])
            if np.isclose(scale[axis], 1.0) and size[axis] == shape[axis] and (
                    axis_roi is None or (np.isclose(axis_roi[0], 0.0) and np.isclose(axis_roi[1], 1.0))):
                continue
            index, weight, outside = tap_table(
                mode, self.attr("nearest_mode", "round_prefer_floor"), float(self.attr("cubic_coeff_a", -0.75)),
                bool(self.attr("antialias", 0)), bool(self.attr("exclude_outside", 0)), transform,
                shape[axis], size[axis], scale[axis], axis_roi)
            steps.append((axis, tuple(shape), index, weight, outside if outside is not None and outside.any()
                          else None))
            shape[axis] = size[axis]
        return _planes_plan(steps, x.ndim, tuple(shape)) or ("axes", steps)

    def compute(self, x: np.ndarray, roi: np.ndarray | None = None, scales: np.ndarray | None = None,
                sizes: np.ndarray | None = None) -> np.ndarray:
        key = (x.shape, x.dtype.char) + tuple(None if v is None else (v.dtype.char, v.tobytes())
                                              for v in (roi, scales, sizes))
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 64:
                self._plans.clear()
            plan = self._plans[key] = self._plan(x, roi, scales, sizes)
        if plan[0] == "planes":
            return self._planes(x, plan)
        out = x
        for axis, shape, index, weight, outside in plan[1]:
            outer = int(math.prod(shape[:axis]))
            inner = int(math.prod(shape[axis + 1:]))
            out_len = index.shape[0]
            y = np.empty((outer, out_len, inner), dtype=x.dtype)
            if y.size:
                src = np.ascontiguousarray(out).reshape(outer, shape[axis], inner)
                self.threads.run(lambda lo, hi: apply_taps(src[lo:hi], index, weight, y[lo:hi]), outer,
                                 row_grain(out_len * inner * weight.shape[1]))
            if outside is not None:
                y[:, outside, :] = self.attr("extrapolation_value", 0.0)
            out = y.reshape(shape[:axis] + (out_len,) + shape[axis + 1:])
        return out  # no axis resized: the input itself, as Identity

    def _planes(self, x: np.ndarray, plan: tuple[Any, ...]) -> np.ndarray:
        _, out_shape, gather, ih, wh, iw, ww = plan
        planes = int(math.prod(x.shape[:-2]))
        src = np.ascontiguousarray(x).reshape(planes, x.shape[-2], x.shape[-1])
        y = np.empty((planes,) + out_shape[-2:], dtype=x.dtype)
        if y.size:
            work = y.size * (1 if gather else wh.shape[1] + ww.shape[1])
            parts = min(self.threads.count, planes, work // PARALLEL_MIN_ELEMENTS) \
                if self.threads.parallel and native_parallel.PRANGE_AVAILABLE else 1
            if gather:
                if parts >= 2:
                    gather_planes_shared(native_parallel.use_threads(parts), src, ih, iw, y)
                else:
                    gather_planes(src, ih, iw, y, 0, planes)
            elif parts >= 2:
                taps_planes_shared(native_parallel.use_threads(parts), src, ih, wh, iw, ww, y)
            else:
                taps_planes(src, ih, wh, iw, ww, y, 0, planes)
        return y.reshape(out_shape)


def _one_hot(index: np.ndarray, weight: np.ndarray) -> np.ndarray | None:
    """The single source index per output position when every row of weights is one 1 and zeros."""
    ones = weight == 1.0
    if not ((ones.sum(axis=1) == 1) & ((ones | (weight == 0.0)).all(axis=1))).all():
        return None
    return np.ascontiguousarray(index[np.arange(index.shape[0]), ones.argmax(axis=1)])


def _planes_plan(steps: list[tuple[Any, ...]], rank: int, out_shape: tuple[int, ...]) -> tuple[Any, ...] | None:
    """A plan over (planes, H, W) when only the two innermost axes are resized, H before W, with
    nothing extrapolated; None otherwise."""
    if rank < 2 or not steps or any(s[4] is not None for s in steps) or \
            [s[0] for s in steps] not in ([rank - 2, rank - 1], [rank - 2], [rank - 1]):
        return None
    tables = {s[0]: (s[2], s[3]) for s in steps}
    identity = {rank - 2: steps[0][1][rank - 2], rank - 1: steps[0][1][rank - 1]}
    for axis, n in identity.items():
        if axis not in tables:
            tables[axis] = (np.arange(n, dtype=np.int64)[:, None], np.ones((n, 1)))
    (ih, wh), (iw, ww) = tables[rank - 2], tables[rank - 1]
    gh, gw = _one_hot(ih, wh), _one_hot(iw, ww)
    if gh is not None and gw is not None:
        return ("planes", out_shape, True, gh, None, gw, None)
    return ("planes", out_shape, False, ih, wh, np.ascontiguousarray(iw.T.astype(np.int32)), np.ascontiguousarray(ww.T))
