"""Channels-last (NHWC) convolutions of the numpy provider, for the ``com.onnxplug.nhwc`` ops.

Depthwise ones: with the channels innermost a tap's shifted output row is one run of ``out_w * C``
values, so one ``np.einsum('abij,abj->ij')`` sums all the taps of an image with no im2col copies
(stride phases keep strided runs contiguous). 1x1 ones: ``(N*H*W, C_in) @ (C_in, C_out)``, split
over the product threads in units of about 4K pixels. Dense ones on a few input channels (a stem):
im2col into taps-major columns, then ``columns^T @ weights``, which writes the channels-last output
itself. Everything else transposes to NCHW, runs the standard kernel and transposes back. A
depthwise image is not cut into cache-sized bands: that was slower at every band size tried.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import numpy as np

from onnxplug.optimizer.functions import channels_first_perm, channels_last_perm
from onnxplug.providers.numpy.runtime.blas import matmul, parallel_for
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.kernels.conv.strided import strided_view
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning

#: ``epilogue(view, index)``: residual and activation in place on ``out[index]`` = ``view``.
Epilogue = Callable[[np.ndarray, tuple], None]

#: The dtypes of the fast paths; others run the NCHW kernel between transposes.
FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: Pixels per row of the tiled bias of a 1x1 convolution.
BIAS_TILE = 64

_SCRATCH = ThreadScratch(32 << 20)

#: numpy's C einsum without the Python wrapper and its array-function dispatch; np.einsum where
#: numpy does not expose it.
_EINSUM = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "c_einsum", None) or np.einsum


def _scratch(dtype: np.dtype, size: int) -> np.ndarray:
    """``size`` elements of ``dtype`` from a buffer this thread keeps across calls."""
    return _SCRATCH.get(dtype, size)


def to_first(x: np.ndarray) -> np.ndarray:
    """NHWC... -> NCHW... (a view)."""
    return x.transpose(channels_first_perm(x.ndim))


def to_last(x: np.ndarray) -> np.ndarray:
    """NCHW... -> NHWC... as a contiguous array."""
    return np.ascontiguousarray(x.transpose(channels_last_perm(x.ndim)))


class _TapGroup:
    """The kernel columns that read one column phase, as one strided view of the phase scratch."""

    def __init__(self, phase: int, columns: tuple[int, ...], first: int, step: int) -> None:
        self.phase, self.columns, self.first, self.step = phase, columns, first, step


@functools.lru_cache(maxsize=64)
def column_tap_groups(kw: int, sw: int, dw: int) -> tuple[_TapGroup, ...]:
    """The kernel's columns grouped by the column phase they read. Column phase t holds padded
    columns t, t + sw, ...; kernel column j reads phase (j*dw) % sw from column (j*dw) // sw on. At
    stride 1 there is one phase: the padded image. Kept per geometry (every depthwise call asks)."""
    groups = []
    for t in range(sw):
        cols = [j for j in range(kw) if j * dw % sw == t]
        if cols:
            firsts = [j * dw // sw for j in cols]
            groups.append(_TapGroup(t, tuple(cols), firsts[0], firsts[1] - firsts[0] if len(cols) > 1 else 0))
    return tuple(groups)


def sum_taps(phases: np.ndarray, groups: Sequence[_TapGroup], tiles: list[np.ndarray], row_stride: int,
             row_dilation: int, target: np.ndarray, part: np.ndarray | None) -> None:
    """``target`` (output rows, OW * C) = a depthwise layer's sum over its taps, read in place from
    ``phases`` (column phase, padded rows, phase columns, C; each phase contiguous): one einsum per
    tap group (``tiles`` from DepthwiseWeights). ``part``, of target's shape, takes the groups after
    the first. With an image axis, ``phases`` (column phase, image, padded rows, phase columns, C)
    and ``target`` (image, output rows, OW * C) cover several images in the same calls."""
    kh = tiles[0].shape[0]
    rows, width = target.shape[-2:]
    c, item = phases.shape[-1], phases.itemsize
    row = phases.shape[-2] * c
    if target.ndim == 3:  # images: one more axis, each image's padded rows after the last's
        lead, lead_strides, subscripts = target.shape[:1], (phases.strides[1],), "abkij,abj->kij"
    else:
        lead, lead_strides, subscripts = (), (), "abij,abj->ij"
    for k, g in enumerate(groups):
        view = strided_view(phases[g.phase], (kh, len(g.columns)) + lead + (rows, width),
                            (row_dilation * row * item, g.step * c * item) + lead_strides
                            + (row_stride * row * item, item), g.first * c)
        _EINSUM(subscripts, view, tiles[k], out=target if k == 0 else part)
        if k:
            target += part


class DepthwiseWeights:
    """Per (weight, bias, output width): the taps' weights tiled over an output row, per tap group
    (kh, columns in the group, out_w * C), and the bias tiled likewise. Kept for the weight and
    bias objects last seen (constant initializers in practice)."""

    def __init__(self) -> None:
        self._cached: tuple[object, object, int, list[np.ndarray], np.ndarray | None] | None = None

    def get(self, w: np.ndarray, bias: np.ndarray | None, ow: int, groups: Sequence[_TapGroup], dtype: np.dtype
            ) -> tuple[list[np.ndarray], np.ndarray | None]:
        cached = self._cached
        if cached is not None and cached[0] is w and cached[1] is bias and cached[2] == ow:
            return cached[3], cached[4]
        c, kh = w.shape[0], w.shape[2]
        taps = w.reshape(c, kh, -1).transpose(1, 2, 0).astype(dtype)  # (kh, kw, C)
        tiles = [np.ascontiguousarray(np.broadcast_to(taps[:, g.columns, None, :], (kh, len(g.columns), ow, c)))
                 .reshape(kh, len(g.columns), ow * c) for g in groups]
        bias_row = None if bias is None else np.tile(bias.astype(dtype, copy=False), ow)
        self._cached = (w, bias, ow, tiles, bias_row)
        return tiles, bias_row


def depthwise_nhwc(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides: Sequence[int],
                   dilations: Sequence[int], begin: Sequence[int], end: Sequence[int],
                   epilogue: Epilogue | None, weights: DepthwiseWeights) -> np.ndarray | None:
    """Depthwise 2-D convolution of ``x`` (N, H, W, C) by ``w`` (C, 1, kh, kw), or None when this
    formulation does not apply (negative pads, a dilation together with a stride on one axis)."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[2:]
    (sh, sw), (dh, dw) = strides, dilations
    if min(begin) < 0 or min(end) < 0 or (sw > 1 and dw > 1):
        return None
    pt, pl = begin
    hp, wp = h + pt + end[0], wd + pl + end[1]
    oh, ow = (hp - (kh - 1) * dh - 1) // sh + 1, (wp - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        return None
    dtype = np.result_type(x.dtype, w.dtype)
    out = np.empty((n, oh, ow, c), dtype=dtype)
    groups = column_tap_groups(kw, sw, dw)
    pw = -(-wp // sw)  # columns per phase
    tiles, bias_row = weights.get(w, bias, ow, groups, dtype)
    row = pw * c  # values per phase row

    def image(i: int) -> None:
        scratch = _scratch(dtype, sw * hp * row + (oh * ow * c if len(groups) > 1 else 0))
        phases = scratch[:sw * hp * row].reshape(sw, hp, pw, c)
        if pt:
            phases[:, :pt] = 0
        if hp > pt + h:
            phases[:, pt + h:] = 0
        for t in range(sw):
            lo = max(0, -(-(pl - t) // sw))  # first phase column holding input
            hi = min(pw, -(-(pl + wd - t) // sw))
            phases[t, pt:pt + h, :lo] = 0
            phases[t, pt:pt + h, hi:] = 0
            if lo < hi:
                start = sw * lo + t - pl
                phases[t, pt:pt + h, lo:hi] = x[i, :, start:start + sw * (hi - lo - 1) + 1:sw]
        target = out[i].reshape(oh, ow * c)
        # reads stay inside the phase: rows up to (oh-1)*sh + (kh-1)*dh < hp, likewise columns
        part = scratch[sw * hp * row:].reshape(oh, ow * c) if len(groups) > 1 else None
        sum_taps(phases, groups, tiles, sh, dh, target, part)
        if bias_row is not None:
            target += bias_row  # a row-long operand: faster than broadcasting C values
        if epilogue is not None:
            epilogue(out[i], (i,))

    # einsum and numpy's copies release the GIL: large batches go image by image on both threads
    if not parallel_for(n, image, out.size * kh * kw * DEPTHWISE_MACS_PER_TAP):
        for i in range(n):
            image(i)
    return out


#: A depthwise tap's cost per output value, in multiply-adds of a product (einsum's tap sums run at
#: ~5 G multiply-adds/s), for sharing images over the product threads (``parallel_for``):
#: MobileNetV2's 7 x 7 x 960 layers at batch 8 then go to both threads, its stride-2 14 x 14 x 576
#: one stays on one (shorter calls would wait for the GIL).
DEPTHWISE_MACS_PER_TAP = 12

#: Dense convolutions with at most this many input channels run channels-last (conv_dense_nhwc):
#: taps-major columns copy runs of the output width, which suits a few channels; with many, the
#: standard kernel (Winograd, im2col over whole channels) between transposes serves them better.
DENSE_MAX_CHANNELS = 4

# Bytes of columns per unit of conv_dense_nhwc (``tuning.nhwc_dense_unit_bytes``): bands of output
# rows beyond it (the columns then stay in a core's L2 cache from their copy to the product).


class DenseWeights:
    """Per (weight, bias): the weights as (taps [+ 1 bias row], C_out), taps ordered (kh, kw, C) as
    the columns of conv_dense_nhwc. Kept for the weight and bias objects last seen."""

    def __init__(self) -> None:
        self._cached: tuple[object, object, np.ndarray] | None = None

    def get(self, w: np.ndarray, bias: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
        cached = self._cached
        if cached is not None and cached[0] is w and cached[1] is bias:
            return cached[2]
        k = w.shape[0]
        wm = w.transpose(2, 3, 1, 0).reshape(-1, k)
        if bias is not None:
            wm = np.concatenate([wm, bias.reshape(1, k)])
        wm = np.ascontiguousarray(wm, dtype=dtype)
        self._cached = (w, bias, wm)
        return wm


def conv_dense_nhwc(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides: Sequence[int],
                    dilations: Sequence[int], begin: Sequence[int], end: Sequence[int],
                    epilogue: Epilogue | None, weights: DenseWeights,
                    tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray | None:
    """Dense (one group) 2-D convolution of ``x`` (N, H, W, C) by ``w`` (K, C, kh, kw), or None when
    this formulation does not apply (more than DENSE_MAX_CHANNELS channels, negative pads).

    Per unit (an image, or a band of its output rows): the padded input's taps copied into columns
    (taps [+ a row of ones for the bias], pixels), then ``columns^T @ weights`` into the unit's
    (pixels, K) block of the output, then the epilogue while that block is in cache."""
    n, h, wd, c = x.shape
    k, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    if c > DENSE_MAX_CHANNELS or min(begin) < 0 or min(end) < 0:
        return None
    hp, wp = h + begin[0] + end[0], wd + begin[1] + end[1]
    oh, ow = (hp - (kh - 1) * dh - 1) // sh + 1, (wp - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        return None
    dtype = np.result_type(x.dtype, w.dtype)
    wm = weights.get(w, bias, dtype)
    taps, rows_w = kh * kw * c, wm.shape[0]
    out = np.empty((n, oh, ow, k), dtype=dtype)
    if any(begin) or any(end):
        xp = np.zeros((n, hp, wp, c), dtype=dtype)
        xp[:, begin[0]:begin[0] + h, begin[1]:begin[1] + wd] = x
    else:
        xp = np.ascontiguousarray(x, dtype=dtype)
    s_h, s_w, s_c = xp.strides[1:]
    rows = max(1, min(oh, tuning.nhwc_dense_unit_bytes // (ow * rows_w * out.itemsize)))
    bands = -(-oh // rows)

    def unit(u: int, product: Callable) -> None:
        i, band = divmod(u, bands)
        r0, r1 = band * rows, min(oh, band * rows + rows)
        pixels = (r1 - r0) * ow
        cols = _scratch(dtype, rows_w * pixels).reshape(rows_w, pixels)
        win = strided_view(xp[i, r0 * sh:], (kh, kw, c, r1 - r0, ow), (dh * s_h, dw * s_w, s_c, sh * s_h, sw * s_w))
        np.copyto(cols[:taps].reshape(kh, kw, c, r1 - r0, ow), win)
        if rows_w > taps:
            cols[taps] = 1
        product(cols.T, wm, out=out[i, r0:r1].reshape(pixels, k))
        if epilogue is not None:
            epilogue(out[i, r0:r1], (i, slice(r0, r1)))

    units = n * bands
    if not parallel_for(units, lambda u: unit(u, np.matmul), out.size * taps):
        for u in range(units):
            unit(u, _pointwise_product)
    return out


class PointwiseWeights:
    """Per (weight, bias): ``w`` (C_out, C_in, 1, 1...) as (C_in, C_out), then either [w; bias]
    (C_in + 1, C_out) when the layer takes its bias in the product (``folds_bias``) or the bias
    tiled BIAS_TILE times (see conv_1x1_nhwc). Kept for the weight and bias objects last seen."""

    def __init__(self) -> None:
        self._cached: tuple[object, object, tuple] | None = None

    def get(self, w: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(weights (C_in, C_out), tiled bias row or None, augmented weights or None)."""
        cached = self._cached
        if cached is None or cached[0] is not w or cached[1] is not b:
            wt = np.ascontiguousarray(w.reshape(w.shape[0], -1).T)
            augmented = np.concatenate([wt, b[None, :]]) if b is not None and folds_bias(*wt.shape) else None
            row = None if b is None or augmented is not None else np.tile(b, BIAS_TILE)
            cached = self._cached = (w, b, (wt, row, augmented))
        return cached[2]


def add_bias_rows(y2: np.ndarray, bias_row: np.ndarray) -> None:
    """``y2`` (pixels, C_out) += bias, through rows of BIAS_TILE pixels where they are whole (a
    long operand: faster than broadcasting C_out values)."""
    m, cout = y2.shape
    whole = m - m % BIAS_TILE
    if whole:
        y2[:whole].reshape(-1, BIAS_TILE * cout).__iadd__(bias_row)
    if whole < m:
        y2[whole:] += bias_row[:cout]


def conv_1x1_nhwc(x: np.ndarray, wt: np.ndarray, bias_row: np.ndarray | None, strides: Sequence[int],
                  epilogue: Epilogue | None, augmented: np.ndarray | None = None,
                  tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray:
    """1x1 convolution without pads of ``x`` (N, *spatial, C_in) by ``wt`` (C_in, C_out): a product
    whose rows are the output pixels, then the bias and the epilogue. ``bias_row`` is the bias tiled
    ``BIAS_TILE`` times.

    With ``augmented`` ([wt; bias], see ``folds_bias``) the bias rides in the product instead,
    against a column of ones after the input pixels in scratch: copying the narrower input costs
    less than a pass over the output.

    A product worth splitting goes to the product threads in units of about
    ``tuning.nhwc_unit_pixels`` output
    pixels (whole images, or bands of an image's rows), each with its own copy, bias and epilogue
    while its output is still in cache, rather than one split product followed by whole passes,
    which are memory-bound."""
    sampled = x[(slice(None),) + tuple(slice(None, None, s) for s in strides)] if any(s != 1 for s in strides) else x
    cin, cout = wt.shape
    m = math.prod(sampled.shape[:-1])
    out = np.empty(sampled.shape[:-1] + (cout,), dtype=np.result_type(x.dtype, wt.dtype))
    units = _pixel_units(sampled.shape[:-1], tuning.nhwc_unit_pixels)

    def unit(k: int) -> None:
        index = units[k]
        _pointwise(sampled[index], out[index], wt, bias_row, augmented, np.matmul)  # on a product thread
        if epilogue is not None:
            epilogue(out[index], index)

    if len(units) < 2 or not parallel_for(len(units), unit, m * cin * cout):
        _pointwise(sampled, out, wt, bias_row, augmented, _pointwise_product)
        if epilogue is not None:
            epilogue(out, (Ellipsis,))
    return out


#: Single products of a 1x1 layer of at least this many multiply-adds go to the threaded BLAS. Lower
#: than the threaded_product_macs option: these layers come in runs (expansion, depthwise, projection),
#: so its workers are still awake from the last one.
POINTWISE_THREADED_MACS = 2_000_000


def _pointwise_product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    return matmul(a, b, out, threaded_macs=POINTWISE_THREADED_MACS)


@functools.lru_cache(maxsize=64)
def _pixel_units(shape: tuple[int, ...], unit_pixels: int) -> tuple[tuple, ...]:
    """Indices of (N, H, W...) covering it in units of about ``unit_pixels`` pixels, each a contiguous
    block of the output: bands of rows of one image when images are large, else runs of images
    (kept per shape: every 1x1 layer asks, and most do not split)."""
    n, per_image = shape[0], math.prod(shape[1:])
    if len(shape) > 1 and per_image >= 2 * unit_pixels and shape[1] > 1:
        rows = -(-shape[1] // -(-per_image // unit_pixels))
        return tuple((i, slice(r, r + rows)) for i in range(n) for r in range(0, shape[1], rows))
    images = max(1, unit_pixels // max(per_image, 1))
    return tuple((slice(i, i + images),) for i in range(0, n, images))


def _pointwise(src: np.ndarray, dst: np.ndarray, wt: np.ndarray, bias_row: np.ndarray | None,
               augmented: np.ndarray | None, product: Callable) -> None:
    """``dst`` (contiguous, pixels x C_out) = 1x1 convolution of ``src`` with its bias, by ``product``."""
    cin = wt.shape[0]
    pixels = math.prod(src.shape[:-1])
    y2 = dst.view()
    y2.shape = (pixels, dst.shape[-1])  # units are contiguous blocks of the output (raises rather than copy)
    if augmented is not None:
        rows = _scratch(augmented.dtype, pixels * (cin + 1)).reshape(src.shape[:-1] + (cin + 1,))
        rows[..., cin] = 1
        rows[..., :cin] = src
        product(rows.reshape(pixels, cin + 1), augmented, out=y2)
    else:
        product(np.ascontiguousarray(src).reshape(pixels, cin), wt, out=y2)
        if bias_row is not None:
            add_bias_rows(y2, bias_row)


def folds_bias(cin: int, cout: int) -> bool:
    """Whether a 1x1 layer takes its bias in the product: when the input has at most half the
    output's channels (the copy is then cheaper than the bias pass it saves; a 32 -> 16 layer
    with the copy took 2.7x as long)."""
    return 2 * cin <= cout
