"""MobileNetV2's inverted residual block, channels-last, in bands of output rows
(com.onnxplug.nhwc InvertedBottleneck; providers/numpy/passes/inverted_bottleneck_fusion.py).

The block widens its input six times with a 1x1 convolution, filters the wide tensor with a 3x3
depthwise one and narrows it again with a 1x1 projection. Run as three kernels, the wide tensor
(4.8 MB an image for MobileNetV2's first block) goes through memory several times: written with
its activation, copied into the depthwise layer's padded scratch, read from there; at batch 8 two
cores compete for that bandwidth. Here each unit (an image's band
of output rows) expands just the input rows its band reads straight into the depthwise layer's
padded, column-phased scratch, filters them (``np.einsum`` over shifted runs, as
``depthwise_nhwc``) and projects the result into the output: each band of the wide tensor is used
right after it is made, instead of the whole tensor going through memory.

Measured in MobileNetV2 (Intel Xeon, 2 vCPUs), against the same blocks as three kernels (this op
with ``MIN_FUSED_OUTPUTS`` raised), rotating blocks of 3 runs with onnxruntime and 0.3 s pauses:
the whole model 0.952 at batch 1 (quartiles 0.910-0.990, 30 rounds) and 0.958 at batch 8
(0.928-0.988, 12 rounds), with 1 MB bands; per block at batch 8 (profile) the 28 x 28 and 14 x 14
ones took 0.72-0.89 of the three kernels' time, the two largest 0.90-1.00. Blocks with smaller
outputs gained nothing in a standalone sweep (their tensors fit the cache anyway) and lose their
threaded products, so they run as the three kernels one after another (``MIN_FUSED_OUTPUTS``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for, worth_sharing
from onnxplug.providers.numpy.kernels.conv.channels_last import (BIAS_TILE, DepthwiseWeights, PointwiseWeights,
                                                         add_bias_rows, column_tap_groups, conv_1x1_nhwc,
                                                         depthwise_nhwc, sum_taps)
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import ResidualActivation

#: Bytes of the expanded rows of one unit (a band of an image's output rows). Each band expands
#: one or two rows more than it filters and makes ~25 numpy calls, so small bands cost: MobileNetV2
#: paired at batch 8 / 1, 1 MB against 512 KB bands 0.820 / 0.937, 2 MB against 1 MB 0.95 / 0.99,
#: 4 MB against 2 MB 0.98 / 0.98 (within the noise: quartiles 0.90-1.05 and 0.91-1.10).
BAND_BYTES = 2 << 20
#: A single image large enough to share (``parallel_for``) goes in one band per product thread,
#: whatever BAND_BYTES says: alone, MobileNetV2's 56 x 56 24 -> 144 block took 1.20-1.24 ms in two
#: bands against 1.72-1.77 in one (and 1.40-1.45 in three or four), its stride-2 112 x 112 16 -> 96
#: one 1.46 against 1.77 in three; in the model at batch 1, paired: 0.956.
BAND_PER_THREAD = True
#: Most images a unit takes when a batch's images are small enough to expand whole within
#: BAND_BYTES: every numpy call then covers them all, so the two product threads make fewer,
#: longer calls and wait less for the GIL. MobileNetV2 at batch 8, per block alone (two threads,
#: 1 / 2 / 4 images a unit): 28 x 28 x 192 2943 / 2726 / 3242 us (4 exceed the cache), stride-2
#: 28 x 28 x 192 2192 / 1667 / 1871, 14 x 14 x 384 1887 / 1787 / 1696, 14 x 14 x 576 2967 / 2962 /
#: 2835. 1 gives a unit per image.
IMAGES_PER_UNIT = 4
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
        """``bias`` tiled ``width`` times (a full operand: adding a broadcast one is ~2x slower)."""
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
                        weights: BottleneckWeights) -> np.ndarray:
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
        expanded = conv_1x1_nhwc(x, wt, row, [1, 1], expand_act.epilogue, augmented)
        filtered = depthwise_nhwc(expanded, w2, b2, [stride, stride], [1, 1], [1, 1], [1, 1],
                                  depthwise_act.epilogue, weights.depthwise)
        wt, row, augmented = weights.project.get(w3, b3)
        return conv_1x1_nhwc(filtered, wt, row, [1, 1], finish, augmented)
    return _banded(x, w1, b1, w2, b2, w3, b3, stride, (oh, ow), activations, finish, weights)


def _banded(x: np.ndarray, w1: np.ndarray, b1: np.ndarray | None, w2: np.ndarray, b2: np.ndarray | None,
            w3: np.ndarray, b3: np.ndarray | None, s: int, out_sp: tuple[int, int],
            activations: Sequence[Activation], finish: ResidualActivation | None,
            weights: BottleneckWeights) -> np.ndarray:
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
    rows = max(1, min(oh, BAND_BYTES // (s * wd * ce * dtype.itemsize)))
    if BAND_PER_THREAD and n == 1 and worth_sharing(macs):
        rows = -(-oh // PRODUCT_THREADS.threads)
    bands = -(-oh // rows)
    span = (rows - 1) * s + 3  # padded rows a full band reads
    row = pw * ce
    out = np.empty((n, oh, ow, cout), dtype=dtype)

    per_image = n >= 2 * PRODUCT_THREADS.threads  # enough images to share: fewer, larger units
    images = 1
    if per_image and bands == 1:  # small images: several to a unit, each numpy call covering them all
        images = _images_per_unit(n, PRODUCT_THREADS.threads, BAND_BYTES // (oh * s * wd * ce * dtype.itemsize))

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


def _images_per_unit(n: int, threads: int, fit: int) -> int:
    """Images per unit: at most IMAGES_PER_UNIT and ``fit`` (whose expanded rows fit BAND_BYTES), and
    the most that cut the batch into equal units, as many for every product thread (8 images, two
    threads: 4 or 2, not 3); 1 when none does."""
    for k in range(max(1, min(IMAGES_PER_UNIT, fit, n)), 1, -1):
        if n % k == 0 and (n // k) % threads == 0:
            return k
    return 1
