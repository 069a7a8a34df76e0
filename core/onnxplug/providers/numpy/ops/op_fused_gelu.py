"""com.onnxplug Gelu and BiasGelu (docs/fused-ops.md): erf or tanh GELU, optionally after adding a bias."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._blocks import by_row_blocks
from onnxplug.providers.numpy.ops._special_math import gelu
from onnxplug.providers.numpy.registry import op

_APPROXIMATIONS = ("none", "tanh")


class _GeluBase(NumpyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("approximate", "none") in _APPROXIMATIONS


@op("Gelu", domain="com.onnxplug")
class Gelu(_GeluBase):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation with ``approximate="tanh"``."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        approximate = self.attr("approximate", "none")
        return by_row_blocks(lambda block: gelu(block, approximate), x)


@op("BiasGelu", domain="com.onnxplug")
class BiasGelu(_GeluBase):
    """Gelu(x + bias), bias a vector over the last axis."""

    def compute(self, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
        approximate = self.attr("approximate", "none")
        return by_row_blocks(lambda block: gelu(block, approximate, bias), x)
