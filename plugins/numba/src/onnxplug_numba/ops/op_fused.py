"""The optimizer's fused ops (domain ``com.onnxplug``, see docs/fused-ops.md) other than FusedConv,
FusedGemm and Gelu: FusedMatMul, BiasGelu, LayerNormalization, SkipLayerNormalization and
MultiHeadAttention. BLAS for the products, compiled kernels for the rest. The same kernels serve
onnxruntime's com.microsoft BiasGelu, FastGelu and SkipLayerNormalization (without its statistics
outputs), which models rewritten by onnxruntime's transformer optimizer use, with EmbedLayerNormalization."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node
from onnxplug_sdk.contrib import attention_broadcast, attention_broadcasts

from onnxplug_numba.fusion.codegen import Program
from onnxplug_numba.fusion.ops import FUSED_DOMAIN, Step
from onnxplug_numba.fusion.runner import ElementwiseRunner
from onnxplug_numba.kernels import native_attention, native_parallel
from onnxplug_numba.kernels import norm as knorm
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, all_present_same, matmul
from onnxplug_numba.ops.op_conv import activation_in_place, activation_supported, fused_activation
from onnxplug_numba.ops.op_norm import LayerNormalization, _rows, flat_param
from onnxplug_numba.provider import NumbaProvider
from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS

op = NumbaProvider.kernel
CONTRIB_DOMAIN = "com.microsoft"

_FLOAT32 = np.dtype(np.float32)
#: Attention of fewer FLOPs runs on the calling thread: a prange region's hand-off to its workers
#: costs about as much as this much work on one core.
SERIAL_ATTENTION_FLOPS = 1_000_000
_ZERO4 = np.zeros((1, 1, 1, 1), np.float32)


class _FloatKernel(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)


@op("FusedMatMul", domain=FUSED_DOMAIN)
class FusedMatMul(_FloatKernel):
    """activation(A @ B) with MatMul broadcasting."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return super().supports(node, view) and activation_supported(node)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.act = fused_activation(node)  # read once, not per call

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return activation_in_place(matmul(a, b, self.threads), self.act)  # type: ignore[arg-type]


@op("BiasGelu", domain=FUSED_DOMAIN)
class BiasGelu(_FloatKernel):
    """Gelu(X + bias) as one generated loop."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._runners: dict[tuple[np.dtype, bool], ElementwiseRunner] = {}
        self.approximate = self.attr("approximate", "none")

    def compute(self, x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        runner = self._runners.get((x.dtype, bias is None))  # dtype objects: .name is computed each time
        if runner is None:
            t = x.dtype.name
            gelu = (("approximate", self.approximate),)
            if bias is None:
                program = Program(("x",), (t,), (Step("Gelu", ("x",), "y", t, gelu),), ("y",))
            else:
                steps = (Step("Add", ("x", "b"), "s", t), Step("Gelu", ("s",), "y", t, gelu))
                program = Program(("x", "b"), (t, t), steps, ("y",))
            runner = self._runners[(x.dtype, bias is None)] = ElementwiseRunner(program, self.threads)
        return runner(x)[0] if bias is None else runner(x, bias)[0]


@op("BiasGelu", domain=CONTRIB_DOMAIN)
class ContribBiasGelu(BiasGelu):
    """com.microsoft BiasGelu: the erf Gelu of A + B, B a vector over A's last axis."""

    def compute(self, x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        if bias is not None and (bias.ndim != 1 or bias.shape[0] != (x.shape[-1] if x.ndim else 1)):
            raise ValueError(f"{self.node.describe()}: bias must be a vector over the input's last axis, "
                             f"got shape {list(bias.shape)} for input {list(x.shape)}")
        return super().compute(x, bias)


@op("FastGelu", domain=CONTRIB_DOMAIN)
class ContribFastGelu(ContribBiasGelu):
    """com.microsoft FastGelu: the tanh approximation of Gelu of X (+ bias over the last axis)."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.approximate = "tanh"


@op("LayerNormalization", domain=FUSED_DOMAIN)
class FusedLayerNormalization(LayerNormalization):
    """ai.onnx LayerNormalization's schema with the Y output only (for models below opset 17): the
    ai.onnx kernel returns Y alone for a node without statistics outputs."""


@op("SkipLayerNormalization", domain=FUSED_DOMAIN)
class SkipLayerNormalization(_FloatKernel):
    """S = X + skip (+ bias); Y = LayerNorm over the last axis of S * gamma + beta."""

    DEFAULT_EPSILON = 1e-5

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.epsilon = float(self.attr("epsilon", self.DEFAULT_EPSILON))
        self.want_sum = self._wants_sum(node)
        self.constant = all(n in context.constants for n in node.inputs[2:5] if n)
        self._params: tuple | None = None  # (dtype, width, gamma, beta, bias or gamma) of constant parameters

    @staticmethod
    def _wants_sum(node: Node) -> bool:
        return len(node.outputs) > 1 and bool(node.outputs[1])

    def compute(self, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None,
                bias: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        dtype = x.dtype
        d = x.shape[-1] if x.ndim else 1
        eps = self.epsilon
        if skip.shape != x.shape or skip.dtype != dtype or (bias is not None and bias.size != d):
            return self._general(x, skip, gamma, beta, bias, eps)
        rows = np.ascontiguousarray(x).reshape(-1, d)
        skips = np.ascontiguousarray(skip).reshape(-1, d)
        kept = self._params
        if kept is not None and kept[0] is dtype and kept[1] == d:
            g, b, add = kept[2], kept[3], kept[4]
        else:
            g = flat_param(gamma, (d,), dtype)
            b = np.zeros_like(g) if beta is None else flat_param(beta, (d,), dtype)
            add = g if bias is None else np.ascontiguousarray(bias, dtype=dtype).reshape(d)
            if self.constant:
                self._params = (dtype, d, g, b, add)  # one assignment: threads see the old or the new entry
        s = np.empty_like(rows)  # (not y itself: overlapping operands fail the vectorised loops' alias checks)
        y = np.empty_like(rows)
        if rows.size < PARALLEL_MIN_ELEMENTS:  # one chunk: no hand-off
            knorm.skip_layer_norm_rows(rows, skips, add, bias is not None, g, b, eps, s, y)
        else:
            self.threads.run(lambda lo, hi: knorm.skip_layer_norm_rows(
                rows[lo:hi], skips[lo:hi], add, bias is not None, g, b, eps, s[lo:hi], y[lo:hi]),
                rows.shape[0], row_grain(d))
        return (y.reshape(x.shape), s.reshape(x.shape)) if self.want_sum else y.reshape(x.shape)

    def _general(self, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None,
                 bias: np.ndarray | None, eps: float):  # type: ignore[no-untyped-def]
        """Shapes outside the contract's usual case (broadcast skip or bias): numpy sums first."""
        s = x + skip
        if bias is not None:
            s = s + bias
        s = s.astype(x.dtype, copy=False)
        rows = _rows(s, -1)
        d = rows.shape[1]
        g = flat_param(gamma, (d,), x.dtype)
        b = np.zeros_like(g) if beta is None else flat_param(beta, (d,), x.dtype)
        y = np.empty_like(rows)
        stats = np.empty(rows.shape[0], dtype=x.dtype)
        inv = stats.copy()
        self.threads.run(lambda lo, hi: knorm.layer_norm_rows(rows[lo:hi], g, b, eps, y[lo:hi], stats[lo:hi],
                                                              inv[lo:hi]), rows.shape[0], row_grain(d))
        y = y.reshape(x.shape)
        return (y, s) if self.want_sum else y


@op("SkipLayerNormalization", domain=CONTRIB_DOMAIN)
class ContribSkipLayerNormalization(SkipLayerNormalization):
    """com.microsoft SkipLayerNormalization: epsilon defaults to 1e-12, the sum is output 3; a node
    that asks for the statistics (mean, inv_std_var) is left to the numpy provider."""

    DEFAULT_EPSILON = 1e-12

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        outputs = list(node.outputs) + [""] * 4
        if outputs[1] or outputs[2]:
            return Decline("attribute", "the mean and inv_std_var outputs are not computed here")
        return all_present_same(view, node, FLOAT_TYPES, inputs=range(5))

    @staticmethod
    def _wants_sum(node: Node) -> bool:
        return len(node.outputs) > 3 and bool(node.outputs[3])

    def compute(self, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None,
                bias: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        d = x.shape[-1] if x.ndim else 0
        if x.ndim != 3 or skip.shape[-2:] != x.shape[-2:] or skip.ndim not in (2, 3) \
                or (skip.ndim == 3 and skip.shape[0] not in (1, x.shape[0])):
            raise ValueError(f"{self.node.describe()}: input must be [B, S, H] and skip [B, S, H], [1, S, H] "
                             f"or [S, H]; got {list(x.shape)} and {list(skip.shape)}")
        for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
            if v is not None and v.shape != (d,):
                raise ValueError(f"{self.node.describe()}: {name} must have shape [{d}], got {list(v.shape)}")
        result = super().compute(x, skip, gamma, beta, bias)
        return (result[0], None, None, result[1]) if self.want_sum else result


@op("EmbedLayerNormalization", domain=CONTRIB_DOMAIN)
class ContribEmbedLayerNormalization(NumbaKernel):
    """com.microsoft EmbedLayerNormalization: word_embedding[input_ids] + position_embedding[position_ids
    or 0..S-1] (+ segment_embedding[segment_ids]), normalized over the hidden axis (compiled rows);
    outputs the normalized rows, mask_index ([B] int32: how many mask values are 1 per row) and the sum."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        floats = [node.inputs[i] for i in (2, 3, 4, 5, 6) if i < len(node.inputs) and node.inputs[i]]
        found = {view.dtype_of(n) for n in floats}
        if len(found) != 1 or next(iter(found)) not in FLOAT_TYPES:
            return Decline("dtype", "the embeddings, gamma and beta must share one of float32, float64")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.epsilon = float(self.attr("epsilon", 1e-12))

    def compute(self, input_ids: np.ndarray, segment_ids: np.ndarray | None, word: np.ndarray,
                position: np.ndarray, segment: np.ndarray | None = None, gamma: np.ndarray | None = None,
                beta: np.ndarray | None = None, mask: np.ndarray | None = None,
                position_ids: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        if input_ids.ndim != 2:
            raise ValueError(f"{self.node.describe()}: input_ids must be [B, S], got {list(input_ids.shape)}")
        batch, seq = input_ids.shape
        hidden = word.shape[1]
        for name, v in (("gamma", gamma), ("beta", beta)):
            if v is not None and v.shape != (hidden,):
                raise ValueError(f"{self.node.describe()}: {name} must have shape [{hidden}], got {list(v.shape)}")
        if position_ids is None:
            total = self._lookup("input_ids", word, input_ids)
            if seq > position.shape[0]:
                raise ValueError(f"{self.node.describe()}: position_ids out of range [0, {position.shape[0]})")
            total += position[:seq]
        else:
            total = self._lookup("input_ids", word, input_ids)
            total += self._lookup("position_ids", position, np.broadcast_to(position_ids, (batch, seq)))
        if segment_ids is not None and segment is not None:
            total += self._lookup("segment_ids", segment, segment_ids)
        rows = total.reshape(-1, hidden)
        g = flat_param(gamma, (hidden,), total.dtype)
        b = np.zeros_like(g) if beta is None else flat_param(beta, (hidden,), total.dtype)
        y = np.empty_like(rows)
        stats = np.empty(rows.shape[0], dtype=total.dtype)
        inv = np.empty_like(stats)
        eps = self.epsilon
        self.threads.run(lambda lo, hi: knorm.layer_norm_rows(rows[lo:hi], g, b, eps, y[lo:hi], stats[lo:hi],
                                                              inv[lo:hi]), rows.shape[0], row_grain(hidden))
        counts = np.zeros(batch, np.int32) if mask is None else (mask == 1).sum(axis=1, dtype=np.int32)
        return y.reshape(total.shape), counts, total

    def _lookup(self, name: str, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Rows of ``table`` (a fresh array), after checking the ids."""
        if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
            raise ValueError(f"{self.node.describe()}: {name} out of range [0, {table.shape[0]})")
        return table.take(ids, axis=0)


@op("MultiHeadAttention", domain=FUSED_DOMAIN)
class MultiHeadAttention(_FloatKernel):
    """softmax(q k^T * scale + bias) v per head: batched BLAS products, compiled softmax."""

    #: whether the one-region prange kernel may run it (kernels/native_attention.py)
    native = True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.heads = int(self.attr("num_heads"))
        scale = self.attr("scale")
        self.scale = None if scale is None else float(scale)  # None: 1/sqrt(head size)

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray,
                bias: np.ndarray | None = None) -> np.ndarray:
        heads = self.heads
        b, s, hd = query.shape
        length = key.shape[1]
        dh, dv = hd // heads, value.shape[2] // heads
        scale = 1.0 / np.sqrt(dh) if self.scale is None else self.scale
        if attention_broadcasts(query, key, value, bias, heads):
            return attention_broadcast(np, query, key, value, bias, heads, scale)
        if self.native and native_attention.AVAILABLE and query.dtype is _FLOAT32 and key.dtype is _FLOAT32 \
                and value.dtype is _FLOAT32 and key.shape[2] == hd and hd % heads == 0 \
                and value.shape[2] % heads == 0 and s * length > 0 and query.flags.c_contiguous \
                and key.flags.c_contiguous and value.flags.c_contiguous and (bias is None or bias.dtype is _FLOAT32):
            return self._native(query, key, value, bias, heads, scale)
        q = query.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)
        k = key.reshape(b, length, heads, dh).transpose(0, 2, 3, 1)
        v = value.reshape(b, length, heads, dv).transpose(0, 2, 1, 3)
        scores = matmul(q, k, self.threads)
        if bias is not None:
            bias = np.broadcast_to(np.asarray(bias, dtype=query.dtype), scores.shape)
        probs = np.empty(scores.shape, dtype=query.dtype)
        # scale, mask and softmax in one compiled pass over the scores
        self.threads.run(lambda lo, hi: knorm.scaled_softmax(scores, scale, bias if bias is not None else scores,
                                                             bias is not None, probs, lo, hi),
                         b * heads * s, row_grain(length))
        out = matmul(probs, v, self.threads)
        return np.ascontiguousarray(out.transpose(0, 2, 1, 3)).reshape(b, s, heads * dv)

    def _native(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, bias: np.ndarray | None,
                heads: int, scale: float) -> np.ndarray:
        """One prange region: each (image, head) runs its products and softmax back to back, reading
        and writing the heads in place (kernels/native_attention.py)."""
        b, s, _ = query.shape
        out = np.empty((b, s, value.shape[2]), dtype=np.float32)
        # 4-D either way (a zero without a bias, unread), its dims 1 or the scores' (attention_broadcasts)
        bias4 = _ZERO4 if bias is None else bias if bias.ndim == 4 else bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
        self.threads.blas()
        length = key.shape[1]
        if 2 * b * heads * s * length * (query.shape[2] + value.shape[2]) // heads < SERIAL_ATTENTION_FLOPS:
            native_attention.attention_serial(query, key, value, scale, bias4, bias is not None, heads, out)
            return out
        native_parallel.use_threads(min(self.threads.count, b * heads))
        native_attention.attention(query, key, value, scale, bias4, bias is not None, heads, out)
        return out


def padding_bias(kernel: NumbaKernel, mask: np.ndarray | None, batch: int, seq: int, total: int,
                 filter_value: float) -> np.ndarray | None:
    """onnxruntime's additive key padding mask, [B, 1, S, T] float32, or None without a mask: a masked
    key gets ``filter_value`` (not -inf). ``mask``: [B] end positions, [2B] end then start
    positions, [B, T] or [B, S, T] of 1 (attend) / 0 (masked)."""
    if mask is None:
        return None
    bias = np.zeros((batch, 1, seq, total), dtype=np.float32)
    keys = np.arange(total)
    if mask.ndim == 1 and mask.shape[0] in (batch, 2 * batch):
        masked = keys >= mask[:batch].astype(np.int64).reshape(batch, 1, 1, 1)
        if mask.shape[0] == 2 * batch:
            masked = masked | (keys < np.minimum(mask[batch:].astype(np.int64), total).reshape(batch, 1, 1, 1))
        masked = np.broadcast_to(masked, bias.shape)
    elif mask.ndim == 2 and mask.shape == (batch, total):
        masked = np.broadcast_to((mask <= 0).reshape(batch, 1, 1, total), bias.shape)
    elif mask.ndim == 3 and mask.shape == (batch, seq, total):
        masked = (mask <= 0).reshape(batch, 1, seq, total)
    else:
        raise ValueError(f"{kernel.node.describe()}: mask shape {list(mask.shape)} is none of [B], [2B], "
                         f"[B, T], [B, S, T] for B={batch}, S={seq}, T={total}")
    bias[masked] = np.float32(filter_value)
    return bias


def _contrib_attention_decline(node: Node, view: GraphView, inputs_from: int, outputs_from: int) -> Decline | None:
    """Why the numba kernel leaves a com.microsoft attention node to numpy, or None."""
    if any(node.inputs[inputs_from:]):
        return Decline("attribute", "past state, attention_bias and cache inputs are left to numpy")
    if any(node.outputs[outputs_from:]):
        return Decline("attribute", "present and qk outputs are left to numpy")
    for name in ("unidirectional", "do_rotary", "past_present_share_buffer", "qkv_hidden_sizes"):
        if node.attr(name):
            return Decline("attribute", f"{name} is left to numpy")
    if node.attr("scale") is not None and not node.attr("scale"):
        return Decline("attribute", "scale 0 (the default scale) is left to numpy")
    if view.dtype_of(node.inputs[0]) != _FLOAT32:
        return Decline("dtype", "float32 only")
    return None


@op("MultiHeadAttention", domain=CONTRIB_DOMAIN)
class ContribMultiHeadAttention(MultiHeadAttention):
    """com.microsoft MultiHeadAttention without past state, attention_bias or extra outputs: query
    [B, S, D]; key and value [B, L, D] (the bias's K and V parts added), split in heads [B, N, L, H]
    (used as they are) or key packed with value [B, L, N, 2, H]; key_padding_mask as onnxruntime
    reads it. The attention is the com.onnxplug kernel's."""

    #: the BLAS and compiled-softmax path: the prange kernel's workers spun between the small
    #: attention calls of these models and cost more CPU time than they saved
    native = False

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        declined = _contrib_attention_decline(node, view, 5, 1)  # a Decline is false: no ``or``
        if declined is not None:
            return declined
        return all_present_same(view, node, frozenset({_FLOAT32}), inputs=range(4))

    def compute(self, query: np.ndarray, key: np.ndarray | None = None, value: np.ndarray | None = None,
                bias: np.ndarray | None = None, key_padding_mask: np.ndarray | None = None):  # type: ignore[override]
        if query.ndim != 3 or key is None:
            raise ValueError(f"{self.node.describe()}: query must be [B, S, D] with a key")
        heads = int(self.attr("num_heads"))
        batch, seq, width = query.shape
        bq = bk = bv = None
        if bias is not None:
            bq, bk, bv = bias[:width], bias[width:2 * width], bias[2 * width:]
        q = query if bq is None else query + bq
        if key.ndim == 5:  # packed [B, L, N, 2, H]
            if value is not None:
                raise ValueError(f"{self.node.describe()}: value must be absent when key packs key and value")
            k, v = key[:, :, :, 0].reshape(batch, key.shape[1], -1), key[:, :, :, 1].reshape(batch, key.shape[1], -1)
            k, v = (k if bk is None else k + bk), (v if bv is None else v + bv)
        elif key.ndim == 4:  # already projected and split in heads [B, N, L, H]
            k = key.transpose(0, 2, 1, 3).reshape(batch, key.shape[2], -1)
            v = value.transpose(0, 2, 1, 3).reshape(batch, value.shape[2], -1)
        elif key.ndim == 3:
            k = key if bk is None else key + bk
            v = value if bv is None else value + bv
        else:
            raise ValueError(f"{self.node.describe()}: key of rank {key.ndim} is none of 3, 4, 5")
        if key_padding_mask is not None and key_padding_mask.ndim == 1 and key_padding_mask.shape[0] != batch:
            raise ValueError(f"{self.node.describe()}: a 1-D key_padding_mask must be [B] end positions, "
                             f"got shape {list(key_padding_mask.shape)}")
        if k.shape[2] != width or v.shape[2] % heads:
            raise ValueError(f"{self.node.describe()}: key width {k.shape[2]} and value width {v.shape[2]} do not "
                             f"fit query width {width} and {heads} heads")
        additive = padding_bias(self, key_padding_mask, batch, seq, k.shape[1],
                                float(self.attr("mask_filter_value", -10000.0)))
        return super().compute(np.ascontiguousarray(q), np.ascontiguousarray(k), np.ascontiguousarray(v), additive)


@op("Attention", domain=CONTRIB_DOMAIN)
class ContribAttention(MultiHeadAttention):
    """com.microsoft Attention without past state, attention_bias, qkv_hidden_sizes or the present
    output: input [B, S, Din] @ weights [Din, 3D] (+ bias) split in three equal Q, K, V parts;
    mask_index as onnxruntime reads it. The attention is the com.onnxplug kernel's."""

    #: the BLAS and compiled-softmax path: the prange kernel's workers spun between the small
    #: attention calls of these models and cost more CPU time than they saved
    native = False

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        declined = _contrib_attention_decline(node, view, 4, 1)  # a Decline is false: no ``or``
        if declined is not None:
            return declined
        return all_present_same(view, node, frozenset({_FLOAT32}), inputs=range(3))

    def compute(self, x: np.ndarray, weights: np.ndarray, bias: np.ndarray | None = None,  # type: ignore[override]
                mask_index: np.ndarray | None = None) -> np.ndarray:
        heads = int(self.attr("num_heads"))
        if x.ndim != 3 or weights.ndim != 2 or weights.shape[1] % 3 or (weights.shape[1] // 3) % heads:
            raise ValueError(f"{self.node.describe()}: input {list(x.shape)} and weights {list(weights.shape)} "
                             f"do not split in three parts of {heads} heads")
        qkv = matmul(x, weights, self.threads)
        if bias is not None:
            qkv = qkv + bias
        batch, seq, width = qkv.shape
        d = width // 3
        q, k, v = (np.ascontiguousarray(qkv[:, :, i * d:(i + 1) * d]) for i in range(3))
        additive = padding_bias(self, mask_index, batch, seq, seq, float(self.attr("mask_filter_value", -10000.0)))
        return super().compute(q, k, v, additive)
