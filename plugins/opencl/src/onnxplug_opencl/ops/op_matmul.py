"""MatMul (numpy broadcasting of batch dimensions) and Gemm, on the tiled GEMM."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.gemm import Epilogue, Operand, gemm
from onnxplug_opencl.engine.packed_matmul import matmul_packed, pack_columns
from onnxplug_opencl.ops._base import ClKernel, dtypes_in
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry

_GEMM_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def _float_only(node: Node, view: GraphView) -> bool | Decline:
    return dtypes_in(node, view, _GEMM_TYPES)


def batch_levels(batch: tuple[int, ...], sa: list[int], sb: list[int], sc: list[int]) -> list[tuple[int, int, int, int]]:
    """Merge batch axes whose strides chain, dropping size-1 axes: (size, stride_a, stride_b, stride_c)."""
    levels: list[tuple[int, int, int, int]] = []
    for d, a, b, c in zip(batch, sa, sb, sc):
        if d == 1:
            continue
        if levels:
            pd, pa, pb, pc = levels[-1]
            if pa == a * d and pb == b * d and pc == c * d:
                levels[-1] = (pd * d, a, b, c)
                continue
        levels.append((d, a, b, c))
    return levels


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``a @ b`` under numpy's rules."""
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    return batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


def matmul(runtime: Any, a: Any, b: Any, epilogue: Epilogue | None = None) -> Any:
    """``a @ b`` with numpy's rules for 1-D operands and broadcast batch dimensions."""
    a_shape, b_shape = list(a.shape), list(b.shape)
    if len(a_shape) == 1:
        a_shape = [1] + a_shape
    if len(b_shape) == 1:
        b_shape = b_shape + [1]
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2:
        raise ValueError(f"MatMul: inner dimensions differ: {list(a.shape)} @ {list(b.shape)}")
    batch = tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    out_full = list(batch) + [m, n]
    out = runtime.empty(tuple(out_full), a.dtype)
    rank = len(batch)

    def strides(shape: list[int], inner: int) -> list[int]:
        pad = [1] * (rank - len(shape) + 2) + shape[:-2]
        st, acc = [], inner
        for d in reversed(pad):
            st.append(acc)
            acc *= d
        st = st[::-1]
        return [0 if d == 1 else s for d, s in zip(pad, st)]

    sa, sb = strides(a_shape, m * k), strides(b_shape, k * n)
    sc = strides(out_full, m * n)
    levels = batch_levels(batch, sa, sb, sc)
    if levels and all(lv[2] == 0 for lv in levels) and len(levels) == 1 and levels[0][1] == m * k:
        # Weights shared by the whole batch and A contiguous: one tall GEMM instead of a batch.
        size = levels[0][0]
        gemm(runtime, size * m, n, k, Operand(a, 0, k), Operand(b, 0, n), Operand(out, 0, n), epilogue=epilogue)
    else:
        while len(levels) < 2:
            levels.insert(0, (1, 0, 0, 0))
        outer, (d1, a1, b1, c1), (d2, a2, b2, c2) = levels[:-2], levels[-2], levels[-1]
        for index in np.ndindex(*[lv[0] for lv in outer]) if outer else [()]:
            oa = sum(i * lv[1] for i, lv in zip(index, outer))
            ob = sum(i * lv[2] for i, lv in zip(index, outer))
            oc = sum(i * lv[3] for i, lv in zip(index, outer))
            gemm(runtime, m, n, k, Operand(a, oa, k, a1, a2), Operand(b, ob, n, b1, b2), Operand(out, oc, n, c1, c2),
                 batch=(d1, d2), epilogue=epilogue)
    final = list(batch) + ([m] if len(a.shape) > 1 else []) + ([n] if len(b.shape) > 1 else [])
    return movement.alias(runtime, out, tuple(final)) if tuple(final) != tuple(out_full) else out


@OpenCLProvider.kernel("MatMul")
class MatMul(ClKernel):
    """Batched matrix product (float32, and float64 on fp64 devices)."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return _float_only(node, view)

    def __init__(self, node: Node, context: Any) -> None:
        super().__init__(node, context)
        self.packed_b = pack_columns(self.rt, self.constant(1))

    def compute(self, a: Any, b: Any) -> Any:
        if self.packed_b is not None:
            out = matmul_packed(self.rt, a, self.packed_b)
            if out is not None:
                return out
        return matmul(self.rt, a, b)


def bias_strides(c_shape: tuple[int, ...], m: int, n: int) -> tuple[int, int]:
    """Element strides (per row, per column) reading a bias broadcast unidirectionally to (m, n)."""
    shape = [1] * (2 - len(c_shape)) + [int(d) for d in c_shape]
    cm, cn = shape
    if cm not in (1, m) or cn not in (1, n):
        raise ValueError(f"Gemm: C of shape {list(c_shape)} does not broadcast to ({m}, {n})")
    return (cn if cm != 1 else 0), (1 if cn != 1 else 0)


@OpenCLProvider.kernel("Gemm")
class Gemm(ClKernel):
    """``alpha * op(A) @ op(B) + beta * C`` with C broadcast, in one GEMM launch."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return _float_only(node, view)

    def compute(self, a: Any, b: Any, c: Any = None) -> Any:
        trans_a, trans_b = bool(self.attr("transA", 0)), bool(self.attr("transB", 0))
        m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
        n = b.shape[0] if trans_b else b.shape[1]
        out = self.empty((m, n), a.dtype)
        epi = Epilogue(alpha=float(self.attr("alpha", 1.0)), beta=float(self.attr("beta", 1.0)))
        if c is not None and epi.beta != 0:
            epi.bias = c
            epi.bias_sm, epi.bias_sn = bias_strides(tuple(c.shape), int(m), int(n))
        gemm(self.rt, int(m), int(n), int(k), Operand(a, 0, int(a.shape[1])), Operand(b, 0, int(b.shape[1])),
             Operand(out, 0, int(n)), trans_a=trans_a, trans_b=trans_b, epilogue=epi)
        return out

