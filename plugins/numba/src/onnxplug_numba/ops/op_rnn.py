"""LSTM and GRU with the default activations: BLAS input projections + compiled recurrences.

Each direction (or, for one direction, each band of the batch) runs on its own thread: the input
projections of all its time steps as one BLAS product (one BLAS thread per call), then its
compiled recurrence, which releases the GIL. The float32 recurrent weights are packed once into
the panels of the tiled step product (kernels/rnn_tile.py).
"""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_numba.kernels import native_parallel
from onnxplug_numba.kernels import rnn as krnn
from onnxplug_numba.kernels import rnn_tile
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, all_present_same, matmul
from onnxplug_numba.provider import NumbaProvider

#: Batch rows per band of a one-direction recurrence on the pool threads (at least). Handing a band
#: to a pool thread costs a wake-up of a halted virtual CPU per call, more than a small band's work
#: (docs/benchmarks.md, "Measurements behind design choices").
RNN_BAND_MIN_ROWS = 128

_DEFAULTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


#: Largest W + R + B (bytes) whose packed forms are kept by value (a copy of each is kept to compare).
_BY_VALUE_MAX_BYTES = 16 << 20


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two C-contiguous arrays hold the same bits (NaNs and signed zeros included)."""
    if a.shape != b.shape or a.dtype != b.dtype or not a.flags.c_contiguous:
        return False
    unsigned = np.dtype(f"u{a.itemsize}")
    return bool(np.array_equal(a.view(unsigned), b.view(unsigned)))


class _Recurrent(NumbaKernel):
    gates = 4

    def __init__(self, node: Node, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(node, context)
        self._packed: tuple[tuple[object, ...], tuple[list[np.ndarray], list[np.ndarray],
                                                     list[tuple[np.ndarray, ...]]]] | None = None
        self._joined: tuple[np.ndarray, np.ndarray] | None = None  # (W[0]^T, [W[0]^T | W[1]^T])
        # (copies of W, R, B, their packed forms): weights the graph computes each run
        self._by_value: tuple[tuple[np.ndarray, ...], tuple] | None = None  # type: ignore[type-arg]

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        acts = node.attr("activations")
        if acts is not None:
            default = _DEFAULTS[node.op_type]
            if [a.lower() for a in acts] not in ([a.lower() for a in default], [a.lower() for a in default * 2]):
                return Decline("attribute", f"activations {list(acts)} (only the defaults {default})")
        if node.attr("clip") is not None or node.attr("input_forget", 0):
            return Decline("attribute", "clip or input_forget is not computed")
        if node.attr("activation_alpha") is not None or node.attr("activation_beta") is not None:
            return Decline("attribute", "activation_alpha or activation_beta is not computed")
        if len(node.inputs) > 4 and node.inputs[4]:
            return Decline("attribute", "a sequence_lens input is not computed")
        if node.op_type == "GRU" and node.opset < 3:
            return Decline("attribute", f"GRU at opset {node.opset} (from opset 3 only)")
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

    def packed(self, w: np.ndarray, r: np.ndarray, b: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray],
                                                                              list[tuple[np.ndarray, ...]]]:
        """Per direction: ``W[d]^T`` (K, G*H), the bias added to its projections (G*H) and the
        recurrent weights of :meth:`recurrent_weights`; kept across runs when W, R and B are
        constant initializers."""
        key = (w, r, b)
        cached = self._packed
        if cached is not None and all(a is k for a, k in zip(cached[0], key)):
            return cached[1]
        by_value = self._by_value
        if by_value is not None and all(_same_bits(a, k) for a, k in zip(by_value[0], key)):
            return by_value[1]
        dirs, rows, _ = w.shape
        wt = [np.ascontiguousarray(w[d].T) for d in range(dirs)]
        bias = [np.ascontiguousarray(self.input_bias(b[d], rows)) for d in range(dirs)]
        rec = [self.recurrent_weights(np.ascontiguousarray(r[d].T), b[d]) for d in range(dirs)]
        names = self.node.inputs
        if all(i < len(names) and names[i] in self.context.constants for i in (1, 2, 3)):
            self._packed = (key, (wt, bias, rec))
        elif all(a.flags.c_contiguous for a in key) and w.nbytes + r.nbytes + b.nbytes <= _BY_VALUE_MAX_BYTES:
            # weights computed from constants each run (silero-vad's LSTMs take an Unsqueeze of a
            # Concat inside an If branch): comparing them is cheaper than packing them again
            self._by_value = (tuple(a.copy() for a in key), (wt, bias, rec))
        return wt, bias, rec

    def input_bias(self, b: np.ndarray, rows: int) -> np.ndarray:
        """The bias added to the input projections of one direction (G*H)."""
        return b[:rows]

    def recurrent_weights(self, rt: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """One direction's R^T (H, G*H) in the kernel's form: float32 panels for the tiled
        product, else as it is."""
        return (pack(rt),)

    def both_directions(self, x: np.ndarray, wt: list[np.ndarray]) -> np.ndarray | None:
        """The input projections of both directions of a bidirectional layer, (T, B, 2, G*H), as
        one product, when the two recurrences are to run in one prange region; else None."""
        if not (native_parallel.PRANGE_AVAILABLE and self.threads.parallel and len(wt) == 2
                and self.directions(2) == [False, True]):
            return None
        joined = self._joined
        if joined is None or joined[0] is not wt[0]:
            joined = self._joined = (wt[0], np.concatenate(wt, axis=1))
        steps, batch, _ = x.shape
        self.threads.blas()
        xw = matmul(x.reshape(steps * batch, -1), joined[1], self.threads)
        native_parallel.use_threads(2)
        return xw.reshape(steps, batch, 2, -1)

    def each_direction(self, run_one, x: np.ndarray, wt: list[np.ndarray], dirs: int) -> None:  # type: ignore[no-untyped-def]
        """``run_one(d, reverse, lo, hi, xw)`` for every direction and band of batch rows, ``xw``
        being the band's input projections (T, rows, G*H) without bias: the directions on separate
        threads, each projecting its own inputs first (BLAS at one thread per call), so no thread
        waits for the others' products; or (one direction) one product, shared by the threads,
        then bands of the batch (a band's own product would round differently from the whole
        batch's, and results must not depend on the thread count)."""
        steps, batch, _ = x.shape
        modes = self.directions(dirs)
        self.threads.blas()
        flat = x.reshape(steps * batch, -1)
        if dirs == 1:
            # not on the prange path: prange workers still spinning after the product would take
            # the cores the pool threads need next
            xw = matmul(flat, wt[0], self.threads, native=False).reshape(steps, batch, -1)
            bands = max(1, min(self.threads.count, batch // RNN_BAND_MIN_ROWS))
            if bands == 1:
                run_one(0, modes[0], 0, batch, xw)
                return
            bounds = [batch * i // bands for i in range(bands + 1)]
            self.threads.run(lambda lo, hi: [run_one(0, modes[0], bounds[i], bounds[i + 1], np.ascontiguousarray(
                xw[:, bounds[i]:bounds[i + 1]])) for i in range(lo, hi)], bands)
            return
        self.threads.run(lambda lo, hi: [run_one(d, modes[d], 0, batch, np.dot(flat, wt[d]).reshape(steps, batch, -1))
                                         for d in range(lo, hi)], dirs, spread=True)

    def finish(self, layout: int, y: np.ndarray, *states: np.ndarray) -> tuple[np.ndarray, ...]:
        if layout:  # (T, D, B, H) -> (B, T, D, H); states (D, B, H) -> (B, D, H)
            return (np.ascontiguousarray(y.transpose(2, 0, 1, 3)),
                    *[np.ascontiguousarray(s.transpose(1, 0, 2)) for s in states])
        return (y, *states)


def pack(rt: np.ndarray) -> np.ndarray:
    """R^T (H, cols) as the kernels take it: float32 packed in panels for the tiled product."""
    return rnn_tile.pack_panels(rt) if rt.dtype == np.float32 else np.ascontiguousarray(rt)


@NumbaProvider.kernel("LSTM", 7)
class LSTM(_Recurrent):
    def input_bias(self, b: np.ndarray, rows: int) -> np.ndarray:
        return b[:rows] + b[rows:]  # LSTM has no bias inside a gate: both add up front

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
        wt, bias, rec = self.packed(w, r, b)
        peep = np.zeros(3 * hidden, dtype=x.dtype)
        xw = self.both_directions(x, wt)
        if xw is not None:
            krnn.lstm_both_directions(xw, np.stack(bias), rec[0][0], rec[1][0], p if p is not None else np.stack(
                [peep, peep]), p is not None, h0, c0, y, h_out, c_out)
            return self.finish(layout, y, h_out, c_out)

        def run_one(d: int, reverse: bool, lo: int, hi: int, xw: np.ndarray) -> None:
            krnn.lstm(xw, bias[d], rec[d][0], p[d] if p is not None else peep, p is not None, h0[d, lo:hi],
                      c0[d, lo:hi], reverse, y[:, d, lo:hi], h_out[d, lo:hi], c_out[d, lo:hi])

        self.each_direction(run_one, x, wt, dirs)
        return self.finish(layout, y, h_out, c_out)


@NumbaProvider.kernel("GRU", 7)
class GRU(_Recurrent):
    gates = 3

    def recurrent_weights(self, rt: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """R^T of gates z, r and of gate h apart (the h product may take r * h), and the
        recurrence biases."""
        two = 2 * rt.shape[0]
        return pack(rt[:, :two]), pack(rt[:, two:]), np.ascontiguousarray(b[3 * rt.shape[0]:])

    def compute(self, x, w, r, b=None, seq=None, h0=None):  # type: ignore[no-untyped-def]
        layout, x, steps, batch, dirs, hidden, b, h0 = self.prepare(x, w, r, b, h0)
        y = np.empty((steps, dirs, batch, hidden), dtype=x.dtype)
        h_out = np.empty((dirs, batch, hidden), dtype=x.dtype)
        wt, bias, rec = self.packed(w, r, b)
        lbr = bool(self.attr("linear_before_reset", 0))
        xw = self.both_directions(x, wt)
        if xw is not None:
            (w_zr0, w_h0, rb0), (w_zr1, w_h1, rb1) = rec
            krnn.gru_both_directions(xw, np.stack(bias), w_zr0, w_h0, w_zr1, w_h1, np.stack([rb0, rb1]), lbr, h0, y,
                                     h_out)
            return self.finish(layout, y, h_out)

        def run_one(d: int, reverse: bool, lo: int, hi: int, xw: np.ndarray) -> None:
            w_zr, w_h, rb = rec[d]
            krnn.gru(xw, bias[d], w_zr, w_h, rb, lbr, h0[d, lo:hi], reverse, y[:, d, lo:hi], h_out[d, lo:hi])

        self.each_direction(run_one, x, wt, dirs)
        return self.finish(layout, y, h_out)
