"""ConvInteger and QLinearConv (ai.onnx, and com.microsoft's with ``channels_last``) on 8-bit
input and weights, 1-D or 2-D, any group, pads, strides, dilations and auto_pad, compiled
(kernels/int_conv.py): exact int32 sums, then int32 out or the numpy provider's requantization.

The weights' layout (packed int8 for VNNI, or centered int16), their zero points and QLinearConv's
int32 bias are kept while W, its zero point and B are constant initializers. A call plan per input
shape (geometry, buffer shapes, the multipliers ``x_scale * w_scale / y_scale`` in float32 and in
that order, as the numpy provider's ai_onnx/op_qlinear_conv) is kept while the inputs other than X
and x_zero_point are the same constants: a call is a few allocations and one compiled call. Convs
from ``SHARE_MIN_MACS`` split their (image, pixel band) items over the session's threads; without
VNNI, only convs of narrow groups are claimed (``LEAVE_WITHOUT_VNNI``).
"""

from __future__ import annotations

import math
import operator

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node, output_size

from onnxplug_numba.kernels import int_conv as kic
from onnxplug_numba.kernels import vnni
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.ops._conv import ConvSpec
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel

_EIGHT_BIT = frozenset({np.dtype(np.uint8), np.dtype(np.int8)})
_RANGES = {np.dtype(np.uint8): (np.float32(0), np.float32(255)), np.dtype(np.int8): (np.float32(-128), np.float32(127))}
_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)

#: Whether to use AVX-512 VNNI where the CPU has it (tests turn it off to check the other kernel).
USE_VNNI = True
#: Fewer output channels per group than this take the int16 kernel: VNNI computes 16 at a time.
VNNI_MIN_CHANNELS = 8
#: Without VNNI, convs with VNNI_MIN_CHANNELS or more output channels per group are left to the
#: numpy provider, whose exact float BLAS products outrun the int16 dot products on big convs.
LEAVE_WITHOUT_VNNI = not vnni.AVAILABLE
#: Output pixels per work item (bounds the im2col rows and int32 sums kept at once).
BAND = 128
#: Convs with fewer multiply-adds run on the calling thread: a hand-off to the pool costs thread
#: wake-ups and GIL hand-offs (as for float convs, ops/_conv.py) while VNNI sums are cheap next to
#: float ones: ddddocr's convs (up to 42M) ran no faster shared on two threads.
SHARE_MIN_MACS = 128_000_000


def _check(node: Node, view: GraphView, x: int, w: int) -> Decline | None:
    for i in (x, w):
        if view.dtype_of(node.inputs[i]) not in _EIGHT_BIT:
            return Decline("dtype", f"{node.inputs[i]!r} is {view.dtype_of(node.inputs[i])}, not uint8 or int8")
    # X's rank, else W's (a contrib op's output may have no inferred shape), else kernel_shape's
    ranks = [len(t.shape) for t in (view.type_of(node.inputs[x]), view.type_of(node.inputs[w]))
             if t is not None and t.shape is not None]
    if node.attr("kernel_shape"):
        ranks.append(len(node.attr("kernel_shape")) + 2)
    if not ranks or ranks[0] not in (3, 4):
        return Decline("shape", f"input {node.inputs[x]!r} is not known to be 1-D or 2-D images (rank 3 or 4)")
    if LEAVE_WITHOUT_VNNI:
        t = view.type_of(node.inputs[w])
        m = t.shape[0] if t is not None and t.shape else None
        if not isinstance(m, int) or m // max(1, int(node.attr("group", 1) or 1)) >= VNNI_MIN_CHANNELS:
            return Decline("device", "the CPU has no AVX-512 VNNI: the numpy provider's float products are faster")
    return None


def _padded_channels(cg: int, group: int) -> int:
    """Channels per group in the padded image and the weights: one group's rounded up to a
    multiple of 4 (copied as 32-bit words; the extra channels hold the zero point, which adds
    nothing), several groups' as they are."""
    return -(-cg // 4) * 4 if group == 1 else cg


class _IntegerConv(NumbaKernel):
    """The shared engine: a call plan per input shape (weights, geometry, requantization), run by
    ``_execute``."""

    def __init__(self, node: Node, context: KernelContext, plan_inputs: tuple[int, ...],
                 weight_inputs: tuple[int, ...]) -> None:
        super().__init__(node, context)

        def constant(indices: tuple[int, ...]) -> bool:
            return all(i >= len(node.inputs) or not node.inputs[i] or node.inputs[i] in context.constants
                       for i in indices)

        #: the inputs a call plan depends on (all but X and x_zero_point) are constant initializers
        self.constant = constant(plan_inputs)
        #: W, its zero point and B are (the weights' layout is kept)
        self.constant_weights = constant(weight_inputs)
        self._specs: dict[int, ConvSpec] = {}
        self._geometry: dict[tuple, tuple] = {}
        self._kept: tuple | None = None
        self._plans: dict[tuple, tuple] = {}

    def _spec(self, rank: int) -> ConvSpec:
        spec = self._specs.get(rank)
        if spec is None:
            spec = self._specs[rank] = ConvSpec.from_node(self.node, rank)
        return spec

    def _geo(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> tuple:
        """(geometry vector, output shape, work items, multiply-adds, channels per group as laid
        out) for these shapes."""
        key = (x_shape, w_shape)
        found = self._geometry.get(key)
        if found is not None:
            return found
        if len(w_shape) != len(x_shape) or len(x_shape) not in (3, 4):
            raise ValueError(f"{self.node.describe()}: computes 1-D or 2-D convs; got X {list(x_shape)}, "
                             f"W {list(w_shape)}")
        spec = self._spec(len(x_shape) - 2)
        begin, end = spec.pads_for(x_shape[2:], w_shape[2:])
        strides, dilations = spec.strides, spec.dilations
        spatial, kernel = x_shape[2:], w_shape[2:]
        if len(x_shape) == 3:  # 1-D as 2-D of height 1
            strides, dilations, begin, end = (1, *strides), (1, *dilations), (0, *begin), (0, *end)
            spatial, kernel = (1, *spatial), (1, *kernel)
        n, c = x_shape[:2]
        m, cg = w_shape[:2]
        group = spec.group
        if cg * group != c or m % group:
            raise ValueError(f"{self.node.describe()}: input has {c} channels, W {list(w_shape)} with group "
                             f"{group} expects {cg * group}")
        cg = _padded_channels(cg, group)
        oh, ow = (output_size(spatial[a], kernel[a], strides[a], dilations[a], begin[a], end[a]) for a in (0, 1))
        if oh <= 0 or ow <= 0:
            raise ValueError(f"{self.node.describe()}: the window {list(w_shape[2:])} is larger than the padded "
                             f"input {list(x_shape[2:])}")
        if min(begin) < 0 or min(end) < 0:
            raise ValueError(f"{self.node.describe()}: negative pads {[*begin, *end]} are not computed")
        pixels = oh * ow
        band = min(BAND, pixels)
        bands = -(-pixels // band)
        # the padded image reaches every tap of every output pixel
        hp, wp = (max(spatial[a] + begin[a], (size - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1)
                  for a, size in ((0, oh), (1, ow)))
        geo = np.array([c, *spatial, group, cg, m // group, *kernel, *strides, *dilations, begin[0], begin[1],
                        oh, ow, band, bands, hp, wp], dtype=np.int64)
        out_shape = (n, m, ow) if len(x_shape) == 3 else (n, m, oh, ow)
        found = self._geometry[key] = (geo, out_shape, n * bands, n * m * pixels * cg * math.prod(kernel), cg)
        return found

    def _weights(self, w: np.ndarray, w_zero_point: np.ndarray | None, b: np.ndarray | None) -> tuple:
        """(VNNI or not, the kernel's weight arrays: packed, column sums and zero points (M,) int32,
        or centered int16, and the bias (M,) int64)."""
        kept = self._kept
        if kept is not None and kept[0] is w and kept[1] is w_zero_point and kept[2] is b:
            return kept[3]
        m = w.shape[0]
        group = self._spec(w.ndim - 2).group
        if m % group:
            raise ValueError(f"{self.node.describe()}: {m} output channels do not split into {group} groups")
        zp = np.zeros(m, np.int64) if w_zero_point is None else np.asarray(w_zero_point).astype(np.int64).reshape(-1)
        if zp.size == 1:
            zp = np.full(m, zp[0], np.int64)
        elif zp.size != m:
            raise ValueError(f"{self.node.describe()}: w_zero_point must be one value or one per output channel "
                             f"({m}), got shape {list(np.shape(w_zero_point))}")
        bias = np.zeros(m, np.int64) if b is None else np.asarray(b).astype(np.int64).reshape(-1)
        if bias.size != m:
            raise ValueError(f"{self.node.describe()}: B must have {m} values, got shape {list(b.shape)}")
        mg = m // group
        w4 = w[:, :, None, :] if w.ndim == 3 else w
        cp = _padded_channels(w4.shape[1], group)
        if cp != w4.shape[1]:  # channels padded with the zero point: centered, they are zeros
            padded = np.empty((m, cp, *w4.shape[2:]), dtype=w.dtype)
            padded[:, :w4.shape[1]] = w4
            padded[:, w4.shape[1]:] = zp.astype(w.dtype)[:, None, None, None]
            w4 = padded
        mat = w4.transpose(0, 2, 3, 1).reshape(group, mg, -1)  # (group, M/group, K) in (tap, channel) order
        if USE_VNNI and vnni.AVAILABLE and mg >= VNNI_MIN_CHANNELS:
            shift = 128 if w.dtype == np.uint8 else 0
            signed = (mat.astype(np.int16) - shift).astype(np.int8)
            # the narrowest packing that pads the channels least (16 channels need not take 64 lanes)
            columns = min((64, 32, 16), key=lambda c: -(-mg // c) * c)
            parts = [vnni.pack(np.ascontiguousarray(signed[g].T), columns) for g in range(group)]
            packed = np.ascontiguousarray(np.stack([p for p, _ in parts]))
            colsum = np.ascontiguousarray(np.stack([s for _, s in parts]))
            prepared = (True, (packed, colsum, (zp - shift).astype(np.int32)), bias)
        else:
            centered = np.ascontiguousarray(mat.astype(np.int16) - zp.reshape(group, mg, 1).astype(np.int16))
            prepared = (False, (centered,), bias)
        if self.constant_weights:
            self._kept = (w, w_zero_point, b, prepared)  # one assignment: threads see the old or the new entry
        return prepared

    def _plan(self, x: np.ndarray, params: tuple, build) -> tuple:  # type: ignore[no-untyped-def]
        """The call plan for X's shape and type from ``build(x)``, kept while ``params`` (the
        inputs other than X and x_zero_point) are the same constant arrays."""
        key = (x.shape, x.dtype)
        entry = self._plans.get(key)
        if entry is not None and all(map(operator.is_, entry[0], params)):
            return entry[1]
        plan = build(x)
        if self.constant:
            self._plans[key] = (params, plan)
        return plan

    def _make_plan(self, x: np.ndarray, w: np.ndarray, prepared: tuple, requant: bool, mult: np.ndarray,
                   zp: np.float32, lo: np.float32, hi: np.float32, out_dtype: np.dtype) -> tuple:
        """(kernel, flip, its middle arguments, shapes of X as 4-D, the padded image, Y and Y as
        (N, M, pixels), Y's type, work items, whether to share them)."""
        geo, out_shape, items, macs, cp = self._geo(x.shape, w.shape)
        use_vnni, weights, bias = prepared
        n = out_shape[0]
        c, h, wd, hp, wp = (int(geo[i]) for i in (kic.G_C, kic.G_H, kic.G_W, kic.G_HP, kic.G_WP))
        fn = kic.conv_vnni if use_vnni else kic.conv_int16
        flip = 128 if x.dtype == np.int8 else 0  # int8 as uint8 shifted by 128: VNNI's left operand is unsigned
        xp_shape = (n, hp, wp, cp * int(geo[kic.G_GROUP]))
        return (fn, flip, (*weights, bias, geo, requant, mult, zp, lo, hi), (n, c, h, wd), xp_shape, out_shape,
                (n, out_shape[1], -1), out_dtype, items, macs >= SHARE_MIN_MACS and self.threads.parallel)

    def _execute(self, x: np.ndarray, x_zero_point: np.ndarray | None, plan: tuple) -> np.ndarray:
        fn, flip, mid, x4_shape, xp_shape, out_shape, y3_shape, out_dtype, items, share = plan
        if x_zero_point is None:
            zq = 0
        elif x_zero_point.size == 1:
            zq = x_zero_point.item()
        else:
            raise ValueError(f"{self.node.describe()}: x_zero_point must be one value, got shape "
                             f"{list(x_zero_point.shape)}")
        x4 = np.ascontiguousarray(x).reshape(x4_shape)
        if flip:
            x4, zq = x4.view(np.uint8), zq + flip
        xp = np.empty(xp_shape, dtype=np.uint8)
        y = np.empty(out_shape, dtype=out_dtype)
        y3 = y.reshape(y3_shape)
        if share:
            fn(x4, xp, True, flip, zq, *mid, y3, 0, 0)  # the padded image first, then the items shared
            self.threads.run(lambda lo, hi: fn(x4, xp, False, flip, zq, *mid, y3, lo, hi), items, 1)
        elif items:
            fn(x4, xp, True, flip, zq, *mid, y3, 0, items)
        return y


@op("ConvInteger", 10)
class ConvInteger(_IntegerConv):
    """Conv of ``x - x_zero_point`` and ``w - w_zero_point`` (per tensor or per output channel), int32."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _check(node, view, 0, 1)
        return True if found is None else found

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context, (1, 3), (1, 3))

    def compute(self, x, w, x_zero_point=None, w_zero_point=None):  # type: ignore[no-untyped-def]
        def build(x: np.ndarray) -> tuple:
            prepared = self._weights(w, w_zero_point, None)
            z = np.float32(0)
            return self._make_plan(x, w, prepared, False, np.zeros(w.shape[0], np.float32), z, z, z, _I32)

        return self._execute(x, x_zero_point, self._plan(x, (w, w_zero_point), build))


@op("QLinearConv", 10)
class QLinearConv(_IntegerConv):
    """Exact integer conv (+ int32 bias), requantized with ``x_scale * w_scale / y_scale`` (per
    tensor or per output channel) to y_zero_point's type."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _check(node, view, 0, 3)
        if found is not None:
            return found
        ins = node.inputs
        for i in (1, 4, 6):
            if view.dtype_of(ins[i]) != _F32:
                return Decline("dtype", f"scale {ins[i]!r} is {view.dtype_of(ins[i])}, not float32")
        if len(ins) > 7 and ins[7] and view.dtype_of(ins[7]) not in _EIGHT_BIT:
            return Decline("dtype", f"y_zero_point {ins[7]!r} is {view.dtype_of(ins[7])}, not uint8 or int8")
        if len(ins) > 8 and ins[8] and view.dtype_of(ins[8]) != _I32:
            return Decline("dtype", f"bias {ins[8]!r} is {view.dtype_of(ins[8])}, not int32")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context, (1, 3, 4, 5, 6, 7, 8), (3, 5, 8))
        self._scales: tuple | None = None

    def _multipliers(self, x_scale: np.ndarray, w_scale: np.ndarray, y_scale: np.ndarray, m: int) -> np.ndarray:
        kept = self._scales
        if kept is not None and kept[0] is x_scale and kept[1] is w_scale and kept[2] is y_scale and kept[3] == m:
            return kept[4]
        ws = np.asarray(w_scale, dtype=np.float32).reshape(-1)
        if ws.size not in (1, m):
            raise ValueError(f"{self.node.describe()}: w_scale must be one value or one per output channel ({m}), "
                             f"got shape {list(np.shape(w_scale))}")
        xs = np.asarray(x_scale, dtype=np.float32).reshape(-1)
        ys = np.asarray(y_scale, dtype=np.float32).reshape(-1)
        if xs.size != 1 or ys.size != 1:
            raise ValueError(f"{self.node.describe()}: x_scale and y_scale must be one value each")
        mult = np.ascontiguousarray(np.broadcast_to(xs[0] * ws / ys[0], (m,)), dtype=np.float32)
        if self.constant:
            self._scales = (x_scale, w_scale, y_scale, m, mult)
        return mult

    def compute(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point=None,  # type: ignore[no-untyped-def]
                b=None):
        def build(x: np.ndarray) -> tuple:
            prepared = self._weights(w, w_zero_point, b)
            mult = self._multipliers(x_scale, w_scale, y_scale, w.shape[0])
            out_dtype = y_zero_point.dtype if y_zero_point is not None else x.dtype
            if y_zero_point is not None and y_zero_point.size != 1:
                raise ValueError(f"{self.node.describe()}: y_zero_point must be one value")
            zp = np.float32(0) if y_zero_point is None else np.float32(y_zero_point.item())
            return self._make_plan(x, w, prepared, True, mult, zp, *_RANGES[out_dtype], out_dtype)

        plan = self._plan(x, (x_scale, w, w_scale, w_zero_point, y_scale, y_zero_point, b), build)
        return self._execute(x, x_zero_point, plan)


@op("QLinearConv", 1, domain="com.microsoft")
class QLinearConvChannelsLast(QLinearConv):
    """com.microsoft QLinearConv: with ``channels_last`` the input and output are N...C."""

    def compute(self, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point=None,  # type: ignore[no-untyped-def]
                b=None):
        if not self.attr("channels_last", 0):
            return super().compute(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, b)
        y = super().compute(np.moveaxis(x, -1, 1), x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
                            y_zero_point, b)
        return np.ascontiguousarray(np.moveaxis(y, 1, -1))
