"""uint8 x int8 products summed in int32 with AVX-512 VNNI's ``vpdpbusd`` (four byte products
added into each 32-bit lane per instruction), for CPUs that have it (``AVAILABLE``).

The int8 right operand (K, N) is packed once into groups of 64 columns: (N/64, K/4, 64, 4),
zero-padded, so one step of the inner loop broadcasts four bytes of each of up to 4 left-operand
rows and multiplies them into four vectors of 16 columns (independent sums, which hide the
instruction's latency; the weights are loaded once for all the rows).
The sums wrap modulo 2**32 like the hardware's, so callers' corrections for zero points are exact
wherever the true result fits int32.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic

LANES = 16
GROUP = 4
#: Columns of one packed group.
COLUMNS = LANES * GROUP


def _available() -> bool:
    """Whether numba compiles for this CPU (not a configured other target) and it has AVX-512 VNNI."""
    if config.CPU_NAME not in (None, "", "host") or config.CPU_FEATURES:
        return False
    try:
        return bool(llvm.get_host_cpu_features().get("avx512vnni", False))
    except RuntimeError:  # pragma: no cover - a host llvmlite cannot describe
        return False


AVAILABLE = _available()


def _dot_groups(rows: int, vectors: int = GROUP):  # type: ignore[no-untyped-def]
    """The intrinsic for ``rows`` left-operand rows at once (each weight vector loaded once for
    all of them): acc[row + i, col:col + 64] = sum over j < k4 of a[a_row + i, 4j:4j+4] .
    w[w_offset + 256j:][column, 0:4] per column; acc int32 and a uint8 2-D with contiguous rows,
    w the flat packed int8. ``vectors`` (of 16 columns) per group: 64 columns by default, fewer
    for narrow products (packed by :func:`pack` with that many columns)."""

    @intrinsic
    def dot(typingctx, acc, row, col, a, a_row, w, w_offset, k4):  # type: ignore[no-untyped-def]
        sig = types.void(acc, types.intp, types.intp, a, types.intp, w, types.intp, types.intp)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            acc_arr = context.make_array(signature.args[0])(context, builder, args[0])
            a_arr = context.make_array(signature.args[3])(context, builder, args[3])
            w_data = context.make_array(signature.args[5])(context, builder, args[5]).data
            i32, i8 = ir.IntType(32), ir.IntType(8)
            vec, bytes_ = ir.VectorType(i32, LANES), ir.VectorType(i8, 4 * LANES)
            dpbusd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, bytes_, bytes_]),
                                                    "llvm.x86.avx512.vpdpbusd.512")
            acc_stride = cgutils.unpack_tuple(builder, acc_arr.strides, 2)[0]
            a_stride = cgutils.unpack_tuple(builder, a_arr.strides, 2)[0]
            acc_bytes = builder.bitcast(acc_arr.data, i8.as_pointer())
            a_bytes = builder.bitcast(a_arr.data, i8.as_pointer())
            col_bytes = builder.mul(args[2], ir.Constant(args[2].type, 4))
            outs, words = [], []
            for i in range(rows):
                acc_at = builder.add(builder.mul(builder.add(args[1], ir.Constant(args[1].type, i)), acc_stride),
                                     col_bytes)
                outs.append(builder.bitcast(builder.gep(acc_bytes, [acc_at]), vec.as_pointer()))
                a_at = builder.mul(builder.add(args[4], ir.Constant(args[4].type, i)), a_stride)
                words.append(builder.bitcast(builder.gep(a_bytes, [a_at]), i32.as_pointer()))
            sums = [[cgutils.alloca_once_value(builder, ir.Constant(vec, None)) for _ in range(vectors)]
                    for _ in range(rows)]
            w_base = builder.gep(w_data, [args[6]])
            with cgutils.for_range(builder, args[7]) as loop:
                j = loop.index
                step = builder.mul(j, ir.Constant(j.type, 4 * LANES * vectors))
                weights = []
                for g in range(vectors):
                    at = builder.gep(w_base, [builder.add(step, ir.Constant(j.type, 4 * LANES * g))])
                    weights.append(builder.load(builder.bitcast(at, bytes_.as_pointer()), align=1))
                for i in range(rows):
                    word = builder.load(builder.gep(words[i], [j]), align=1)
                    spread = builder.insert_element(ir.Constant(vec, ir.Undefined), word, ir.Constant(i32, 0))
                    spread = builder.bitcast(builder.shuffle_vector(spread, ir.Constant(vec, ir.Undefined),
                                                                    ir.Constant(vec, [0] * LANES)), bytes_)
                    for g in range(vectors):
                        total = builder.call(dpbusd, [builder.load(sums[i][g]), spread, weights[g]])
                        builder.store(total, sums[i][g])
            for i in range(rows):
                for g in range(vectors):
                    builder.store(builder.load(sums[i][g]), builder.gep(outs[i], [ir.Constant(i32, g)]), align=4)
            return context.get_dummy_value()

        return sig, codegen

    return dot


#: Rows of the left operand per pass over the weights (4 x 4 sums of 16 lanes fill half the registers).
ROWS = 4
_dot_one = _dot_groups(1)
_dot_rows = _dot_groups(ROWS)


@njit(inline="always", cache=True)
def product(q, packed, acc):  # type: ignore[no-untyped-def]
    """acc[r, n] = sum_k q[r, k] * w[k, n] (int32, wrapping) for every padded column n: q uint8
    (rows, 4 * K/4, zero-padded), packed (N/64, K/4, 64, 4) int8, acc (rows, N/64 * 64) int32; the
    rows of q and acc contiguous."""
    groups, k4 = packed.shape[0], packed.shape[1]
    flat = packed.reshape(-1)
    rows = q.shape[0]
    full = rows - rows % ROWS
    for g in range(groups):
        offset = g * k4 * 4 * COLUMNS
        for r in range(0, full, ROWS):
            _dot_rows(acc, r, g * COLUMNS, q, r, flat, offset, k4)
        for r in range(full, rows):
            _dot_one(acc, r, g * COLUMNS, q, r, flat, offset, k4)


def pack(signed: np.ndarray, columns: int = COLUMNS) -> tuple[np.ndarray, np.ndarray]:
    """int8 (K, N) packed as :func:`product` takes it (or, with ``columns`` 16 or 32, as
    :func:`product_narrow`), and its column sums (int32, N padded)."""
    k, n = signed.shape
    k4, groups = -(-k // 4), -(-n // columns)
    padded = np.zeros((k4 * 4, groups * columns), np.int8)
    padded[:k, :n] = signed
    packed = np.ascontiguousarray(padded.reshape(k4, 4, groups, columns).transpose(2, 0, 3, 1))
    return packed, padded.sum(axis=0, dtype=np.int64).astype(np.int32)


_dot_one_16, _dot_rows_16 = _dot_groups(1, 1), _dot_groups(ROWS, 1)
_dot_one_32, _dot_rows_32 = _dot_groups(1, 2), _dot_groups(ROWS, 2)


@njit(inline="always", cache=True)
def product_narrow(q, packed, acc, vectors):  # type: ignore[no-untyped-def]
    """:func:`product` on weights packed in groups of ``vectors`` (1 or 2) x 16 columns:
    (N/(16*vectors), K/4, 16*vectors, 4)."""
    groups, k4 = packed.shape[0], packed.shape[1]
    flat = packed.reshape(-1)
    rows = q.shape[0]
    full = rows - rows % ROWS
    for g in range(groups):
        offset = g * k4 * 4 * LANES * vectors
        col = g * vectors * LANES
        for r in range(0, full, ROWS):
            if vectors == 1:
                _dot_rows_16(acc, r, col, q, r, flat, offset, k4)
            else:
                _dot_rows_32(acc, r, col, q, r, flat, offset, k4)
        for r in range(full, rows):
            if vectors == 1:
                _dot_one_16(acc, r, col, q, r, flat, offset, k4)
            else:
                _dot_one_32(acc, r, col, q, r, flat, offset, k4)
