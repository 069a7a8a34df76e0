"""com.onnxplug MultiHeadAttention (docs/fused-ops.md): softmax(Q K^T * scale + bias) V per head."""

from __future__ import annotations

import math

import numpy as np

from onnxplug.contrib_rules import attention_broadcast, attention_broadcasts
from onnxplug.ir import Node
from onnxplug.kernel import KernelContext
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.runtime.blas import matmul, parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import ones_vector
from onnxplug.providers.numpy.registry import op

#: Attention with at most this many scores takes the short path (_small): one shift per row, no
#: hand-off to the product threads.
SMALL_SCORES = 4096

#: Row sums below this after the shared shift (see _shifted_exp) mean a row's own maximum was far
#: below the others': such calls are redone with a per-row shift so no row underflows.
_SMALLEST_ROW_SUM = 1e-20


def _shifted_exp(scores: np.ndarray, bias: np.ndarray | None) -> np.ndarray | None:
    """exp(scores + bias - shift) in place with one shift for the whole tensor (the largest score
    plus the largest bias, an upper bound of every row's maximum), and the row sums, one per row;
    None when that shift is not finite or a row would be left with too little (the caller then
    normalizes row by row).

    One shift costs two fast whole-tensor reductions where per-row maxima took a strided reduction
    and a pass subtracting them; it folds into the bias pass.
    """
    shift = scores.max()
    if bias is not None:
        shift = shift + bias.max()
    if not np.isfinite(shift):
        return None
    if bias is not None:
        scores += bias - shift
    else:
        scores -= shift
    np.exp(scores, out=scores)
    length = scores.shape[-1]
    sums = scores.reshape(-1, length).dot(ones_vector(length, scores.dtype))  # a BLAS product
    if not sums.min() >= _SMALLEST_ROW_SUM:  # also catches NaN
        return None
    return sums


@op("MultiHeadAttention", domain="com.onnxplug")
class MultiHeadAttention(NumpyKernel):
    """query [B, S, H*Dh], key/value [B, L, H*Dh(v)], optional additive bias broadcasting to
    [B, H, S, L]; output [B, S, H*Dh(v)]."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.heads = int(self.attr("num_heads"))
        scale = self.attr("scale")
        self.scale = None if scale is None else float(scale)  # None: 1/sqrt(head size)

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray,
                bias: np.ndarray | None = None) -> np.ndarray:
        heads = self.heads
        batch, seq, width = query.shape
        length = key.shape[1]
        head_size = width // heads
        scale = 1.0 / math.sqrt(head_size) if self.scale is None else self.scale
        if attention_broadcasts(query, key, value, bias, heads):
            return attention_broadcast(np, query, key, value, bias, heads, scale)
        # Scaling Q (S x D values) is cheaper than scaling the scores (S x L per head).
        q = (query * query.dtype.type(scale)).reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)
        k = key.reshape(batch, length, heads, head_size).transpose(0, 2, 3, 1)
        v = value.reshape(batch, length, heads, value.shape[2] // heads).transpose(0, 2, 1, 3)
        if batch * heads * seq * length <= SMALL_SCORES:
            return self._small(q, k, v, bias).transpose(0, 2, 1, 3).reshape(batch, seq, -1)
        out = np.empty((batch, seq, heads, v.shape[-1]), dtype=query.dtype)
        per_image = bias is not None and bias.ndim == 4 and bias.shape[0] == batch

        def image(i: int) -> None:
            # np.matmul, not the split matmul: this runs on a product thread
            unit = slice(i, i + 1)
            context = self._attend(q[unit], k[unit], v[unit], bias[unit] if per_image else bias, np.matmul)
            out[i] = context[0].transpose(1, 0, 2)

        # Images go to the product threads when the products are worth splitting (each image's
        # softmax then has its own shift); otherwise one pass over the whole batch.
        if not parallel_for(batch, image, batch * heads * seq * length * (head_size + v.shape[-1])):
            out[...] = self._attend(q, k, v, bias, matmul).transpose(0, 2, 1, 3)
        return out.reshape(batch, seq, -1)

    def _attend(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None,
                product) -> np.ndarray:
        """softmax(q k + bias) v for [B', H, S, D] queries and [B', H, D, L] keys, by ``product``."""
        scores = product(q, k)
        sums = None
        if scores.dtype in (np.float32, np.float64) and scores.size:
            with np.errstate(invalid="ignore", over="ignore"):
                sums = _shifted_exp(scores, bias)
            if sums is None:
                scores = product(q, k)  # _shifted_exp may have changed them
        if sums is None:
            self._softmax_rows(scores, bias)
            return product(scores, v)
        # Normalizing the [B, H, S, Dv] context instead of the [B, H, S, L] probabilities.
        context = product(scores, v)
        context /= sums.reshape(*scores.shape[:-1], 1)
        return context

    @classmethod
    def _small(cls, q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        """softmax(q k + bias) v with few scores: the fewest numpy calls (each costs more than its work)."""
        scores = np.matmul(q, k)
        cls._softmax_rows(scores, bias)
        return np.matmul(scores, v)

    @staticmethod
    def _softmax_rows(scores: np.ndarray, bias: np.ndarray | None) -> None:
        """softmax(scores + bias) over the last axis in place, shifting each row by its own maximum."""
        if bias is not None:
            scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return node.attr("num_heads") is not None and int(node.attr("num_heads")) > 0
