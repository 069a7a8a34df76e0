"""uint8 x int8 products summed in int32 with AVX-512 VNNI's ``vpdpbusd`` (four byte products
added into each 32-bit lane per instruction), for CPUs that have it (``AVAILABLE``).

The int8 right operand (K, N) is packed once into groups of 64 columns: (N/64, K/4, 64, 4),
zero-padded, so one step of the inner loop broadcasts four left-operand bytes and multiplies them
into four vectors of 16 columns (four independent sums, which hides the instruction's latency).
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
    except Exception:  # pragma: no cover - a host llvmlite cannot describe
        return False


AVAILABLE = _available()


@intrinsic
def _dot_group(typingctx, acc, a, w, w_offset, k4):  # type: ignore[no-untyped-def]
    """acc[0:64] = sum over j < k4 of a[4j:4j+4] . w[w_offset + 256j:][column, 0:4] per column;
    acc int32, a uint8, w (flat packed) int8, all contiguous."""
    sig = types.void(acc, a, w, types.intp, types.intp)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        acc_data = context.make_array(signature.args[0])(context, builder, args[0]).data
        a_data = context.make_array(signature.args[1])(context, builder, args[1]).data
        w_data = context.make_array(signature.args[2])(context, builder, args[2]).data
        i32, i8 = ir.IntType(32), ir.IntType(8)
        vec, bytes_ = ir.VectorType(i32, LANES), ir.VectorType(i8, 4 * LANES)
        dpbusd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vec, [vec, bytes_, bytes_]),
                                                "llvm.x86.avx512.vpdpbusd.512")
        sums = [cgutils.alloca_once_value(builder, ir.Constant(vec, None)) for _ in range(GROUP)]
        a_words = builder.bitcast(a_data, i32.as_pointer())
        w_base = builder.gep(w_data, [args[3]])
        with cgutils.for_range(builder, args[4]) as loop:
            j = loop.index
            word = builder.load(builder.gep(a_words, [j]), align=1)
            spread = builder.insert_element(ir.Constant(vec, ir.Undefined), word, ir.Constant(i32, 0))
            spread = builder.bitcast(builder.shuffle_vector(spread, ir.Constant(vec, ir.Undefined),
                                                            ir.Constant(vec, [0] * LANES)), bytes_)
            step = builder.mul(j, ir.Constant(j.type, 4 * COLUMNS))
            for g in range(GROUP):
                at = builder.gep(w_base, [builder.add(step, ir.Constant(j.type, 4 * LANES * g))])
                weights = builder.load(builder.bitcast(at, bytes_.as_pointer()), align=1)
                builder.store(builder.call(dpbusd, [builder.load(sums[g]), spread, weights]), sums[g])
        out = builder.bitcast(acc_data, vec.as_pointer())
        for g in range(GROUP):
            builder.store(builder.load(sums[g]), builder.gep(out, [ir.Constant(i32, g)]), align=4)
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always", cache=True)
def row_product(q, packed, acc):  # type: ignore[no-untyped-def]
    """acc[n] = sum_k q[k] * w[k, n] (int32, wrapping) for every padded column n: q uint8 (4 * K/4,
    zero-padded), packed (N/64, K/4, 64, 4) int8, acc (N/64 * 64) int32."""
    groups, k4 = packed.shape[0], packed.shape[1]
    flat = packed.reshape(-1)
    for g in range(groups):
        _dot_group(acc[g * COLUMNS:(g + 1) * COLUMNS], q, flat, g * k4 * 4 * COLUMNS, k4)


def pack(signed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 (K, N) packed as :func:`row_product` takes it, and its column sums (int32, N padded)."""
    k, n = signed.shape
    k4, groups = -(-k // 4), -(-n // COLUMNS)
    padded = np.zeros((k4 * 4, groups * COLUMNS), np.int8)
    padded[:k, :n] = signed
    packed = np.ascontiguousarray(padded.reshape(k4, 4, groups, COLUMNS).transpose(2, 0, 3, 1))
    return packed, padded.sum(axis=0, dtype=np.int64).astype(np.int32)
