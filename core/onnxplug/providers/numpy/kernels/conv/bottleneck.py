"""MobileNetV2's inverted residual block, channels-last, in bands of output rows
(com.onnxplug.nhwc InvertedBottleneck; providers/numpy/passes/inverted_bottleneck_fusion.py).

The block widens its input six times with a 1x1 convolution, filters the wide tensor with a 3x3
depthwise one and narrows it again with a 1x1 projection. Run as three kernels, the wide tensor goes
through memory several times, with two cores competing for the bandwidth at batch 8. Here each unit
(an image's band of output rows) expands just the input rows its band reads straight into the
depthwise layer's padded, column-phased scratch, filters them (``np.einsum`` over shifted runs, as
``depthwise_nhwc``) and projects the result into the output, so each band of the wide tensor is used
right after it is made. Blocks with small outputs fit the cache anyway and would lose their threaded
products, so they run as the three kernels (``MIN_FUSED_OUTPUTS``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for, worth_sharing
from onnxplug.providers.numpy.kernels.conv.channels_last import (BIAS_TILE, DepthwiseWeights, PointwiseWeights,
                                                         add_bias_rows, column_tap_groups, conv_1x1_nhwc,
                                                         depthwise_nhwc, sum_taps)
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, NumpyTuning
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import ResidualActivation

# Units (``tuning``): ``bottleneck_band_bytes`` of expanded rows (a band of an image's output
# rows; each band expands one or two rows more than it filters and makes ~25 numpy calls, so small
# bands cost); with ``bottleneck_band_per_thread`` a single image large enough to share goes in one
# band per product thread whatever the band size; at most ``bottleneck_images_per_unit`` images
# when a batch's images expand whole within a band: every numpy call then covers them all, so the
# product threads make fewer, longer calls and wait less for the GIL.
#: Output positions per image below which the block runs as its three kernels.
MIN_FUSED_OUTPUTS = 196

_SCRATCH = ThreadScratch(16 << 20)


class BottleneckWeights:
    """The three convolutions' weights in the layouts the kernels take, kept for the objects last
    seen (constant initializers in practice), and biases tiled over rows of a given width."""

    def __init__(self) -> None:
        self.expand = PointwiseWeights()
        self.depthwise = DepthwiseWeights()
        self.project = PointwiseWeights()
        self._rows: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def bias_row(self, bias: np.ndarray, width: int) -> np.ndarray:
        """``bias`` tiled ``width`` times (a full operand: adding a broadcast one is slower)."""
        kept = self._rows.get((id(bias), width))
        if kept is None or kept[0] is not bias:  # the id of a collected array may come back
            kept = self._rows[(id(bias), width)] = (bias, np.tile(bias, width))
        return kept[1]


class Activation:
    """An activation name with its parameters: ``epilogue`` applies it in place (None for none)."""

    def __init__(self, name: str, params: Sequence[float]) -> None:
        self.epilogue = ResidualActivation(None, name, list(params)) if name else None
        self._activate = self.epilogue.activate if self.epilogue is not None else None

    def __call__(self, view: np.ndarray) -> None:
        if self._activate is not None:
            self._activate(view)


def inverted_bottleneck(x: np.ndarray, w1: np.ndarray, b1: np.ndarray | None, w2: np.ndarray,
                        b2: np.ndarray | None, w3: np.ndarray, b3: np.ndarray | None, z: np.ndarray | None,
                        stride: int, activations: Sequence[Activation], output: tuple[str, Sequence[float]],
                        weights: BottleneckWeights, tuning: NumpyTuning = DEFAULT_TUNING) -> np.ndarray:
    """``x`` (N, H, W, C_in) through a 1x1 convolution by ``w1`` (C_e, C_in, 1, 1), a 3x3 depthwise
    one by ``w2`` (C_e, 1, 3, 3) with pads 1 and ``stride``, and a 1x1 one by ``w3`` (C_out, C_e,
    1, 1), each with its bias; ``activations`` follow the first two, the residual ``z`` and the
    ``output`` activation the last. Returns (N, OH, OW, C_out)."""
    n, h, wd, _ = x.shape
    oh, ow = (h - 1) // stride + 1, (wd - 1) // stride + 1
    finish = ResidualActivation(z, *output) if z is not None or output[0] else None
    expand_act, depthwise_act = activations
    if oh * ow < MIN_FUSED_OUTPUTS:
        wt, row, augmented = weights.expand.get(w1, b1)
        expanded = conv_1x1_nhwc(x, wt, row, [1, 1], expand_act.epilogue, augmented, tuning)
        filtered = depthwise_nhwc(expanded, w2, b2, [stride, stride], [1, 1], [1, 1], [1, 1],
                                  depthwise_act.epilogue, weights.depthwise)
        wt, row, augmented = weights.project.get(w3, b3)
        return conv_1x1_nhwc(filtered, wt, row, [1, 1], finish, augmented, tuning)
    return _banded(x, w1, b1, w2, b2, w3, b3, stride, (oh, ow), activations, finish, weights, tuning)


def _banded(x: np.ndarray, w1: np.ndarray, b1: np.ndarray | None, w2: np.ndarray, b2: np.ndarray | None,
            w3: np.ndarray, b3: np.ndarray | None, s: int, out_sp: tuple[int, int],
            activations: Sequence[Activation], finish: ResidualActivation | None,
            weights: BottleneckWeights, tuning: NumpyTuning) -> np.ndarray:
    """The block in units of (image, band of output rows), each on a product thread."""
    n, h, wd, cin = x.shape
    ce, cout = w1.shape[0], w3.shape[0]
    oh, ow = out_sp
    dtype = x.dtype
    expand_act, depthwise_act = activations
    w_expand = weights.expand.get(w1, b1)[0]  # (C_in, C_e); biases are added per band
    w_project, project_row, folded = weights.project.get(w3, b3)
    if folded is not None:  # laid out to ride in the product (C_out >= 2 C_e): added per band here
        project_row = weights.bias_row(b3, BIAS_TILE)
    groups = column_tap_groups(3, s, 1)
    tiles, filter_row = weights.depthwise.get(w2, b2, ow, groups, dtype)
    pw = -(-(wd + 2) // s)  # columns of a column phase, pads included
    # phase t holds padded columns t, t + s, ...; its columns [lo, hi) hold input columns s*c + t - 1
    phases = []
    for t in range(s):
        lo, hi = -(-(1 - t) // s), -(-(wd + 1 - t) // s)
        first = s * lo + t - 1
        bias = None if b1 is None else weights.bias_row(b1, hi - lo)
        phases.append((t, lo, hi, slice(first, first + s * (hi - lo - 1) + 1, s), bias))
    macs = n * oh * ow * (s * s * cin * ce + 9 * ce * 4 + ce * cout)
    band_bytes = tuning.bottleneck_band_bytes
    rows = max(1, min(oh, band_bytes // (s * wd * ce * dtype.itemsize)))
    if tuning.bottleneck_band_per_thread and n == 1 and worth_sharing(macs):
        rows = -(-oh // PRODUCT_THREADS.threads)
    bands = -(-oh // rows)
    span = (rows - 1) * s + 3  # padded rows a full band reads
    row = pw * ce
    out = np.empty((n, oh, ow, cout), dtype=dtype)

    per_image = n >= 2 * PRODUCT_THREADS.threads  # enough images to share: fewer, larger units
    images = 1
    if per_image and bands == 1:  # small images: several to a unit, each numpy call covering them all
        images = _images_per_unit(n, PRODUCT_THREADS.threads, band_bytes // (oh * s * wd * ce * dtype.itemsize),
                                  tuning.bottleneck_images_per_unit)

    def unit(u: int) -> None:
        if images > 1:
            band_of(u * images, min(n, u * images + images), 0)
        elif per_image:
            for band in range(bands):
                band_of(u, u + 1, band)
        else:
            i, band = divmod(u, bands)
            band_of(i, i + 1, band)

    def band_of(i0: int, i1: int, band: int) -> None:
        """Output rows of ``band`` of images i0 .. i1 (several images only with one band)."""
        k = i1 - i0
        r0 = band * rows
        nr = min(oh, r0 + rows) - r0
        need = (nr - 1) * s + 3
        per = s * span * row + 2 * rows * ow * ce
        work = _SCRATCH.get(dtype, k * per)
        padded = work[:k * s * span * row].reshape(s, k, span, pw, ce)[:, :, :need]
        at = k * s * span * row
        filtered = work[at:at + k * nr * ow * ce].reshape(k, nr, ow * ce)
        part = work[at + k * rows * ow * ce:][:k * nr * ow * ce].reshape(k, nr, ow * ce)
        top = r0 * s - 1  # the input row of the band's first padded row
        a, b = max(0, top), min(h, top + need)
        if a > top:
            padded[:, :, :a - top] = 0
        if b < top + need:
            padded[:, :, b - top:] = 0
        for t, lo, hi, columns, bias in phases:
            plane = padded[t, :, a - top:b - top]
            if lo:
                plane[:, :, :lo] = 0
            if hi < pw:
                plane[:, :, hi:] = 0
            dst = plane[:, :, lo:hi]
            np.matmul(x[i0:i1, a:b, columns], w_expand, out=dst)
            if bias is not None:
                flat = dst.reshape(k, b - a, (hi - lo) * ce)  # rows of contiguous runs: a view
                flat += bias
            expand_act(dst)
        if k == 1:
            sum_taps(padded[:, 0], groups, tiles, s, 1, filtered[0], part[0])
        else:  # whole images (need == span): each image's phase rows follow the last's
            sum_taps(padded, groups, tiles, s, 1, filtered, part)
        if filter_row is not None:
            filtered += filter_row
        depthwise_act(filtered)
        target = out[i0:i1, r0:r0 + nr].reshape(k * nr * ow, cout)
        project(filtered.reshape(k * nr * ow, ce), w_project, target)
        if project_row is not None:
            add_bias_rows(target, project_row)
        if finish is not None:
            finish(out[i0:i1, r0:r0 + nr], (slice(i0, i1), slice(r0, r0 + nr)))

    # ndarray.dot dispatches faster than np.matmul, but takes only an output of its result's dtype
    project = np.ndarray.dot if w_project.dtype == dtype else np.matmul
    units = -(-n // images) if per_image else n * bands
    if not parallel_for(units, unit, macs):
        for u in range(units):
            unit(u)
    return out


def _images_per_unit(n: int, threads: int, fit: int, most: int) -> int:
    """Images per unit: at most ``most`` and ``fit`` (whose expanded rows fit a band), and
    the most that cut the batch into equal units, as many for every product thread (8 images, two
    threads: 4 or 2, not 3); 1 when none does."""
    for k in range(max(1, min(most, fit, n)), 1, -1):
        if n % k == 0 and (n // k) % threads == 0:
            return k
    return 1
