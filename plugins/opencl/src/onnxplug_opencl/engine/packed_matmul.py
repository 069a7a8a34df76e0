"""Products with constant 2-D weights (``x @ W``: linear layers) on the panel GEMM (CPU devices).

``W`` is packed once into 16-column panels at session creation; the activations are read in place
(``-DA_ROWS``: six row pointers per micro-tile), so ``gemm_packed.cl``'s work-groups only multiply,
where the plain tiled GEMM re-packs both operands in every work-group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.engine.packed_gemm import RN, PanelOperand, gemm_packed, pack_rows
from onnxplug_opencl.runtime.context import ClRuntime

_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64))


@dataclass(frozen=True)
class PackedColumns:
    """A constant [K, N] matrix packed as [ceil(N/16)][K][16] on the device."""

    array: Any
    k: int
    n: int
    dtype: np.dtype


def pack_columns(runtime: ClRuntime, w: np.ndarray | None) -> PackedColumns | None:
    """Pack constant weights ``w`` [K, N] (CPU devices, float types; None otherwise)."""
    if w is None or runtime.entry.kind != "cpu" or w.ndim != 2 or np.dtype(w.dtype) not in _TYPES or w.size == 0:
        return None
    k, n = (int(d) for d in w.shape)
    host = pack_rows(np.ascontiguousarray(w.T)[None], RN).reshape(-1)
    return PackedColumns(runtime.to_device(host), k, n, np.dtype(w.dtype))


def matmul_packed(runtime: ClRuntime, a: Any, b: PackedColumns, epilogue: Epilogue | None = None) -> Any | None:
    """``a @ W`` for ``a`` [..., M, K] (contiguous) with the epilogue's column
    bias, residual ([..., M, N]) and activation; None where this path does not apply."""
    epi = epilogue or Epilogue()
    rows = math.prod(int(d) for d in a.shape[:-1]) if a.ndim >= 2 else 0
    if a.ndim < 2 or int(a.shape[-1]) != b.k or np.dtype(a.dtype) != b.dtype or rows < 1 \
            or not a.flags.c_contiguous or epi.alpha != 1.0 or epi.beta != 1.0:
        return None
    if epi.bias is not None and ((epi.bias_sm, epi.bias_sn) != (0, 1) or epi.bias_offset):
        return None
    if epi.residual is not None and (tuple(epi.residual.shape) != tuple(a.shape[:-1]) + (b.n,)
                                     or not epi.residual.flags.c_contiguous):
        return None
    out = runtime.empty(tuple(int(d) for d in a.shape[:-1]) + (b.n,), a.dtype)
    gemm_packed(runtime, rows, b.n, b.k, PanelOperand(a, rows_ld=b.k), PanelOperand(b.array), out, 0, b.n, 0, 0,
                epilogue=epi)
    return out


__all__ = ["PackedColumns", "matmul_packed", "pack_columns"]
