"""The convolution engine shared by Conv, FusedConv and the fused Conv groups.

``conv_call`` settles a conv once per input shape (geometry, path, weight layouts) and returns the
call; nodes with constant weights keep it per shape (``kept_conv``). Paths: a direct numba kernel
for depthwise convs; plain BLAS for unpadded stride-1 1x1 convs; im2col (numba) + BLAS for the
rest, with bias, residual and activation in one compiled epilogue. 1-D convs run as 2-D with a
height of 1. Float32 convs run compiled kernels split over the threads in numba prange regions
(kernels/native_parallel.py, by output channels for small images: native_channels.py), small ones
on one thread; the rest take Python paths of (image, row band) tiles. Weights reach the kernels
as read-only views, so each kernel has one signature (the one compile_helper.py compiles ahead).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numba
import numpy as np
from onnxplug_sdk import KernelContext, Node, output_size, resolve_pads

from onnxplug_numba.kernels import conv as kconv
from onnxplug_numba.kernels import depthwise as kdepthwise
from onnxplug_numba import compile_helper
from onnxplug_numba.kernels import gemv, native_channels, native_parallel
from onnxplug_numba.ops._conv_pitched import pitched_conv
from onnxplug_numba.ops._conv_weights import reaching_taps, read_only, tap_weights
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
_ONE32 = np.float32(1)

#: Float32 1x1 convs of at most this many pixels (over the batch) and weights of at least this many
#: elements run as few-row products (kernels/gemv.py): small feature maps of late CNN stages.
FEW_PIXELS = 16
FEW_PIXELS_MIN_WEIGHT = 4096

#: Stride-1 float32 convs of one group accumulate one product per kernel tap straight from the
#: padded input (native_parallel.tap_conv) instead of building the im2col matrix (pitched_conv).
TAP_PRODUCTS = True


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


#: Input shapes whose conv calls a kernel keeps (all are dropped when a new one would pass this).
CALLS_KEPT = 16


def kept_conv(calls: dict[tuple[tuple[int, ...], bool], ConvCall], x: np.ndarray, w: np.ndarray,
              bias: np.ndarray | None, spec: ConvSpec, threads: ThreadControl, residual: np.ndarray | None,
              act: tuple[int, float, float]) -> np.ndarray:
    """``conv`` for a node whose weight and bias are constants: ``calls`` keeps its call per input shape."""
    key = (x.shape, residual is not None)
    call = calls.get(key)
    if call is None:
        if len(calls) >= CALLS_KEPT:
            calls.clear()
        call = calls[key] = conv_call(x.shape, x.dtype, w, bias, spec, threads, residual is not None, act,
                                      constant_weight=True)
    return call(x, residual)


def likely_kernels(w_shape: Sequence[int], spec: ConvSpec) -> tuple[list[str], list[str]]:
    """The compiled kernels a float32 conv with this weight is likely to call, and those it may
    call depending on its input's size (compile_helper.KERNELS names)."""
    m, cg, *kernel = w_shape
    if cg == 1 and spec.group > 1:
        return ["depthwise_conv"], []
    if spec.group > 1:
        return ["im2col_conv"], []
    unpadded = not any(spec.pads or ()) and spec.auto_pad in ("NOTSET", "VALID")
    unit = all(s == 1 for s in spec.strides)
    if unit and unpadded and all(k == 1 for k in kernel):
        return ["pointwise_conv"], ["pointwise_channel_split"] if m >= 48 else []
    split = ["channel_split_conv"] if m >= 128 else []
    if unit:
        return ["tap_conv"], ["im2col_conv"] + split
    return ["im2col_conv"], split


def want_kernels(context: KernelContext, weight: np.ndarray, spec: ConvSpec) -> None:
    """Queue the compiled kernels a float32 conv with this constant weight will likely call to
    the compile helper (compile_helper.py), unless the provider option ``compile_helper`` is off."""
    option = getattr(context.provider, "options", {}).get("compile_helper", True)
    if weight.dtype != np.float32 or weight.ndim not in (3, 4) or str(option).lower() in ("0", "false") \
            or not compile_helper.enabled():
        return
    compile_helper.want(*likely_kernels(weight.shape, spec))


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
    reach = reaching_taps(w4.shape[2:], (h, wd), begin, end, (sh, sw), (dh, dw), (oh, ow))
    if reach is not None:  # kernel rows or columns that only ever meet padding are dropped
        (i0, i1), (j0, j1) = reach
        full_h, full_w = w4.shape[2:]
        w4 = np.ascontiguousarray(w4[:, :, i0:i1, j0:j1])
        begin = (begin[0] - i0 * dh, begin[1] - j0 * dw)
        end = (end[0] - (full_h - i1) * dh, end[1] - (full_w - j1) * dw)
    m, cg, kh, kw = w4.shape
    group = spec.group
    dtype = np.dtype(dtype)
    b = read_only(np.zeros(m, dtype=dtype) if bias is None else np.ascontiguousarray(bias, dtype=dtype))
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

        w4 = read_only(w4)
        if native:
            compile_helper.ready(native_parallel.depthwise_conv)

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
    wmat = read_only(w4).reshape(group, mg, cg * kh * kw)
    pointwise = kh == kw == 1 and sh == sw == 1 and not any(begin) and not any(end)
    pixels = n * oh * ow
    if not native and pointwise and group == 1 and dtype == _FLOAT32 and pixels <= FEW_PIXELS \
            and m * c >= FEW_PIXELS_MIN_WEIGHT:
        # a few pixels against many weights: the few-row product reads each weight row once for
        # all of them, where BLAS packs the whole weight matrix for a handful of columns
        plane = oh * ow

        def few_pixels_call(x: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
            x4, res, y = inputs(x, residual)
            rows = np.ascontiguousarray(x4.reshape(n, c, plane).transpose(0, 2, 1)).reshape(pixels, c)
            product = np.empty((pixels, m), dtype=dtype)
            gemv.product_band(rows, wmat[0], _ONE32, b, False, product, 0, m)
            y3 = y.reshape(n, m, plane)
            y3[...] = product.reshape(n, plane, m).transpose(0, 2, 1)
            kconv.epilogue(y3, b, res.reshape(n, m, plane) if res is not None else y3, res is not None,
                           code, alpha, beta)
            return y.reshape(out_shape)
        return few_pixels_call
    if native and pointwise and group == 1:
        p = oh * ow
        compile_helper.ready(native_parallel.pointwise_conv)
        compile_helper.ready(native_channels.pointwise_channel_split)

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
        # (64+ output channels per thread: narrower slices make BLAS's products too thin to pay)
        split = native and group == 1 and n < pool and oh * ow <= _CHANNEL_SPLIT_MAX_PIXELS * pool and m >= 64 * pool
        taps = pitched and group == 1 and TAP_PRODUCTS and not split
        weights = read_only(tap_weights(w4, constant_weight)) if taps else wmat
        if split:
            kernel, steps = native_channels.channel_split_conv, (kh, kw, sh, sw, dh, dw)
        elif taps:
            kernel, steps = native_parallel.tap_conv, (kh, kw, dh, dw)
        elif pitched:
            kernel, steps = native_parallel.pitched_conv, (kh, kw, dh, dw)
        else:
            kernel, steps = native_parallel.im2col_conv, (kh, kw, sh, sw, dh, dw)
        compile_helper.ready(kernel)

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
