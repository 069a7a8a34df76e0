"""The convolution engine shared by Conv, FusedConv and the fused Conv groups.

Three paths, chosen per call: a direct numba kernel for depthwise convs; plain BLAS for
unpadded stride-1 1x1 convs; im2col (numba) + BLAS for the rest. Bias, a residual and an
activation are applied in one compiled epilogue. 1-D convs run as 2-D with a height of 1.
Threads split the output into (image, band of rows) tiles; each tile does its own im2col,
single-threaded BLAS product and epilogue, so the cores never wait on each other's libraries.
Float32 pointwise, depthwise and stride-1 convs are split the same way inside numba prange regions
(kernels/native_parallel.py), which hand work to the other threads far more cheaply; single images
with few output pixels (or pointwise with 48+ output channels) are split by output channels instead
(kernels/native_channels.py), and small float32 convs run those compiled kernels on one thread.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numba
import numpy as np
from onnxplug_sdk import Node, output_size, resolve_pads

from onnxplug_numba.kernels import conv as kconv
from onnxplug_numba.kernels import depthwise as kdepthwise
from onnxplug_numba.kernels import native_channels, native_parallel
from onnxplug_numba.threads import ThreadControl


#: Convs smaller than this (multiply-adds) run on the calling thread. Sharing one costs two thread
#: wake-ups (a virtual CPU halts when idle) plus GIL hand-offs, and two threads also share the
#: memory bandwidth a small-K product is bound by (docs/benchmarks.md, "Measurements behind design
#: choices").
_SHARE_MIN_MACS = 32_000_000
#: The same for depthwise convs, which do far less work per multiply-add than a BLAS product does.
_SHARE_MIN_DEPTHWISE_MACS = 8_000_000
#: Float32 convs from this size share their work in a numba ``prange`` region instead
#: (kernels/native_parallel.py), whose hand-off costs microseconds while its workers are awake
#: (back-to-back convs); a region after a pause still wakes a sleeping worker, and its items are
#: assigned statically, so small convs of small models (the If branch of if_model) lost at 1M.
_NATIVE_MIN_MACS = 4_000_000
#: The same for depthwise convs, whose prange region is one pass over the planes (chosen on
#: MobileNetV2 at batch 1, whose depthwise convs are 0.4-4M multiply-adds).
_NATIVE_MIN_DEPTHWISE_MACS = 300_000
#: Single images with fewer output pixels than this (per thread) are shared by output channels
#: (kernels/native_channels.py) rather than by bands of rows, which would each pack all the weights.
#: (Pointwise convs of a single image are shared by output channels whenever there are 48+: on
#: 7x7 images column bands fall to one band, i.e. one thread.)
_POINTWISE_SPLIT_MIN_CHANNELS = 24  # per thread
_CHANNEL_SPLIT_MAX_PIXELS = 200


#: (a dtype compared with a dtype: comparing with the type np.float32 converts it on every call)
_FLOAT32 = np.dtype(np.float32)

#: Stride-1 float32 convs of one group accumulate one product per kernel tap straight from the
#: padded input (native_parallel.tap_conv) instead of building the im2col matrix (pitched_conv).
TAP_PRODUCTS = True
#: Weights in the tap layout (kh*kw, M, C) by the weight array's id, with a weak reference to check
#: the id still names that array: built once per weight, not on every call. Cleared when full, so
#: dead weights' copies do not pile up.
_TAP_WEIGHTS: dict[int, tuple[weakref.ref, np.ndarray]] = {}
_TAP_WEIGHTS_MAX = 256


def _tap_weights(w4: np.ndarray, constant: bool) -> np.ndarray:
    """``w4`` (M, C, kh, kw) as (kh*kw, M, C), C-contiguous float32; kept when ``constant``."""
    entry = _TAP_WEIGHTS.get(id(w4)) if constant else None
    if entry is not None and entry[0]() is w4:
        return entry[1]
    m, c, kh, kw = w4.shape
    taps = np.ascontiguousarray(w4.transpose(2, 3, 0, 1).reshape(kh * kw, m, c))
    if not constant:
        return taps
    if len(_TAP_WEIGHTS) >= _TAP_WEIGHTS_MAX:
        _TAP_WEIGHTS.clear()
    _TAP_WEIGHTS[id(w4)] = (weakref.ref(w4), taps)
    return taps


def decode(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True)
class ConvSpec:
    """A Conv node's attributes, spatial rank 1 or 2."""

    group: int
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...] | None
    auto_pad: str

    @classmethod
    def from_node(cls, node: Node, rank: int) -> ConvSpec:
        strides = tuple(int(s) for s in (node.attr("strides") or [1] * rank))
        dilations = tuple(int(d) for d in (node.attr("dilations") or [1] * rank))
        pads = node.attr("pads")
        return cls(int(node.attr("group", 1)), strides, dilations,
                   tuple(int(p) for p in pads) if pads else None, decode(node.attr("auto_pad", "NOTSET")))

    def pads_for(self, spatial: Sequence[int], kernel: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return resolve_pads(self.auto_pad, list(spatial), list(kernel), list(self.strides),
                            list(self.dilations), list(self.pads) if self.pads else None)


def activation_of(node: Node | None, consts: dict[str, float] | None = None) -> tuple[int, float, float]:
    """(code, alpha, beta) of an activation node for the epilogue; (0, 0, 0) for none."""
    if node is None:
        return 0, 0.0, 0.0
    op = node.op_type
    if op == "Relu":
        return kconv.ACTIVATIONS["Relu"], 0.0, 0.0
    if op == "LeakyRelu":
        return kconv.ACTIVATIONS["LeakyRelu"], float(node.attr("alpha", 0.01)), 0.0
    if op == "HardSigmoid":
        return kconv.ACTIVATIONS["HardSigmoid"], float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    if op in ("Sigmoid", "Tanh"):
        return kconv.ACTIVATIONS[op], 0.0, 0.0
    if op == "Clip":
        consts = consts or {}
        lo = consts.get("min", -np.inf)
        hi = consts.get("max", np.inf)
        return kconv.ACTIVATIONS["Clip"], float(lo), float(hi)
    raise ValueError(f"{node.describe()} is not an activation the conv epilogue computes")


@functools.lru_cache(maxsize=1024)
def _geometry(spec: ConvSpec, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """(pads begin, pads end, strides, dilations, output size), each as 2-D (1-D convs get a
    leading 1 or 0), for these shapes; worked out once per shape. Raises ValueError for shapes
    the node cannot take."""
    spatial, kernel = x_shape[2:], w_shape[2:]
    begin, end = spec.pads_for(spatial, kernel)
    strides, dilations = spec.strides, spec.dilations
    if len(x_shape) == 3:
        strides, dilations, begin, end = (1, *strides), (1, *dilations), (0, *begin), (0, *end)
        spatial, kernel = (1, *spatial), (1, *kernel)
    c, (h, wd) = x_shape[1], spatial
    m, cg, (kh, kw) = w_shape[0], w_shape[1], kernel
    group = spec.group
    if cg * group != c or m % group:
        raise ValueError(f"Conv: input has {c} channels, weight {tuple(w_shape)} with group {group} "
                         f"expects {cg * group}")
    sh, sw = strides
    dh, dw = dilations
    oh = output_size(h, kh, sh, dh, begin[0], end[0])
    ow = output_size(wd, kw, sw, dw, begin[1], end[1])
    if oh <= 0 or ow <= 0:
        raise ValueError(f"Conv: the window {tuple(w_shape[2:])} is larger than the padded input "
                         f"{tuple(x_shape[2:])}")
    return tuple(begin), tuple(end), (sh, sw), (dh, dw), (oh, ow)


ConvCall = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]


def conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, spec: ConvSpec, threads: ThreadControl,
         residual: np.ndarray | None = None, act: tuple[int, float, float] = (0, 0.0, 0.0),
         constant_weight: bool = False) -> np.ndarray:
    """ONNX Conv of a (N, C, L) or (N, C, H, W) float input, with the fused epilogue.
    ``constant_weight``: ``w`` is a constant of the model, so layouts derived from it may be kept
    across calls (a fed weight may be changed in place between runs)."""
    return conv_call(x.shape, x.dtype, w, bias, spec, threads, residual is not None, act, constant_weight)(x, residual)


def conv_call(x_shape: tuple[int, ...], dtype: np.dtype, w: np.ndarray, bias: np.ndarray | None, spec: ConvSpec,
              threads: ThreadControl, has_residual: bool, act: tuple[int, float, float] = (0, 0.0, 0.0),
              constant_weight: bool = False) -> ConvCall:
    """The conv of inputs of ``x_shape`` with this weight and bias, as ``call(x, residual)``: the
    geometry, the path and the weight layouts are settled here, so a call allocates the output and
    runs the kernel. Valid while ``w`` and ``bias`` hold the same values (callers keep it across
    runs for constant ones only)."""
    one_d = len(x_shape) == 3
    w4 = np.ascontiguousarray(w)
    if one_d:
        w4 = w4[:, :, None, :]
    begin, end, (sh, sw), (dh, dw), (oh, ow) = _geometry(spec, tuple(x_shape), w.shape)
    n, c = x_shape[0], x_shape[1]
    h, wd = (1, x_shape[2]) if one_d else (x_shape[2], x_shape[3])
    m, cg, kh, kw = w4.shape
    group = spec.group
    dtype = np.dtype(dtype)
    b = np.zeros(m, dtype=dtype) if bias is None else np.ascontiguousarray(bias, dtype=dtype)
    y_shape = (n, m, oh, ow)
    out_shape = (n, m, ow) if one_d else y_shape
    code, alpha, beta = act
    macs = n * m * oh * ow * cg * kh * kw

    def inputs(x: np.ndarray, residual: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        threads.blas()
        x4 = np.ascontiguousarray(x)
        if one_d:
            x4 = x4[:, :, None, :]
        res = None if residual is None else np.ascontiguousarray(residual, dtype=dtype).reshape(y_shape)
        return x4, res, np.empty(y_shape, dtype=dtype)

    # one input channel and group 1 (silero-vad's STFT: 258 outputs, 256 taps) is a plain product:
    # the per-plane depthwise loops would run taps x outputs short loops instead of one GEMM
    depthwise = cg == 1 and group == c and (group > 1 or kh * kw <= 9)
    native = native_parallel.AVAILABLE and threads.parallel and dtype == _FLOAT32 \
        and macs >= (_NATIVE_MIN_DEPTHWISE_MACS if depthwise else _NATIVE_MIN_MACS)
    if depthwise:
        grain = n * m if macs < _SHARE_MIN_DEPTHWISE_MACS else 1

        def depthwise_call(x: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
            x4, res, y = inputs(x, residual)
            resid = res if res is not None else y
            if native:
                count = native_parallel.use_threads(threads.count)
                native_parallel.depthwise_conv(x4, w4, b, resid, res is not None, code, alpha, beta, sh, sw, dh, dw,
                                               begin[0], begin[1], y, min(n * m, 4 * count))
            else:
                threads.run(lambda lo, hi: kdepthwise.depthwise_phased(
                    x4, w4, b, resid, res is not None, code, alpha, beta, sh, sw, dh, dw, begin[0], begin[1], y,
                    lo, hi), n * m, grain)
            return y.reshape(out_shape)
        return depthwise_call
    mg = m // group
    wmat = w4.reshape(group, mg, cg * kh * kw)
    pointwise = kh == kw == 1 and sh == sw == 1 and not any(begin) and not any(end)
    if native and pointwise and group == 1:
        p = oh * ow

        def pointwise_call(x: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
            x4, res, y = inputs(x, residual)
            y3 = y.reshape(n, m, p)
            r3 = res.reshape(n, m, p) if res is not None else y3
            count = native_parallel.use_threads(threads.count)
            if n < count and m >= _POINTWISE_SPLIT_MIN_CHANNELS * count:
                native_channels.pointwise_channel_split(wmat[0], x4.reshape(n, c, p), b, r3, res is not None,
                                                        code, alpha, beta, y3, count)
            else:
                bands = max(1, min(-(-4 * count // n), p // 64))  # a few items per thread, 64+ columns each
                native_parallel.pointwise_conv(wmat[0], x4.reshape(n, c, p), b, r3, res is not None,
                                               code, alpha, beta, y3, bands)
            return y.reshape(out_shape)
        return pointwise_call
    pitch = max(wd + begin[1], ow + (kw - 1) * dw)
    pitched = not pointwise and sh == sw == 1 and (pitch - ow) * 8 <= ow  # few wasted columns
    alone = not native and not pointwise and native_parallel.AVAILABLE and dtype == _FLOAT32 \
        and macs < _SHARE_MIN_MACS
    if native or alone:
        # a small conv runs the compiled kernel on this thread alone (one band per image): no
        # per-band buffers and calls of the Python path; larger ones share it in a prange region
        # (so no pool thread competes with its spinning workers)
        pool = max(1, min(threads.count, numba.config.NUMBA_NUM_THREADS))  # use_threads' count
        split = native and group == 1 and n < pool and oh * ow <= _CHANNEL_SPLIT_MAX_PIXELS * pool and m >= 16 * pool
        taps = pitched and group == 1 and TAP_PRODUCTS and not split
        weights = _tap_weights(w4, constant_weight) if taps else wmat
        if split:
            kernel, steps = native_channels.channel_split_conv, (kh, kw, sh, sw, dh, dw)
        elif taps:
            kernel, steps = native_parallel.tap_conv, (kh, kw, dh, dw)
        elif pitched:
            kernel, steps = native_parallel.pitched_conv, (kh, kw, dh, dw)
        else:
            kernel, steps = native_parallel.im2col_conv, (kh, kw, sh, sw, dh, dw)

        def native_call(x: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
            x4, res, y = inputs(x, residual)
            count = native_parallel.use_threads(threads.count if native else 1)
            if not native:
                bands = 1
            elif split:
                bands = count
            elif oh * ow >= 256:
                # two items per thread with 4+ rows each; small images one band per thread, as
                # thinner bands make BLAS pack the whole weight matrix once per band
                bands = max(1, min(oh // 4, -(-2 * count // n)))
            else:
                bands = max(1, min(oh, -(-count // n)))
            kernel(x4, weights, b, res if res is not None else y, res is not None, code, alpha, beta, *steps,
                   begin[0], begin[1], y, bands)
            return y.reshape(out_shape)
        return native_call
    # work items of the Python paths: (image, first output row, end row); one image splits into
    # row bands when the batch alone cannot keep every thread busy
    bands = max(1, min(oh, -(-threads.count // n))) if macs >= _SHARE_MIN_MACS else 1
    items = [(i, oh * k // bands, oh * (k + 1) // bands) for i in range(n) for k in range(bands)]
    grain = 1 if macs >= _SHARE_MIN_MACS else len(items)
    epilogue = bias is not None or has_residual or code != 0

    def python_call(x: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
        x4, res, y = inputs(x, residual)
        y3 = y.reshape(n, m, oh * ow)
        r3 = res.reshape(n, m, oh * ow) if res is not None else None
        if pitched:
            pitched_conv(x4, wmat, (kh, kw), b, r3, act, (sh, dh, dw), begin, (oh, ow), y, items, threads, grain)
            return y.reshape(out_shape)

        def work(lo: int, hi: int) -> None:
            for i, r0, r1 in items[lo:hi]:
                p0, p1 = r0 * ow, r1 * ow
                cols = None if pointwise else np.empty((cg * kh * kw, p1 - p0), dtype=dtype)
                for g in range(group):
                    if pointwise:
                        src = x4[i, g * cg:(g + 1) * cg].reshape(cg, h * wd)[:, p0:p1]
                    else:
                        kconv.im2col(x4[i], g * cg, (g + 1) * cg, kh, kw, sh, sw, dh, dw,
                                     begin[0] - r0 * sh, begin[1], r1 - r0, ow, cols)
                        src = cols
                    np.matmul(wmat[g], src, out=y3[i, g * mg:(g + 1) * mg, p0:p1])
                if epilogue:
                    tile = y3[i:i + 1, :, p0:p1]
                    kconv.epilogue(tile, b, r3[i:i + 1, :, p0:p1] if r3 is not None else tile, r3 is not None,
                                   code, alpha, beta)

        threads.run(work, len(items), grain)
        return y.reshape(out_shape)
    return python_call


@functools.lru_cache(maxsize=256)
def _tap_offsets(cg: int, kh: int, kw: int, hp: int, wp: int, dh: int, dw: int) -> np.ndarray:
    """Offset of tap (c, i, j) in a padded (cg, hp, wp) image, in im2col row order."""
    rows = (np.arange(cg)[:, None] * hp + np.arange(kh)[None, :] * dh) * wp
    taps = (rows[:, :, None] + np.arange(kw)[None, None, :] * dw).reshape(-1).astype(np.int64)
    taps.flags.writeable = False
    return taps


def pitched_conv(x4: np.ndarray, wmat: np.ndarray, kernel: tuple[int, int], bias: np.ndarray,
                 r3: np.ndarray | None, act: tuple[int, float, float], steps: tuple[int, int, int],
                 begin: Sequence[int], out_hw: tuple[int, int], y: np.ndarray,
                 items: list[tuple[int, int, int]], threads: ThreadControl, grain: int) -> None:
    """im2col + BLAS for stride-1 convs, over a zero-padded copy of each image.

    In a padded image of row pitch ``wp``, tap (c, i, j) of output element ``e = yo * wp + xo``
    sits at ``offset(c, i, j) + e``, so each im2col row is one contiguous copy. The product has
    ``wp >= ow`` columns per output row; the epilogue drops the extra ones.
    """
    n, c, h, wd = x4.shape
    group, mg, _ = wmat.shape
    cg = c // group
    kh, kw = kernel
    _, dh, dw = steps
    oh, ow = out_hw
    wp = max(wd + begin[1], ow + (kw - 1) * dw)
    hp = max(h + begin[0], oh + (kh - 1) * dh) + 2  # slack rows for the extra columns
    code, alpha, beta = act
    taps = _tap_offsets(cg, kh, kw, hp, wp, dh, dw)
    dummy = np.zeros((mg, 1, 1), dtype=y.dtype)  # the residual argument when there is none (not read)

    def work(lo: int, hi: int) -> None:
        padded = np.empty((c, hp, wp), dtype=x4.dtype)
        # only the margins need zeros: the image overwrites the rest
        padded[:, :begin[0]] = 0
        padded[:, begin[0] + h:] = 0
        padded[:, begin[0]:begin[0] + h, :begin[1]] = 0
        padded[:, begin[0]:begin[0] + h, begin[1] + wd:] = 0
        image = -1
        for i, r0, r1 in items[lo:hi]:
            if i != image:
                padded[:, begin[0]:begin[0] + h, begin[1]:begin[1] + wd] = x4[i]
                image = i
            flat = padded.reshape(-1)
            count = (r1 - r0) * wp
            cols = np.empty((cg * kh * kw, count), dtype=x4.dtype)
            product = np.empty((mg, count), dtype=x4.dtype)
            for g in range(group):
                kconv.gather_rows(flat, taps + (g * cg * hp + r0) * wp, 1, cols)
                np.matmul(wmat[g], cols, out=product)
                out = y[i, g * mg:(g + 1) * mg, r0:r1]
                res = r3[i, g * mg:(g + 1) * mg].reshape(mg, oh, ow)[:, r0:r1] if r3 is not None else dummy
                kconv.epilogue_pitched(product, wp, bias[g * mg:(g + 1) * mg], res, r3 is not None,
                                       code, alpha, beta, out)

    threads.run(work, len(items), grain)
