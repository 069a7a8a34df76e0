"""com.microsoft DynamicQuantizeLSTM (onnxruntime's quantization tool's LSTM): int8 or uint8 W
(D, K, 4H) and R (D, H, 4H), gates (i, o, f, c), scales per direction or per gate column, one
zero point per direction; computed by kernels/quantized_lstm.py with onnxruntime's quantization.

X is quantized once over all its steps (the range onnxruntime takes in either direction when every
sequence runs every step), h once per step per block of batch rows: onnxruntime's rows per thread,
ceil(batch / intra_op_num_threads) where it splits the batch (more than 4 rows, or 2+ with hidden
size 256 or less), so results follow the session's thread count as onnxruntime's do. The two
directions, or the blocks of one, run on separate threads from ``THREADED_MIN_MACS`` per
direction. Declined: sequence_lens, clip, input_forget, other activations.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_numba.kernels import quantized_lstm as kq
from onnxplug_numba.kernels import vnni
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider

_F32 = np.dtype(np.float32)
_EIGHT_BIT = (np.dtype(np.int8), np.dtype(np.uint8))
_DEFAULT_ACTIVATIONS = ["sigmoid", "tanh", "tanh"]


#: Multiply-adds of one direction's products from which the directions (or batch blocks) go to
#: separate threads: a hand-off to a pool thread costs more than a smaller recurrence
#: (docs/benchmarks.md, "Measurements behind design choices").
THREADED_MIN_MACS = 1 << 24


def _batch_parallel(batch: int, hidden: int) -> bool:
    """Whether onnxruntime's LSTM splits the batch rows over its threads."""
    return batch > 4 or (batch >= 2 and hidden <= 256)


@NumbaProvider.kernel("DynamicQuantizeLSTM", domain="com.microsoft")
class DynamicQuantizeLSTM(NumbaKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        acts = node.attr("activations")
        if acts is not None and [a.lower() for a in acts] not in (_DEFAULT_ACTIVATIONS, _DEFAULT_ACTIVATIONS * 2):
            return Decline("attribute", f"activations {list(acts)} (only Sigmoid, Tanh, Tanh)")
        if node.attr("activation_alpha") is not None or node.attr("activation_beta") is not None:
            return Decline("attribute", "activation_alpha or activation_beta is not computed")
        if node.attr("clip") is not None:
            return Decline("attribute", "clip is not computed")
        if node.attr("input_forget", 0):
            return Decline("attribute", "input_forget=1 is not computed")
        if node.attr("layout", 0):
            return Decline("attribute", "layout=1 is not computed")
        inputs = list(node.inputs) + [""] * (12 - len(node.inputs))
        if inputs[4]:
            return Decline("attribute", "a sequence_lens input is not computed")
        if not all(inputs[i] for i in (8, 9, 10, 11)):
            return Decline("attribute", "W_scale, W_zero_point, R_scale and R_zero_point are required")
        for i in (0, 3, 5, 6, 7, 8, 10):
            if inputs[i] and view.dtype_of(inputs[i]) != _F32:
                return Decline("dtype", f"{inputs[i]!r} is {view.dtype_of(inputs[i])}, not float32")
        for i in (1, 2, 9, 11):
            if view.dtype_of(inputs[i]) not in _EIGHT_BIT:
                return Decline("dtype", f"{inputs[i]!r} is {view.dtype_of(inputs[i])}, not int8 or uint8")
        return True

    def __init__(self, node: Node, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(node, context)
        self.vnni = vnni.AVAILABLE
        self._kept: tuple[tuple[np.ndarray, ...], tuple] | None = None  # type: ignore[type-arg]

    def _weights(self, w: np.ndarray, r: np.ndarray, b: np.ndarray | None, w_scale: np.ndarray, w_zp: np.ndarray,
                 r_scale: np.ndarray, r_zp: np.ndarray) -> tuple:  # type: ignore[type-arg]
        """Per direction: W and R in the products' form (:meth:`_matrix`), B's two halves added,
        and the scales per gate column (float32); kept across runs when all are constant
        initializers."""
        key = (w, r, b, w_scale, w_zp, r_scale, r_zp)
        kept = self._kept
        if kept is not None and all(a is k for a, k in zip(kept[0], key)):
            return kept[1]
        dirs, four = w.shape[0], w.shape[2]
        w_zps, r_zps = self._zero_points(w_zp, dirs, "W"), self._zero_points(r_zp, dirs, "R")
        bias = [np.zeros(four, np.float32) if b is None else
                np.ascontiguousarray(b[d, :four] + b[d, four:2 * four], dtype=np.float32) for d in range(dirs)]
        packed = ([self._matrix(w[d], w_zps[d]) for d in range(dirs)],
                  [self._matrix(r[d], r_zps[d]) for d in range(dirs)], bias,
                  *[np.ascontiguousarray(np.broadcast_to(np.asarray(s, np.float32).reshape(dirs, -1), (dirs, four)))
                    for s in (w_scale, r_scale)])
        names = self.node.inputs
        if all(names[i] in self.context.constants for i in (1, 2, 8, 9, 10, 11)) and \
                (not names[3] or names[3] in self.context.constants):
            self._kept = (key, packed)
        return packed

    def _matrix(self, m: np.ndarray, zero_point: int) -> tuple:  # type: ignore[type-arg]
        """(K, 4H) 8-bit weights for the products: with VNNI, as int8 (uint8 shifted by -128, and
        its zero point with it) packed, with column sums and zero point; else transposed, with
        its zero point."""
        if not self.vnni:
            return np.ascontiguousarray(m.T), zero_point
        if m.dtype == np.uint8:
            m, zero_point = (m.astype(np.int16) - 128).astype(np.int8), zero_point - 128
        packed, colsum = vnni.pack(m)
        return packed, colsum, zero_point

    def _zero_points(self, zp: np.ndarray, dirs: int, which: str) -> list[int]:
        """One zero point per direction, as onnxruntime takes them (per-column ones must agree)."""
        per = np.asarray(zp).reshape(dirs, -1).astype(np.int32)
        if (per != per[:, :1]).any():
            raise ValueError(f"{self.node.describe()}: {which}_zero_point must be one value per direction")
        return [int(v) for v in per[:, 0]]

    def compute(self, x, w, r, b=None, seq=None, h0=None, c0=None, p=None,  # type: ignore[no-untyped-def]
                w_scale=None, w_zp=None, r_scale=None, r_zp=None):
        steps, batch, _ = x.shape
        dirs, hidden = w.shape[0], r.shape[1]
        four = 4 * hidden
        mode = self.attr("direction", "forward")
        if dirs != (2 if mode == "bidirectional" else 1) or hidden != int(self.attr("hidden_size", hidden)) or \
                w.shape[2] != four or r.shape != (dirs, hidden, four) or w.shape[1] != x.shape[2]:
            raise ValueError(f"{self.node.describe()}: W {list(w.shape)} and R {list(r.shape)} do not fit a "
                             f"{mode} layer of hidden size {self.attr('hidden_size', hidden)} and input "
                             f"{list(x.shape)}")
        wm, rm, bias, w_scales, r_scales = self._weights(w, r, b, w_scale, w_zp, r_scale, r_zp)
        h0 = np.zeros((dirs, batch, hidden), np.float32) if h0 is None else np.ascontiguousarray(h0, np.float32)
        c0 = np.zeros((dirs, batch, hidden), np.float32) if c0 is None else np.ascontiguousarray(c0, np.float32)
        p = np.zeros((dirs, 3 * hidden), np.float32) if p is None else np.ascontiguousarray(p, np.float32)
        has_p = len(self.node.inputs) > 7 and bool(self.node.inputs[7])
        # X quantized once: with every sequence running every step, both directions see its values
        flat = np.ascontiguousarray(x, np.float32).reshape(steps * batch, -1)
        if self.vnni:
            qx = np.zeros((steps * batch, wm[0][0].shape[1] * 4), np.uint8)
            x_scale, x_zp = kq.quantize_rows(flat, qx)
        else:
            cqx = np.empty(flat.shape, np.int16)
            x_scale = kq.quantize_centered(flat.reshape(-1), cqx.reshape(-1))
        y = np.empty((steps, dirs, batch, hidden), np.float32)
        h_out = np.empty((dirs, batch, hidden), np.float32)
        c_out = np.empty((dirs, batch, hidden), np.float32)
        block = max(1, -(-batch // self.threads.count) if _batch_parallel(batch, hidden) else batch)
        reverse = [False, True] if dirs == 2 else [mode == "reverse"]

        def projections(d: int) -> np.ndarray:
            out = np.empty((steps * batch, four), np.float32)
            mult = np.float32(x_scale) * w_scales[d]
            if self.vnni:
                kq.input_products_vnni(qx, flat.shape[1], x_zp, *wm[d], mult, out)
            else:
                kq.input_products(cqx, *wm[d], mult, out)
            return out.reshape(steps, batch, four)

        def rows(d: int, xw: np.ndarray, lo: int, hi: int) -> None:
            run = kq.recurrence_vnni if self.vnni else kq.recurrence
            run(xw, *rm[d], r_scales[d], bias[d], b is not None, p[d], has_p, h0[d], c0[d], reverse[d], lo, hi,
                block, y[:, d], h_out[d], c_out[d])

        blocks = -(-batch // block) if batch else 0
        threaded = self.threads.parallel and steps * batch * four * (x.shape[2] + hidden) >= THREADED_MIN_MACS
        if not threaded:
            for d in range(dirs):
                rows(d, projections(d), 0, batch)
        elif dirs == 1 and blocks > 1:
            xw = projections(0)
            self.threads.run(lambda lo, hi: rows(0, xw, lo * block, min(batch, hi * block)), blocks)
        elif batch:
            self.threads.run(lambda lo, hi: [rows(d, projections(d), 0, batch) for d in range(lo, hi)], dirs,
                             spread=True)
        return y, h_out, c_out
