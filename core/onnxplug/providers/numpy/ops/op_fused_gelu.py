"""com.onnxplug Gelu and BiasGelu (docs/fused-ops.md): erf or tanh GELU, optionally after adding a bias."""

from __future__ import annotations

import math

import numpy as np

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._special_math import erf
from onnxplug.providers.numpy.registry import op

_APPROXIMATIONS = ("none", "tanh")


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    """GELU of a float array in its dtype (float16 computed in float32); ``x`` is not modified."""
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    t = work.dtype.type
    if approximate == "tanh":
        inner = work * work
        inner *= t(0.044715)
        inner += t(1)
        inner *= work
        inner *= t(math.sqrt(2.0 / math.pi))
        core = np.tanh(inner, out=inner)
    else:
        core = erf(work * t(1.0 / math.sqrt(2.0)))
    core += t(1)
    core *= work
    core *= t(0.5)
    return core.astype(x.dtype, copy=False)


class _GeluBase(NumpyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("approximate", "none") in _APPROXIMATIONS


@op("Gelu", domain="com.onnxplug")
class Gelu(_GeluBase):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation with ``approximate="tanh"``."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        return gelu(x, self.attr("approximate", "none"))


@op("BiasGelu", domain="com.onnxplug")
class BiasGelu(_GeluBase):
    """Gelu(x + bias), bias a vector over the last axis."""

    def compute(self, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return gelu(x + bias, self.attr("approximate", "none"))
