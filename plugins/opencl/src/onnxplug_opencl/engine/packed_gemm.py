"""Host side of ``kernels/gemm_packed.cl``: GEMM on operands pre-packed into micro-panels (CPU devices).

A (constant weights) is packed once on the host into [G][ceil(M/RM)][K][RM]; B is written by its
producer in [ceil(N/16)][K][16] (``im2col_packed.cl`` for convolutions). Neither layout depends on
the tile, so :func:`pick_panel_tiles` chooses the tile per product shape to keep both compute
units busy to the end: late ResNet layers have few, narrow columns and long k.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from onnxplug_opencl.engine.gemm import INT32_MAX, Epilogue
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.programs import kernel_source

RM = 6  # rows of the micro-tile (A panel width)
RN = 16  # columns of the micro-tile (B panel width)
KC = 256  # k chunk: an A panel chunk (6 KiB) and a B panel chunk (16 KiB) stay in L1
TILE_ROWS = (96, 48, 24)
TILE_COLUMNS = (128, 64, 32, 16)
# Seconds per multiply-add of one core, and per work-group: the scale of the cost model only
# matters relative to GROUP_OVERHEAD (the rate is a rough single-core PoCL figure).
_SECONDS_PER_FMA = 1 / 30e9
_GROUP_OVERHEAD = 3e-6


def panel_count(size: int, width: int) -> int:
    """Micro-panels of ``width`` needed for ``size`` rows (or columns)."""
    return -(-size // width)


def pack_rows(a: np.ndarray, rm: int = RM) -> np.ndarray:
    """Host packing of ``a`` [G, M, K] into [G][ceil(M/rm)][K][rm] (rows past M zero), flattened per G."""
    g, m, k = a.shape
    mp = panel_count(m, rm) * rm
    padded = np.zeros((g, mp, k), dtype=a.dtype)
    padded[:, :m] = a
    return np.ascontiguousarray(padded.reshape(g, mp // rm, rm, k).transpose(0, 1, 3, 2)).reshape(g, -1)


@dataclass(frozen=True)
class PanelTiles:
    """Rows x columns of C one work-group computes (multiples of RM and RN)."""

    tm: int
    tn: int


def _tile_cost(m: int, n: int, k: int, batch: int, tm: int, tn: int, units: int) -> float:
    """Estimated seconds: work-groups handed to the least busy unit in launch order, each costing
    its (padded) micro-tiles, with small tiles paying for re-reading their operand chunks. Half a
    group is added for the tail: on a shared machine a unit may fall behind, and finer groups
    let the other take over its share."""
    efficiency = 1.0 / (1.0 + 1.5 / tm + 2.0 / tn)
    costs = []
    for j in range(panel_count(n, tn)):
        cols = min(tn, panel_count(n - j * tn, RN) * RN)
        for i in range(panel_count(m, tm)):
            rows = min(tm, panel_count(m - i * tm, RM) * RM)
            costs.append(rows * cols * k * _SECONDS_PER_FMA / efficiency + _GROUP_OVERHEAD)
    busy = [0.0] * units
    for _ in range(batch):
        for cost in costs:
            heapq.heapreplace(busy, busy[0] + cost)
    return max(busy) + 0.5 * max(costs)


@lru_cache(maxsize=4096)
def pick_panel_tiles(m: int, n: int, k: int, batch: int, units: int) -> PanelTiles:
    """The tile with the smallest estimated time on ``units`` compute units."""
    best: tuple[float, PanelTiles] | None = None
    mp, np_ = panel_count(m, RM) * RM, panel_count(n, RN) * RN
    for tm in TILE_ROWS:
        for tn in TILE_COLUMNS:
            if (tm != TILE_ROWS[-1] and tm // 2 >= mp) or (tn != TILE_COLUMNS[-1] and tn // 2 >= np_):
                continue  # half the tile already covers every panel
            if np_ <= 64 and tn < np_:
                continue  # few columns: one column tile, so each row of A (long weights) is read once
            cost = _tile_cost(m, n, k, min(batch, 4 * units), tm, tn, units) * max(1, batch / (4 * units))
            if best is None or cost < best[0]:
                best = (cost, PanelTiles(tm, tn))
    assert best is not None
    return best[1]


@dataclass
class PanelOperand:
    """A packed operand: buffer, element offset and the two batch strides (in elements). An A
    operand with ``rows_ld`` set is not packed but row-major with that row stride."""

    array: Any
    offset: int = 0
    s1: int = 0
    s2: int = 0
    rows_ld: int = 0


def gemm_packed(runtime: ClRuntime, m: int, n: int, k: int, a: PanelOperand, b: PanelOperand, c: Any,
                c_offset: int, ldc: int, c_s1: int, c_s2: int, *, batch: tuple[int, int] = (1, 1),
                epilogue: Epilogue | None = None, tiles: PanelTiles | None = None) -> None:
    """Enqueue ``C[b1, b2] = act(A[b1, b2] @ B[b1, b2] + bias + residual)`` on packed A and B.

    ``c`` is the output array (row stride ``ldc``, batch strides ``c_s1``/``c_s2``); the epilogue's
    bias has one value per row (strides (1, 0), ``bias_s2`` between inner batch entries) or per
    column (strides (0, 1)), and alpha/beta are 1.
    """
    epi = epilogue or Epilogue()
    col_bias = epi.bias is not None and (epi.bias_sm, epi.bias_sn) == (0, 1)
    if epi.alpha != 1.0 or epi.beta != 1.0 or \
            (epi.bias is not None and not col_bias and (epi.bias_sm, epi.bias_sn) != (1, 0)):
        raise ValueError("the packed GEMM applies a bias per row or per column, without alpha or beta")
    nb1, nb2 = batch
    if m == 0 or n == 0 or k == 0 or nb1 * nb2 == 0:
        raise ValueError(f"packed GEMM needs non-empty operands, got {m}x{k} by {k}x{n}, batch {batch}")
    if max(m * k, n * k, c.size, a.array.size, b.array.size) > INT32_MAX:
        raise OverflowError(f"GEMM of {m}x{k} by {k}x{n} exceeds the 32-bit indexing of the OpenCL kernel")
    dtype = np.dtype(c.dtype)
    cfg = tiles or pick_panel_tiles(m, n, k, nb1 * nb2, max(1, runtime.entry.compute_units))
    options = ["-DREAL=double", "-DREAL_IS_DOUBLE"] if dtype == np.float64 else ["-DREAL=float"]
    options += [f"-DTM={cfg.tm}", f"-DTN={cfg.tn}", f"-DKC={KC}", f"-DRM={RM}", "-cl-mad-enable"]
    for flag, on in (("A_ROWS", a.rows_ld > 0), ("HAS_BIAS", epi.bias is not None and not col_bias),
                     ("HAS_COL_BIAS", col_bias),
                     ("HAS_RESIDUAL", epi.residual is not None),
                     ("ACT_RELU", epi.activation == "relu"), ("ACT_CLIP", epi.activation == "clip")):
        if on:
            options.append(f"-D{flag}")
    kernel = runtime.programs.kernel("gemm_packed.cl", kernel_source("gemm_packed.cl"), "gemm_packed", options)
    i32, real, item = np.int32, dtype.type, dtype.itemsize
    bias = epi.bias if epi.bias is not None else c
    residual = epi.residual if epi.residual is not None else c
    lo, hi = epi.clip
    info = np.finfo(dtype)
    groups = (panel_count(n, cfg.tn), panel_count(m, cfg.tm), nb1 * nb2)
    runtime.launch(kernel, groups, (1, 1, 1), i32(m), i32(n), i32(k),
                   a.array.base_data, i32(a.array.offset // item + a.offset), i32(a.rows_ld), i32(a.s1), i32(a.s2),
                   b.array.base_data, i32(b.array.offset // item + b.offset), i32(b.s1), i32(b.s2),
                   c.base_data, i32(c.offset // item + c_offset), i32(ldc), i32(c_s1), i32(c_s2), i32(nb2),
                   bias.base_data, i32(bias.offset // item + epi.bias_offset), i32(epi.bias_s2),
                   residual.base_data, i32(residual.offset // item + epi.residual_offset),
                   real(max(lo, info.min)), real(min(hi, info.max)),
                   label=f"gemm_packed M={m} N={n} K={k} batch={nb1 * nb2} tile={cfg.tm}x{cfg.tn}"
                   if runtime.profiling else "")


__all__ = ["KC", "RM", "RN", "PanelOperand", "PanelTiles", "gemm_packed", "pack_rows", "panel_count",
           "pick_panel_tiles"]
