"""Register-blocked float32 product for the recurrences: ``acc += h @ R^T`` once per time step.

A step's product is small (batch x hidden times hidden x gates*hidden) and runs 32+ times in a
row, so BLAS's per-call packing of ``R^T`` would be paid every step. Here ``R^T`` is packed once
into panels of :data:`PANEL` columns, ``(panels, hidden, PANEL)``, and each step walks them with
an LLVM-level tile: up to 4 batch rows x 16 columns of ``acc`` held in eight vector registers
while the sum runs over ``hidden``, so each loaded panel vector feeds 4 FMAs and ``acc`` is read
and written once per step (the loop it replaces re-read and re-wrote ``acc`` every 4 terms).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: Floats per vector register the tile is written for (AVX); LLVM splits them on narrower SIMD.
_LANES = 8
#: Columns per packed panel of R^T: two vectors.
PANEL = 2 * _LANES
#: Batch rows per full tile (8 accumulators + 2 panel vectors + 1 broadcast fit in 16 registers).
TILE_ROWS = 4


def _make_tile(rows: int, group: int):  # type: ignore[no-untyped-def]
    """An intrinsic ``tile(h, lda, panels, k, acc, ldc)`` over ``group`` consecutive panels: for
    r < ``rows`` and c < group*PANEL, ``acc[r*ldc + c] += sum_{j<k} h[r*lda + j] * B[j, c]``, B's
    column c being column c % PANEL of panel c // PANEL (panels of k rows, one after another);
    h, panels, acc are float32 addresses (uintp), the strides counted in floats.

    Every tile shape adds the terms j = 0, 1, ... to ``acc`` in the same order with one FMA each,
    so a batch row's result does not depend on which tile (or thread's band) it falls in. Fewer
    rows take more panels instead, so there are always enough independent accumulators to hide
    the FMA latency."""

    @intrinsic
    def tile(typingctx, h, lda, panels, k, acc, ldc):  # type: ignore[no-untyped-def]
        sig = types.void(h, lda, panels, k, acc, ldc)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            f32, i64 = ir.FloatType(), ir.IntType(64)
            vec = ir.VectorType(f32, _LANES)
            fptr, vptr = f32.as_pointer(), vec.as_pointer()
            h_, lda_, p_, k_, a_, ldc_ = (context.cast(builder, v, t, types.int64)
                                          for v, t in zip(args, signature.args))
            hp, pp, ap = (builder.inttoptr(v, fptr) for v in (h_, p_, a_))
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec] * 3),
                                                 f"llvm.fma.v{_LANES}f32")
            zeros = ir.Constant(ir.VectorType(ir.IntType(32), _LANES), [0] * _LANES)
            undef = ir.Constant(vec, ir.Undefined)
            const = lambda n: ir.Constant(i64, n)  # noqa: E731

            def vector_at(base, index):  # type: ignore[no-untyped-def]
                return builder.bitcast(builder.gep(base, [index]), vptr)

            width = group * PANEL // _LANES  # vectors per row of the tile
            panel_size = builder.mul(k_, const(PANEL))
            # accumulators in entry-block allocas: LLVM promotes them to registers
            slots, targets = [], []
            for r in range(rows):
                row = builder.mul(const(r), ldc_)
                for v in range(width):
                    ptr = vector_at(ap, builder.add(row, const(v * _LANES)))
                    slot = cgutils.alloca_once(builder, vec)
                    builder.store(builder.load(ptr, align=4), slot)
                    slots.append(slot)
                    targets.append(ptr)
            with cgutils.for_range(builder, k_) as loop:
                j = loop.index
                base = builder.mul(j, const(PANEL))
                cols = []
                for v in range(width):
                    panel, lane = divmod(v * _LANES, PANEL)
                    at = builder.add(builder.add(builder.mul(const(panel), panel_size), base), const(lane))
                    cols.append(builder.load(vector_at(pp, at), align=4))
                for r in range(rows):
                    s = builder.load(builder.gep(hp, [builder.add(builder.mul(const(r), lda_), j)]), align=4)
                    splat = builder.shuffle_vector(builder.insert_element(undef, s, ir.Constant(ir.IntType(32), 0)),
                                                   undef, zeros)
                    for v, col in enumerate(cols):
                        slot = slots[r * width + v]
                        builder.store(builder.call(fma, [splat, col, builder.load(slot)]), slot)
            for slot, ptr in zip(slots, targets):
                builder.store(builder.load(slot), ptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return tile


# (rows, panels): 8 accumulators each but the 3-row tile's 6
_tile4 = _make_tile(4, 1)
_tile3 = _make_tile(3, 1)
_tile2, _tile2_one = _make_tile(2, 2), _make_tile(2, 1)
_tile1, _tile1_one = _make_tile(1, 4), _make_tile(1, 1)


def pack_panels(rt: np.ndarray) -> np.ndarray:
    """R^T (hidden, gates*hidden) as panels (ceil(cols/PANEL), hidden, PANEL), zero-padded."""
    hidden, cols = rt.shape
    panels = -(-cols // PANEL)
    padded = np.zeros((hidden, panels * PANEL), dtype=np.float32)
    padded[:, :cols] = rt
    return np.ascontiguousarray(padded.reshape(hidden, panels, PANEL).transpose(1, 0, 2))


@njit(inline="always")
def add_panel_products(acc, panels, h, first, last):  # type: ignore[no-untyped-def]
    """acc[:, first*PANEL:last*PANEL] += h @ (the panels first..last-1) for C-contiguous float32
    acc (B, >= last*PANEL), panels (P, H, PANEL), h (B, H)."""
    batch, hidden = h.shape
    ldc = acc.shape[1]
    size = 4 * hidden * PANEL  # bytes per panel
    full = batch - batch % TILE_ROWS
    rest = batch - full
    hb = h.ctypes.data + 4 * full * hidden
    for p in range(first, last):
        panel = panels.ctypes.data + p * size
        col = acc.ctypes.data + 4 * p * PANEL
        for b in range(0, full, TILE_ROWS):
            _tile4(h.ctypes.data + 4 * b * hidden, hidden, panel, hidden, col + 4 * b * ldc, ldc)
        if rest == 3:
            _tile3(hb, hidden, panel, hidden, col + 4 * full * ldc, ldc)
    if rest == 1 or rest == 2:  # a few rows: several panels per tile, then the panels left over
        group = 4 if rest == 1 else 2
        whole = first + (last - first) // group * group
        for p in range(first, whole, group):
            cb = acc.ctypes.data + 4 * (p * PANEL + full * ldc)
            if rest == 1:
                _tile1(hb, hidden, panels.ctypes.data + p * size, hidden, cb, ldc)
            else:
                _tile2(hb, hidden, panels.ctypes.data + p * size, hidden, cb, ldc)
        for p in range(whole, last):
            cb = acc.ctypes.data + 4 * (p * PANEL + full * ldc)
            if rest == 1:
                _tile1_one(hb, hidden, panels.ctypes.data + p * size, hidden, cb, ldc)
            else:
                _tile2_one(hb, hidden, panels.ctypes.data + p * size, hidden, cb, ldc)
