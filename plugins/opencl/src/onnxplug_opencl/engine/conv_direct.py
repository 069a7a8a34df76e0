"""Host side of ``kernels/conv_direct.cl``: stride-1 convolutions as an implicit GEMM (CPU devices).

No im2col matrix: the kernel reads its B columns straight from the (zero padded) input planes,
at the cost of computing and dropping ``KW - 1`` extra columns per output row. That pays where
rows are long; :func:`direct_applies` keeps narrow outputs (7x7 with a 3x3 window) on im2col.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.engine.packed_gemm import RM, RN, panel_count, pick_panel_tiles
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source

#: Largest share of dropped columns (virtual over real) for which the direct kernel is used.
MAX_WASTE = 1.10
#: k values (channels x window) per chunk, as KC in gemm_packed.cl.
K_CHUNK = 256


def _real(dtype: np.dtype) -> list[str]:
    return ["-DREAL=double", "-DREAL_IS_DOUBLE"] if dtype == np.float64 else ["-DREAL=float"]


def direct_applies(geo: Any, h: int, w: int, oh: int, ow: int) -> bool:
    """Stride 1, and the padded row is at most ``MAX_WASTE`` times the output row."""
    if geo.strides != (1, 1) or oh <= 0 or ow <= 0:
        return False
    padded_w = w + geo.pads_begin[1] + geo.pads_end[1]
    virtual = (oh - 1) * padded_w + ow
    return virtual <= MAX_WASTE * oh * ow


def _padded_planes(runtime: ClRuntime, x: Any, geo: Any) -> tuple[Any, int, int, int]:
    """``x`` with its planes zero padded (``x`` itself without padding): array, offset, Hp, Wp."""
    n, c, h, w = (int(d) for d in x.shape)
    (pt, pl), (pb, pr) = geo.pads_begin, geo.pads_end
    item = x.dtype.itemsize
    if (pt, pl, pb, pr) == (0, 0, 0, 0):
        return x, x.offset // item, h, w
    hp, wp = h + pt + pb, w + pl + pr
    xp = runtime.empty((n, c, hp, wp), x.dtype)
    kernel = runtime.programs.kernel("conv_direct.cl", kernel_source("conv_direct.cl"), "pad_planes",
                                     _real(x.dtype) + ["-DTM=6", "-DTN=16", "-DCC=1", f"-DRM={RM}", "-DKH=1", "-DKW=1"])
    i32 = np.int32
    rows = n * c * hp
    runtime.launch(kernel, (rows,), None, i32(rows), x.base_data, i32(x.offset // item), xp.base_data,
                   i32(h), i32(w), i32(hp), i32(wp), i32(pt), i32(pl),
                   label=f"pad_planes C={c} {h}x{w}" if runtime.profiling else "")
    return xp, 0, hp, wp


def conv_direct(runtime: ClRuntime, x: Any, packed: Any, out: Any, geo: Any, epi: Epilogue) -> None:
    """Convolve ``x`` [N, C, H, W] with packed weights into ``out`` [N, M, OH, OW] (stride 1)."""
    n, c = int(x.shape[0]), int(x.shape[1])
    m = int(packed.shape[0])
    oh, ow = int(out.shape[2]), int(out.shape[3])
    g = geo.group
    kh, kw = geo.kernel
    cg, mg = c // g, m // g
    src, src_off, hp, wp = _padded_planes(runtime, x, geo)
    plane = hp * wp
    virtual = (oh - 1) * wp + ow
    p = oh * ow
    tiles = pick_panel_tiles(mg, virtual, cg * kh * kw, n * g, max(1, runtime.entry.compute_units))
    cc = max(1, K_CHUNK // (kh * kw))
    options = _real(x.dtype) + [f"-DTM={tiles.tm}", f"-DTN={tiles.tn}", f"-DCC={cc}", f"-DRM={RM}",
                                f"-DKH={kh}", f"-DKW={kw}", "-cl-mad-enable"]
    for flag, on in (("HAS_BIAS", epi.bias is not None), ("HAS_RESIDUAL", epi.residual is not None),
                     ("ACT_RELU", epi.activation == "relu"), ("ACT_CLIP", epi.activation == "clip")):
        if on:
            options.append(f"-D{flag}")
    kernel = runtime.programs.kernel("conv_direct.cl", kernel_source("conv_direct.cl"), "conv_direct", options)
    dtype = np.dtype(out.dtype)
    i32, real, item = np.int32, dtype.type, dtype.itemsize
    bias = epi.bias if epi.bias is not None else out
    residual = epi.residual if epi.residual is not None else out
    lo, hi = epi.clip
    info = np.finfo(dtype)
    groups = (panel_count(virtual, tiles.tn), panel_count(mg, tiles.tm), n * g)
    runtime.launch(kernel, groups, (1, 1, 1), i32(mg), i32(virtual), i32(cg), i32(wp), i32(plane), i32(ow),
                   i32(p), i32(geo.dilations[0]), i32(geo.dilations[1]),
                   packed.array.base_data, i32(packed.array.offset // item), i32(packed.group_stride),
                   src.base_data, i32(src_off), i32(c * plane), i32(cg * plane),
                   out.base_data, i32(out.offset // item), i32(m * p), i32(mg * p), i32(g),
                   bias.base_data, i32(bias.offset // item + epi.bias_offset), i32(mg),
                   residual.base_data, i32(residual.offset // item + epi.residual_offset),
                   real(max(lo, info.min)), real(min(hi, info.max)),
                   label=f"conv_direct M={m} C={c} {oh}x{ow} k={kh}x{kw} tile={tiles.tm}x{tiles.tn}"
                   if runtime.profiling else "")


__all__ = ["MAX_WASTE", "conv_direct", "direct_applies"]
