"""LSTM and GRU with the default activations: BLAS input projections + compiled recurrences."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_numba.kernels import rnn as krnn
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, all_present_same
from onnxplug_numba.provider import NumbaProvider

_DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


class _Recurrent(NumbaKernel):
    gates = 4

    def __init__(self, node: Node, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(node, context)
        self._rt: tuple[np.ndarray, list[np.ndarray]] | None = None

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

    def transposed_r(self, r: np.ndarray) -> list[np.ndarray]:
        """``R[d]^T`` per direction, contiguous; kept across runs when R is a constant initializer."""
        cached = self._rt
        if cached is not None and cached[0] is r:
            return cached[1]
        rt = [np.ascontiguousarray(r[d].T) for d in range(r.shape[0])]
        if self.node.inputs[2] in self.context.constants:
            self._rt = (r, rt)
        return rt

    def each_direction(self, run_one, dirs: int) -> None:  # type: ignore[no-untyped-def]
        """``run_one(d, reverse)`` for every direction, the directions on separate threads."""
        modes = self.directions(dirs)
        self.threads.run(lambda lo, hi: [run_one(d, modes[d]) for d in range(lo, hi)], dirs)

    def finish(self, layout: int, y: np.ndarray, *states: np.ndarray) -> tuple[np.ndarray, ...]:
        if layout:  # (T, D, B, H) -> (B, T, D, H); states (D, B, H) -> (B, D, H)
            return (np.ascontiguousarray(y.transpose(2, 0, 1, 3)),
                    *[np.ascontiguousarray(s.transpose(1, 0, 2)) for s in states])
        return (y, *states)


@NumbaProvider.kernel("LSTM", 7)
class LSTM(_Recurrent):
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
        flat = x.reshape(steps * batch, -1)
        rt = self.transposed_r(r)
        peep = np.zeros(3 * hidden, dtype=x.dtype)

        def run_one(d: int, reverse: bool) -> None:
            bias = b[d, :4 * hidden] + b[d, 4 * hidden:]
            xw = np.matmul(flat, w[d].T)
            xw += bias
            y_d = np.empty((steps, batch, hidden), dtype=x.dtype)
            krnn.lstm(xw.reshape(steps, batch, 4 * hidden), rt[d], p[d] if p is not None else peep,
                      p is not None, h0[d], c0[d], reverse, y_d, h_out[d], c_out[d])
            y[:, d] = y_d

        self.threads.blas()
        self.each_direction(run_one, dirs)
        return self.finish(layout, y, h_out, c_out)


@NumbaProvider.kernel("GRU", 7)
class GRU(_Recurrent):
    gates = 3

    def compute(self, x, w, r, b=None, seq=None, h0=None):  # type: ignore[no-untyped-def]
        layout, x, steps, batch, dirs, hidden, b, h0 = self.prepare(x, w, r, b, h0)
        y = np.empty((steps, dirs, batch, hidden), dtype=x.dtype)
        h_out = np.empty((dirs, batch, hidden), dtype=x.dtype)
        flat = x.reshape(steps * batch, -1)
        rt = self.transposed_r(r)
        lbr = bool(self.attr("linear_before_reset", 0))

        def run_one(d: int, reverse: bool) -> None:
            xw = np.matmul(flat, w[d].T)
            xw += b[d, :3 * hidden]
            y_d = np.empty((steps, batch, hidden), dtype=x.dtype)
            krnn.gru(xw.reshape(steps, batch, 3 * hidden), rt[d], np.ascontiguousarray(b[d, 3 * hidden:]),
                     lbr, h0[d], reverse, y_d, h_out[d])
            y[:, d] = y_d

        self.threads.blas()
        self.each_direction(run_one, dirs)
        return self.finish(layout, y, h_out)
