"""2-D (and 1-D) convolution: im2col + batched GEMM over (image, group), 1x1 convolutions straight
into the GEMM, and a direct kernel for depthwise convolutions. Bias, residual and Relu/Clip are
applied in the store (the GEMM epilogue), so a Conv+BN+Add+Relu block is one launch after im2col.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from onnxplug_sdk import Node, output_size, resolve_pads

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.conv_direct import conv_direct, direct_applies
from onnxplug_opencl.engine.gemm import Epilogue, Operand, gemm
from onnxplug_opencl.engine.packed_gemm import RN, PanelOperand, gemm_packed, pack_rows, panel_count
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source


@dataclass(frozen=True)
class ConvGeometry:
    """Kernel size, strides, dilations, padding (begin, end) and groups of a 2-D convolution."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads_begin: tuple[int, int]
    pads_end: tuple[int, int]
    group: int

    def output_hw(self, h: int, w: int) -> tuple[int, int]:
        """Output height and width for an input of ``h`` x ``w``."""
        sizes = []
        for size, k, s, d, pb, pe in zip((h, w), self.kernel, self.strides, self.dilations,
                                         self.pads_begin, self.pads_end):
            if size + pb + pe < (k - 1) * d + 1:
                raise ValueError(f"convolution window {k} (dilation {d}) exceeds the padded input size "
                                 f"{size + pb + pe}")
            sizes.append(output_size(size, k, s, d, pb, pe))
        return sizes[0], sizes[1]


def cached_geometry(cache: dict[Any, ConvGeometry], node: Node, x_shape: Sequence[int],
                    w_shape: Sequence[int]) -> ConvGeometry:
    """:func:`geometry`, remembered in ``cache`` per input and weight shape (a kernel's own dict)."""
    key = (tuple(x_shape), tuple(w_shape))
    found = cache.get(key)
    if found is None:
        found = cache[key] = geometry(node, x_shape, w_shape)
    return found


def geometry(node: Node, x_shape: Sequence[int], w_shape: Sequence[int]) -> ConvGeometry:
    """The 2-D geometry of a Conv node (1-D convolutions get a unit first axis)."""
    spatial = [int(d) for d in x_shape[2:]]
    kernel = [int(k) for k in (node.attr("kernel_shape") or w_shape[2:])]
    strides = [int(s) for s in (node.attr("strides") or [1] * len(kernel))]
    dilations = [int(d) for d in (node.attr("dilations") or [1] * len(kernel))]
    begin, end = resolve_pads(node.attr("auto_pad"), spatial, kernel, strides, dilations, node.attr("pads"))
    if len(kernel) == 1:
        return ConvGeometry((1, kernel[0]), (1, strides[0]), (1, dilations[0]), (0, begin[0]), (0, end[0]),
                            int(node.attr("group", 1)))
    return ConvGeometry((kernel[0], kernel[1]), (strides[0], strides[1]), (dilations[0], dilations[1]),
                        (begin[0], begin[1]), (end[0], end[1]), int(node.attr("group", 1)))


@dataclass(frozen=True)
class PackedWeights:
    """Convolution weights packed once for ``gemm_packed.cl``: [G][ceil(M/G/RM)][C/G*KH*KW][RM]."""

    array: Any  # device array [G, packed elements]
    shape: tuple[int, ...]  # the original weight shape [M, C/G, KH(, KW)], as ``w.shape`` reads
    group: int

    @property
    def group_stride(self) -> int:
        """Elements between the packed weights of consecutive groups."""
        return int(self.array.shape[1])


def pack_weights(runtime: ClRuntime, w: np.ndarray, group: int) -> PackedWeights | None:
    """Pack constant weights for the panel GEMM (CPU devices; None where the direct depthwise kernel
    runs, on other devices, or for shapes the convolution will reject anyway)."""
    if runtime.entry.kind != "cpu" or (w.shape[1] == 1 and group > 1) or w.ndim not in (3, 4) \
            or group < 1 or w.shape[0] % group or w.size == 0:
        return None
    m = int(w.shape[0])
    host = pack_rows(np.ascontiguousarray(w).reshape(group, m // group, -1))
    return PackedWeights(runtime.to_device(host), tuple(int(d) for d in w.shape), group)


def _real(dtype: np.dtype) -> list[str]:
    return ["-DREAL=double", "-DREAL_IS_DOUBLE"] if dtype == np.float64 else ["-DREAL=float"]


def conv2d(runtime: ClRuntime, x: Any, w: Any, geo: ConvGeometry, epilogue: Epilogue | None = None,
           packed: PackedWeights | None = None) -> Any:
    """Convolve ``x`` [N, C, H, W] with ``w`` [M, C/group, KH, KW]; 3-D operands are 1-D convolutions.
    ``packed`` holds the same weights pre-packed (then ``w`` is only used for its shape)."""
    one_d = x.ndim == 3
    if one_d:
        x = movement.alias(runtime, x, (x.shape[0], x.shape[1], 1, x.shape[2]))
        w = movement.alias(runtime, w, (w.shape[0], w.shape[1], 1, w.shape[2]))
    n, c, h, wd = (int(d) for d in x.shape)
    m, cg = int(w.shape[0]), int(w.shape[1])
    g = geo.group
    if c != cg * g or m % g:
        raise ValueError(f"Conv: input channels {c}, weight {list(w.shape)} and group {g} do not match")
    oh, ow = geo.output_hw(h, wd)
    out = runtime.empty((n, m, oh, ow), x.dtype)
    epi = epilogue or Epilogue()
    if out.size:
        if cg == 1 and g > 1:
            _depthwise(runtime, x, w, out, geo, epi)
        else:
            _im2col_gemm(runtime, x, packed if packed is not None else w, out, geo, epi)
    return movement.alias(runtime, out, (n, m, ow)) if one_d else out


def _columns(runtime: ClRuntime, x: Any, geo: ConvGeometry, oh: int, ow: int) -> Any:
    """The [N][C*KH*KW][OH*OW] im2col matrix, or ``x`` itself for an unpadded 1x1 stride-1 convolution."""
    n, c, h, wd = (int(d) for d in x.shape)
    kh, kw = geo.kernel
    if (kh, kw) == (1, 1) and geo.strides == (1, 1) and geo.pads_begin == (0, 0) and geo.pads_end == (0, 0):
        return x
    p = oh * ow
    cols = runtime.empty((n, c * kh * kw, p), x.dtype)
    kernel = runtime.programs.kernel("im2col.cl", kernel_source("im2col.cl"), "im2col", _real(x.dtype))
    i32 = np.int32
    rows = n * c * kh * kw * oh
    runtime.launch(kernel, (rows,), None, i32(rows), x.base_data, i32(x.offset // x.dtype.itemsize),
                   cols.base_data, i32(c), i32(h), i32(wd), i32(oh), i32(ow), i32(kh), i32(kw),
                   i32(geo.strides[0]), i32(geo.strides[1]), i32(geo.pads_begin[0]), i32(geo.pads_begin[1]),
                   i32(geo.dilations[0]), i32(geo.dilations[1]),
                   label=f"im2col C={c} {h}x{wd} k={kh}x{kw} s={geo.strides[0]}" if runtime.profiling else "")
    return cols


def _packed_columns(runtime: ClRuntime, x: Any, geo: ConvGeometry, oh: int, ow: int) -> Any:
    """The im2col columns of every (image, group) in the B panel layout of ``gemm_packed.cl``:
    [N][G][ceil(OH*OW/16)][C/G*KH*KW][16]."""
    n, c, h, wd = (int(d) for d in x.shape)
    kh, kw = geo.kernel
    panels = panel_count(oh * ow, RN)
    out = runtime.empty((n, c * kh * kw * panels * RN), x.dtype)
    kernel = runtime.programs.kernel("im2col_packed.cl", kernel_source("im2col_packed.cl"), "im2col_packed",
                                     _real(x.dtype))
    i32 = np.int32
    total = n * c * panels
    runtime.launch(kernel, (total,), None, i32(total), x.base_data, i32(x.offset // x.dtype.itemsize),
                   out.base_data, i32(c), i32(h), i32(wd), i32(oh), i32(ow), i32(geo.group), i32(kh), i32(kw),
                   i32(geo.strides[0]), i32(geo.strides[1]), i32(geo.pads_begin[0]), i32(geo.pads_begin[1]),
                   i32(geo.dilations[0]), i32(geo.dilations[1]),
                   label=f"im2col_packed C={c} {h}x{wd} k={kh}x{kw} s={geo.strides[0]}" if runtime.profiling else "")
    return out


def _im2col_gemm(runtime: ClRuntime, x: Any, w: Any | PackedWeights, out: Any, geo: ConvGeometry,
                 epi: Epilogue) -> None:
    """Batched GEMM over (image, group) of the weights with the im2col columns."""
    n, c = int(x.shape[0]), int(x.shape[1])
    m = int(w.shape[0])
    oh, ow = int(out.shape[2]), int(out.shape[3])
    g = geo.group
    kh, kw = geo.kernel
    p, kg, mg = oh * ow, (c // g) * kh * kw, m // g
    if epi.bias is not None:
        epi.bias_sm, epi.bias_sn, epi.bias_s2 = 1, 0, mg
    if isinstance(w, PackedWeights) and w.group == g and kg > 0 and \
            direct_applies(geo, int(x.shape[2]), int(x.shape[3]), oh, ow):
        conv_direct(runtime, x, w, out, geo, epi)
        return
    if isinstance(w, PackedWeights) and w.group == g and kg > 0:
        panels = _packed_columns(runtime, x, geo, oh, ow)
        b_stride = panel_count(p, RN) * RN * kg
        gemm_packed(runtime, mg, p, kg, PanelOperand(w.array, 0, 0, w.group_stride),
                    PanelOperand(panels, 0, g * b_stride, b_stride), out, 0, p, m * p, mg * p,
                    batch=(n, g), epilogue=epi)
        return
    if isinstance(w, PackedWeights):
        raise ValueError(f"Conv: weights packed for {w.group} groups used with group {g}")
    cols = _columns(runtime, x, geo, oh, ow)
    b = Operand(cols, 0, p, c * kh * kw * p, kg * p)
    c_op = Operand(out, 0, p, m * p, mg * p)
    gemm(runtime, mg, p, kg, Operand(w, 0, kg, 0, mg * kg), b, c_op, batch=(n, g), epilogue=epi)


def _depthwise(runtime: ClRuntime, x: Any, w: Any, out: Any, geo: ConvGeometry, epi: Epilogue) -> None:
    n, c, h, wd = (int(d) for d in x.shape)
    m = int(w.shape[0])
    oh, ow = int(out.shape[2]), int(out.shape[3])
    options = _real(x.dtype) + [f"-DKH={geo.kernel[0]}", f"-DKW={geo.kernel[1]}"]
    if epi.bias is not None:
        options.append("-DHAS_BIAS")
    if epi.residual is not None:
        options.append("-DHAS_RESIDUAL")
    if epi.activation:
        options.append("-DACT_RELU" if epi.activation == "relu" else "-DACT_CLIP")
    kernel = runtime.programs.kernel("dwconv.cl", kernel_source("dwconv.cl"), "dwconv", options)
    i32, real = np.int32, x.dtype.type
    item = x.dtype.itemsize
    bias = epi.bias if epi.bias is not None else out
    residual = epi.residual if epi.residual is not None else out
    lo, hi = epi.clip
    info = np.finfo(x.dtype)
    rows = n * m * oh
    runtime.launch(kernel, (rows,), None, i32(rows), x.base_data, i32(x.offset // item),
                   w.base_data, i32(w.offset // item), bias.base_data, i32(bias.offset // item + epi.bias_offset),
                   residual.base_data, i32(residual.offset // item + epi.residual_offset), out.base_data,
                   i32(c), i32(h), i32(wd), i32(m), i32(m // c), i32(oh), i32(ow),
                   i32(geo.strides[0]), i32(geo.strides[1]), i32(geo.pads_begin[0]), i32(geo.pads_begin[1]),
                   i32(geo.dilations[0]), i32(geo.dilations[1]), real(max(lo, info.min)), real(min(hi, info.max)),
                   label=f"dwconv C={c} {h}x{wd} k={geo.kernel[0]}x{geo.kernel[1]} s={geo.strides[0]}"
                   if runtime.profiling else "")
