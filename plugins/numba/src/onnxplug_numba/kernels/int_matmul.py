"""Integer matrix products of 8-bit operands, ``(A - a_zero_point) @ (B - b_zero_point)`` summed
exactly in int32, with the output stages of MatMulInteger (int32), MatMulIntegerToFloat,
DynamicQuantizeMatMul and QGemm (float32: ``float32(acc [+ C]) * ((alpha * a_scale) * b_scale)
[+ bias]``) and QLinearMatMul / QGemm (requantized: ``rint(float32(acc [+ C]) * multiplier) +
y_zero_point``, clipped), in the numpy provider's (onnxruntime's) order of float operations.

B (K, N) is prepared once (:func:`prepare`): with AVX-512 VNNI as packed int8 (uint8 shifted by
-128, its zero points with it) with column sums (kernels/vnni.py), A's rows shifted to uint8 and
the zero points corrected after in int64; else as ``B - b_zero_point`` in int16, transposed, each
output one int16 dot product over a contiguous row (LLVM sums pairs of 16-bit products). The
sums wrap modulo 2**32 as onnxruntime's do. A zero point or scale of A has one entry or one per
row of each matrix (``rows``); of B one or one per column. Rows ``lo..hi`` per call (for threads).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from onnxplug_numba.kernels import quantize as kq
from onnxplug_numba.kernels import vnni

#: Output stages.
INT32, FLOAT, REQUANTIZE = 0, 1, 2
#: Rows of A per VNNI pass (bounds the int32 sums kept at once).
_CHUNK = 64


def prepare(b: np.ndarray, zero_point: np.ndarray | None, use_vnni: bool) -> tuple:  # type: ignore[type-arg]
    """B (K, N) 8-bit and its zero point (one, or one per column) in the form the products take:
    (packed, column sums, zero points per padded column as int32) with VNNI, else
    ((N, K) int16 ``B - zero_point``, and two empty placeholders)."""
    n = b.shape[1]
    zp = np.zeros(1, np.int32) if zero_point is None else np.asarray(zero_point).astype(np.int32).reshape(-1)
    if zp.size not in (1, n):
        raise ValueError(f"b_zero_point has {zp.size} values for {n} columns of B")
    if not use_vnni:
        centered = (b.astype(np.int16) - zp.astype(np.int16)).T
        return np.ascontiguousarray(centered), np.zeros(0, np.int32), np.zeros(0, np.int32)
    if b.dtype == np.uint8:
        b, zp = (b.astype(np.int16) - 128).astype(np.int8), zp - 128
    packed, colsum = vnni.pack(b)
    zps = np.zeros(colsum.size, np.int32)
    zps[:n] = zp
    return packed, colsum, zps


@njit(inline="always", cache=True)
def _pick(v, i):  # type: ignore[no-untyped-def]
    """v[i], or v's one value."""
    return v[i] if v.size > 1 else v[0]


@njit(inline="always", cache=True)
def _multipliers(rr, stage, sa, sb, alpha, ys, mult):  # type: ignore[no-untyped-def]
    """mult[n] = (alpha * a_scale) * b_scale[n] (divided by y_scale to requantize), float32."""
    s = alpha * np.float32(_pick(sa, rr))
    y = np.float32(ys[0])
    for n in range(mult.size):
        m = s * np.float32(_pick(sb, n))
        mult[n] = m / y if stage == REQUANTIZE else m


@njit(inline="always", cache=True)
def _finish(acc, r, rr, stage, mult, bias, has_bias, c, has_c, y_zp, y_lo, y_hi, out):  # type: ignore[no-untyped-def]
    """Row ``r`` (row ``rr`` of its matrix) of the output from its exact int32 sums ``acc``."""
    o = out[r]
    n_cols = o.size
    if has_c:
        cr = c[rr if c.shape[0] > 1 else 0]
        for n in range(n_cols):
            acc[n] = acc[n] + cr[n if cr.size > 1 else 0]
    if stage == INT32:
        for n in range(n_cols):
            o[n] = acc[n]
    elif stage == FLOAT:
        if has_bias:
            for n in range(n_cols):
                o[n] = np.float32(acc[n]) * mult[n] + bias[n]
        else:
            for n in range(n_cols):
                o[n] = np.float32(acc[n]) * mult[n]
    else:
        zp = np.float32(y_zp[0])
        for n in range(n_cols):
            v = np.rint(np.float32(acc[n]) * mult[n]) + zp
            o[n] = min(max(v, y_lo), y_hi)


@njit(nogil=True, error_model="numpy", cache=True)
def quantize(x, q, scale, zero_point):  # type: ignore[no-untyped-def]
    """DynamicQuantizeLinear of float32 ``x`` into uint8 ``q`` (same shape, contiguous); its scale
    and zero point into the one-value arrays ``scale`` and ``zero_point``."""
    s, zp = kq.dynamic_quantize(x.reshape(-1), q.reshape(-1))
    scale[0] = s
    zero_point[0] = np.int32(zp)


@njit(inline="always", cache=True)
def _rows_vnni(a, shift, azp, rows, packed, colsum, bzp, stage, sa, sb, alpha, ys, bias, has_bias, c, has_c,
               y_zp, y_lo, y_hi, lo, hi, out):  # type: ignore[no-untyped-def]
    """Rows lo..hi of ``out`` for A (M, K) 8-bit (``shift`` 128 for int8, 0 for uint8) and B
    prepared for VNNI; see the module docstring for the stages' parameters."""
    k = a.shape[1]
    n_cols = out.shape[1]
    q = np.zeros((min(_CHUNK, max(hi - lo, 1)), packed.shape[1] * 4), np.uint8)
    acc = np.empty((q.shape[0], colsum.size), np.int32)
    total = np.empty(q.shape[0], np.int64)
    mult = np.empty(n_cols, np.float32)
    if stage != INT32 and sa.size == 1:
        _multipliers(0, stage, sa, sb, alpha, ys, mult)
    for start in range(lo, hi, _CHUNK):
        count = min(hi, start + _CHUNK) - start
        for i in range(count):
            s = 0
            ar = a[start + i]
            qr = q[i]
            for j in range(k):
                v = np.int32(ar[j]) + shift
                qr[j] = np.uint8(v)
                s += v
            total[i] = s
        vnni.product(q[:count], packed, acc[:count])
        for i in range(count):
            r = start + i
            rr = r % rows
            za = np.int64(_pick(azp, rr)) + shift
            base = k * za
            row_acc = acc[i]
            t = total[i]
            for n in range(n_cols):
                zb = np.int64(bzp[n])
                row_acc[n] = np.int32(np.int64(row_acc[n]) - zb * t - za * np.int64(colsum[n]) + base * zb)
            if stage != INT32 and sa.size > 1:
                _multipliers(rr, stage, sa, sb, alpha, ys, mult)
            _finish(row_acc, r, rr, stage, mult, bias, has_bias, c, has_c, y_zp, y_lo, y_hi, out)


@njit(nogil=True, error_model="numpy", cache=True)
def rows_vnni(a, shift, azp, rows, packed, colsum, bzp, stage, sa, sb, alpha, ys, bias, has_bias, c, has_c,
              y_zp, y_lo, y_hi, lo, hi, out):  # type: ignore[no-untyped-def]
    """Rows lo..hi of ``out`` for A (M, K) 8-bit (``shift`` 128 for int8, 0 for uint8) and B
    prepared for VNNI; see the module docstring for the stages' parameters."""
    _rows_vnni(a, shift, azp, rows, packed, colsum, bzp, stage, sa, sb, alpha, ys, bias, has_bias, c, has_c,
               y_zp, y_lo, y_hi, lo, hi, out)


#: Placeholders of the parameters a stage does not read (one-call entries take fewer arguments).
_F1 = np.ones(1, np.float32)
_C1 = np.zeros((1, 1), np.int32)


@njit(nogil=True, error_model="numpy", cache=True)
def int32_vnni(a, shift, azp, rows, packed, colsum, bzp, out):  # type: ignore[no-untyped-def]
    """:func:`rows_vnni` of every row to int32 (MatMulInteger)."""
    _rows_vnni(a, shift, azp, rows, packed, colsum, bzp, INT32, _F1, _F1, np.float32(1), _F1, _F1, False, _C1,
               False, _F1, np.float32(0), np.float32(0), 0, a.shape[0], out)


@njit(nogil=True, error_model="numpy", cache=True)
def float_vnni(a, shift, azp, packed, colsum, bzp, sa, sb, bias, has_bias, out):  # type: ignore[no-untyped-def]
    """:func:`rows_vnni` of every row to float32 with per-tensor ``azp`` and ``sa``
    (MatMulIntegerToFloat)."""
    _rows_vnni(a, shift, azp, 1, packed, colsum, bzp, FLOAT, sa, sb, np.float32(1), _F1, bias, has_bias, _C1,
               False, _F1, np.float32(0), np.float32(0), 0, a.shape[0], out)


@njit(nogil=True, error_model="numpy", cache=True)
def dynamic_vnni(x, packed, colsum, bzp, sb, bias, has_bias, out):  # type: ignore[no-untyped-def]
    """DynamicQuantizeMatMul of every row: float32 ``x`` (M, K) quantized as DynamicQuantizeLinear,
    then :func:`rows_vnni` to float32 with ``a_scale * b_scale`` and ``bias``."""
    q = np.empty(x.shape, np.uint8)
    scale = np.empty(1, np.float32)
    zero_point = np.empty(1, np.int32)
    quantize(x, q, scale, zero_point)
    _rows_vnni(q, 0, zero_point, 1, packed, colsum, bzp, FLOAT, scale, sb, np.float32(1), _F1, bias, has_bias, _C1,
               False, _F1, np.float32(0), np.float32(0), 0, x.shape[0], out)


@njit(nogil=True, error_model="numpy", cache=True)
def rows_plain(a, azp, rows, bt, stage, sa, sb, alpha, ys, bias, has_bias, c, has_c, y_zp, y_lo, y_hi, lo, hi,
               out):  # type: ignore[no-untyped-def]
    """:func:`rows_vnni` with B as (N, K) int16 ``B - b_zero_point`` (no VNNI)."""
    k = a.shape[1]
    n_cols = out.shape[1]
    centered = np.empty(k, np.int16)
    acc = np.empty(n_cols, np.int32)
    mult = np.empty(n_cols, np.float32)
    if stage != INT32 and sa.size == 1:
        _multipliers(0, stage, sa, sb, alpha, ys, mult)
    for r in range(lo, hi):
        rr = r % rows
        za = np.int32(_pick(azp, rr))
        ar = a[r]
        for j in range(k):
            centered[j] = np.int16(np.int32(ar[j]) - za)
        for n in range(n_cols):
            w = bt[n]
            s = 0
            for j in range(k):
                s += np.int32(centered[j]) * np.int32(w[j])
            acc[n] = s
        if stage != INT32 and sa.size > 1:
            _multipliers(rr, stage, sa, sb, alpha, ys, mult)
        _finish(acc, r, rr, stage, mult, bias, has_bias, c, has_c, y_zp, y_lo, y_hi, out)
