"""LSTM and GRU with the default activations: BLAS input projections + compiled recurrences.

The input projections of every direction and time step are one matrix product on the calling
thread (BLAS runs badly when two threads call it at once); the recurrences, which release the
GIL and call no BLAS, then run one direction (or one band of the batch) per thread.
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_numba.kernels import rnn as krnn
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, all_present_same, matmul
from onnxplug_numba.provider import NumbaProvider

_DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


class _Recurrent(NumbaKernel):
    gates = 4

    def __init__(self, node: Node, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(node, context)
        self._packed: tuple[tuple[object, ...], tuple[np.ndarray, np.ndarray, list[np.ndarray]]] | None = None

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        acts = node.attr("activations")
        if acts is not None:
            default = _DEFAULTS[node.op_type]
            if [a.lower() for a in acts] not in ([a.lower() for a in default], [a.lower() for a in default * 2]):
                return False
        if node.attr("clip") is not None or node.attr("input_forget", 0):
            return False
        if node.attr("activation_alpha") is not None or node.attr("activation_beta") is not None:
            return False
        if len(node.inputs) > 4 and node.inputs[4]:  # sequence_lens
            return False
        if node.op_type == "GRU" and node.opset < 3:
            return False
        floats = [i for i, n in enumerate(node.inputs) if n and i != 4]
        return all_present_same(view, node, FLOAT_TYPES, inputs=floats)

    def prepare(self, x: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray | None,
                h0: np.ndarray | None) -> tuple:  # type: ignore[type-arg]
        layout = int(self.attr("layout", 0))
        if layout:
            x = np.swapaxes(x, 0, 1)
            h0 = None if h0 is None else np.swapaxes(h0, 0, 1)
        steps, batch, _ = x.shape
        dirs, rows, _ = w.shape
        hidden = rows // self.gates
        if b is None:
            b = np.zeros((dirs, 2 * rows), dtype=x.dtype)
        if h0 is None:
            h0 = np.zeros((dirs, batch, hidden), dtype=x.dtype)
        return layout, np.ascontiguousarray(x), steps, batch, dirs, hidden, b, np.ascontiguousarray(h0)

    def directions(self, dirs: int) -> list[bool]:
        mode = self.attr("direction", "forward")
        return [False, True] if mode == "bidirectional" else [mode == "reverse"] * dirs

    def packed(self, w: np.ndarray, r: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """``W^T`` of all directions side by side (K, D*G*H), their input biases (D*G*H) and
        ``R[d]^T`` per direction; kept across runs when W, R and B are constant initializers."""
        key = (w, r, b)
        cached = self._packed
        if cached is not None and all(a is k for a, k in zip(cached[0], key)):
            return cached[1]
        dirs, rows, _ = w.shape
        wt = np.ascontiguousarray(w.reshape(dirs * rows, -1).T)
        bias = self.input_bias(b, rows).reshape(-1)
        rt = [np.ascontiguousarray(r[d].T) for d in range(dirs)]
        names = self.node.inputs
        if all(i < len(names) and names[i] in self.context.constants for i in (1, 2, 3)):
            self._packed = (key, (wt, bias, rt))
        return wt, bias, rt

    def input_bias(self, b: np.ndarray, rows: int) -> np.ndarray:
        """The bias added to the input projections, per direction (D, G*H)."""
        return b[:, :rows]

    def projections(self, x: np.ndarray, wt: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """x (T, B, K) @ W^T + bias for all directions: (T, B, D*G*H)."""
        steps, batch, _ = x.shape
        # not on the prange path: the recurrences run next on the pool, and prange workers still
        # spinning after the product took their core (measured 2.5x slower GRU at batch 8)
        xw = matmul(x.reshape(steps * batch, -1), wt, self.threads, native=False)
        xw += bias
        return xw.reshape(steps, batch, -1)

    def each_direction(self, run_one, dirs: int, batch: int) -> None:  # type: ignore[no-untyped-def]
        """``run_one(d, reverse, lo, hi)`` for every direction and band of batch rows: the
        directions on separate threads, or (one direction) bands of the batch."""
        modes = self.directions(dirs)
        bands = 1 if dirs > 1 or batch < 2 else min(self.threads.count, batch)
        tasks = [(d, batch * i // bands, batch * (i + 1) // bands) for d in range(dirs) for i in range(bands)]
        self.threads.run(lambda lo, hi: [run_one(d, modes[d], b0, b1) for d, b0, b1 in tasks[lo:hi]],
                         len(tasks))

    def finish(self, layout: int, y: np.ndarray, *states: np.ndarray) -> tuple[np.ndarray, ...]:
        if layout:  # (T, D, B, H) -> (B, T, D, H); states (D, B, H) -> (B, D, H)
            return (np.ascontiguousarray(y.transpose(2, 0, 1, 3)),
                    *[np.ascontiguousarray(s.transpose(1, 0, 2)) for s in states])
        return (y, *states)


@NumbaProvider.kernel("LSTM", 7)
class LSTM(_Recurrent):
    def input_bias(self, b: np.ndarray, rows: int) -> np.ndarray:
        return b[:, :rows] + b[:, rows:]  # LSTM has no bias inside a gate: both add up front

    def compute(self, x, w, r, b=None, seq=None, h0=None, c0=None, p=None):  # type: ignore[no-untyped-def]
        layout, x, steps, batch, dirs, hidden, b, h0 = self.prepare(x, w, r, b, h0)
        if c0 is None:
            c0 = np.zeros((dirs, batch, hidden), dtype=x.dtype)
        elif layout:
            c0 = np.swapaxes(c0, 0, 1)
        c0 = np.ascontiguousarray(c0)
        y = np.empty((steps, dirs, batch, hidden), dtype=x.dtype)
        h_out = np.empty((dirs, batch, hidden), dtype=x.dtype)
        c_out = np.empty_like(h_out)
        wt, bias, rt = self.packed(w, r, b)
        xw = self.projections(x, wt, bias)
        peep = np.zeros(3 * hidden, dtype=x.dtype)
        g = 4 * hidden

        def run_one(d: int, reverse: bool, lo: int, hi: int) -> None:
            y_d = np.empty((steps, hi - lo, hidden), dtype=x.dtype)
            krnn.lstm(np.ascontiguousarray(xw[:, lo:hi, d * g:(d + 1) * g]), rt[d],
                      p[d] if p is not None else peep, p is not None, h0[d, lo:hi], c0[d, lo:hi],
                      reverse, y_d, h_out[d, lo:hi], c_out[d, lo:hi])
            y[:, d, lo:hi] = y_d

        self.each_direction(run_one, dirs, batch)
        return self.finish(layout, y, h_out, c_out)


@NumbaProvider.kernel("GRU", 7)
class GRU(_Recurrent):
    gates = 3

    def compute(self, x, w, r, b=None, seq=None, h0=None):  # type: ignore[no-untyped-def]
        layout, x, steps, batch, dirs, hidden, b, h0 = self.prepare(x, w, r, b, h0)
        y = np.empty((steps, dirs, batch, hidden), dtype=x.dtype)
        h_out = np.empty((dirs, batch, hidden), dtype=x.dtype)
        wt, bias, rt = self.packed(w, r, b)
        xw = self.projections(x, wt, bias)
        lbr = bool(self.attr("linear_before_reset", 0))
        g = 3 * hidden

        def run_one(d: int, reverse: bool, lo: int, hi: int) -> None:
            y_d = np.empty((steps, hi - lo, hidden), dtype=x.dtype)
            krnn.gru(np.ascontiguousarray(xw[:, lo:hi, d * g:(d + 1) * g]), rt[d],
                     np.ascontiguousarray(b[d, g:]), lbr, h0[d, lo:hi], reverse, y_d, h_out[d, lo:hi])
            y[:, d, lo:hi] = y_d

        self.each_direction(run_one, dirs, batch)
        return self.finish(layout, y, h_out)
