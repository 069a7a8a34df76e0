"""com.onnxplug Gelu and BiasGelu (docs/fused-ops.md): erf or tanh GELU, optionally after adding a bias."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.runtime.blas import parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._special_math import gelu, gelu_erf32_into
from onnxplug.providers.numpy.registry import op

_APPROXIMATIONS = ("none", "tanh")
#: Values per block of rows. The float32 erf GELU (``gelu_erf32_into``) works in per-thread scratch
#: and writes each block into the output; its time per value falls with the block size up to 128K.
#: The other forms allocate their temporaries per block (16K: 320 KiB in all).
GELU_BLOCK_ELEMENTS = 128 * 1024
_OTHER_BLOCK_ELEMENTS = 16 * 1024
#: The float32 GELU's cost per value in multiply-adds of a product, so
#: that its blocks go to the product threads when they would make a product worth splitting.
GELU_MACS_PER_VALUE = 48


def gelu_in_blocks(x: np.ndarray, approximate: str, bias: np.ndarray | None = None) -> np.ndarray:
    """``gelu(x [+ bias])`` computed over blocks of whole rows (last axis)."""
    table = approximate == "none" and x.dtype == np.float32
    inner = x.shape[-1] if x.ndim else 1
    rows = x.size // inner if inner else 0
    step = max(1, (GELU_BLOCK_ELEMENTS if table else _OTHER_BLOCK_ELEMENTS) // max(inner, 1))
    if x.ndim < 1 or rows <= step:
        return gelu(x, approximate, bias)
    flat = x.reshape(rows, inner)
    if table:
        out = np.empty((rows, inner), dtype=np.float32)
        b = None if bias is None else bias.astype(np.float32, copy=False)

        def block(k: int) -> None:
            lo = k * step
            dst = out[lo:lo + step]
            gelu_erf32_into(flat[lo:lo + step] if b is None else np.add(flat[lo:lo + step], b, out=dst), dst)

        blocks = -(-rows // step)
        if not parallel_for(blocks, block, x.size * GELU_MACS_PER_VALUE):
            for k in range(blocks):
                block(k)
        return out.reshape(x.shape)
    first = gelu(flat[:step], approximate, bias)
    out = np.empty((rows, inner), dtype=first.dtype)
    out[:step] = first
    for lo in range(step, rows, step):
        out[lo:lo + step] = gelu(flat[lo:lo + step], approximate, bias)
    return out.reshape(x.shape)


class _GeluBase(NumpyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("approximate", "none") in _APPROXIMATIONS


@op("Gelu", domain="com.onnxplug")
class Gelu(_GeluBase):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation with ``approximate="tanh"``."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        return gelu_in_blocks(x, self.attr("approximate", "none"))


@op("BiasGelu", domain="com.onnxplug")
class BiasGelu(_GeluBase):
    """Gelu(x + bias), bias a vector over the last axis."""

    def compute(self, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return gelu_in_blocks(x, self.attr("approximate", "none"), bias)
