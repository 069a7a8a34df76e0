"""LSTM and GRU with their default activations: one GEMM projects every time step's input, then
each step is one batched GEMM over the stacked directions plus a few elementwise calls.

The reverse direction reads its inputs in reversed order (per sequence length) and its outputs
are put back in time order at the end; past a sequence's length the state is frozen and Y is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.ops._base import FLOAT_NO_HALF, INDEX, CupyKernel, dtypes_in
from onnxplug_cupy.provider import CupyProvider


@dataclass
class _Steps:
    feed: Any  # (S, D, B, G*H) input projections in the order each direction consumes them
    order: np.ndarray | None  # (S, B) time index consumed at step t (reverse direction, with lengths)
    active: Any  # (S, 1, B, 1) bool, or None when every sequence has the full length
    seq: int
    batch: int
    hidden: int


class _Recurrent(CupyKernel):
    gates = 1
    defaults: tuple[str, ...] = ()

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if node.attr("clip", None) is not None or int(node.attr("input_forget", 0)):
            return False
        direction = node.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            return False
        names = node.attr("activations", None)
        if names is not None:
            per = [str(n).lower() for n in names]
            want = [d.lower() for d in cls.defaults]
            if per not in (want, want * 2):
                return False
        data = [n for i, n in enumerate(node.inputs) if i != 4]
        lens = node.inputs[4:5]
        return dtypes_in(view, [*data, *node.outputs], FLOAT_NO_HALF) and dtypes_in(view, lens, INDEX) and \
            len({view.dtype_of(n) for n in [*data, *node.outputs] if n}) == 1

    def setup(self) -> None:
        self.direction = self.attr("direction", "forward")
        self.dirs = 2 if self.direction == "bidirectional" else 1
        self.layout = int(self.attr("layout", 0))

    def reversed_dirs(self) -> list[int]:
        return [d for d in range(self.dirs) if self.direction == "reverse" or d == 1]

    def steps(self, x: Any, w: Any, bias: Any, lens: Any) -> _Steps:
        """Project the inputs of every step: (S, D, B, G*H)."""
        xp = self.xp
        seq, batch, _ = x.shape
        gh = w.shape[1]
        xw = xp.matmul(x.reshape(seq * batch, -1), w.transpose(0, 2, 1)).reshape(self.dirs, seq, batch, gh)
        if bias is not None:
            xw += bias[:, None, None, :]
        lengths = self.host_ints(4, lens) if lens is not None else None
        order, active = None, None
        if lengths is not None and any(n != seq for n in lengths):
            t = np.arange(seq)[:, None]
            n = np.asarray(lengths, dtype=np.int64)[None, :]
            order = np.where(t < n, n - 1 - t, t)
            active = self.backend.to_device((t < n)[:, None, :, None])
        feed = xp.empty((seq, self.dirs, batch, gh), dtype=x.dtype)
        for d in range(self.dirs):
            if d in self.reversed_dirs():
                feed[:, d] = xw[d][xp.asarray(order), xp.arange(batch)[None, :]] if order is not None else xw[d][::-1]
            else:
                feed[:, d] = xw[d]
        return _Steps(feed, order, active, seq, batch, gh // self.gates)

    def state(self, value: Any, s: _Steps, dtype: np.dtype) -> Any:
        if value is None:
            return self.xp.zeros((self.dirs, s.batch, s.hidden), dtype=dtype)
        value = value.transpose(1, 0, 2) if self.layout == 1 else value
        return self.xp.array(value, dtype=dtype)  # a copy: the loop updates states in place

    def finish(self, ys: Any, states: list[Any], s: _Steps) -> tuple[Any, ...]:
        xp = self.xp
        if s.active is not None:
            ys *= s.active
        for d in self.reversed_dirs():
            ys[:, d] = ys[:, d][xp.asarray(s.order), xp.arange(s.batch)[None, :]] if s.order is not None \
                else ys[::-1, d].copy()
        if self.layout == 1:
            return (xp.ascontiguousarray(ys.transpose(2, 0, 1, 3)),) + \
                tuple(xp.ascontiguousarray(st.transpose(1, 0, 2)) for st in states)
        return (ys,) + tuple(states)

    def keep(self, t: int, s: _Steps, new: Any, old: Any) -> Any:
        """``new`` where step ``t`` is inside the sequence, else the frozen ``old``."""
        return new if s.active is None else self.xp.where(s.active[t], new, old)


@CupyProvider.kernel("LSTM", 7)
class LSTM(_Recurrent):
    """Gates i, o, f, c; optional peepholes P (i, o, f)."""

    gates = 4
    defaults = ("Sigmoid", "Tanh", "Tanh")

    def run(self, x: Any, w: Any, r: Any, b: Any = None, lens: Any = None, h0: Any = None, c0: Any = None,
            p: Any = None) -> tuple[Any, ...]:
        xp = self.xp
        if self.layout == 1:
            x = x.transpose(1, 0, 2)
        gh = w.shape[1]
        bias = None if b is None else b[:, :gh] + b[:, gh:]
        s = self.steps(x, w, bias, lens)
        h, c = self.state(h0, s, x.dtype), self.state(c0, s, x.dtype)
        hh = s.hidden
        rt = r.transpose(0, 2, 1)
        peep = None if p is None else p.reshape(self.dirs, 1, 3 * hh)
        ys = xp.empty((s.seq, self.dirs, s.batch, hh), dtype=x.dtype)
        for t in range(s.seq):
            g = s.feed[t] + xp.matmul(h, rt)  # (D, B, 4H)
            i, o, f, cand = g[..., :hh], g[..., hh:2 * hh], g[..., 2 * hh:3 * hh], g[..., 3 * hh:]
            if peep is not None:
                i = i + peep[..., :hh] * c
                f = f + peep[..., 2 * hh:] * c
            i, f, cand = _sigmoid(xp, i), _sigmoid(xp, f), xp.tanh(cand)
            c_new = f * c + i * cand
            if peep is not None:
                o = o + peep[..., hh:2 * hh] * c_new
            h_new = _sigmoid(xp, o) * xp.tanh(c_new)
            c = self.keep(t, s, c_new, c)
            h = self.keep(t, s, h_new, h)
            ys[t] = h_new
        return self.finish(ys, [h, c], s)[:max(len(self.node.outputs), 1)]


@CupyProvider.kernel("GRU", 7)
class GRU(_Recurrent):
    """Gates z, r, h; ``linear_before_reset`` applies R_h (and its bias) before the reset gate."""

    gates = 3
    defaults = ("Sigmoid", "Tanh")

    def run(self, x: Any, w: Any, r: Any, b: Any = None, lens: Any = None, h0: Any = None) -> tuple[Any, ...]:
        xp = self.xp
        if self.layout == 1:
            x = x.transpose(1, 0, 2)
        gh = w.shape[1]
        hh = gh // 3
        linear_before_reset = bool(int(self.attr("linear_before_reset", 0)))
        bias, rbh = None, None
        if b is not None:
            wb, rb = b[:, :gh], b[:, gh:]
            if linear_before_reset:  # R_h's bias stays inside the reset gate's product
                bias = wb + xp.concatenate([rb[:, :2 * hh], xp.zeros_like(rb[:, 2 * hh:])], axis=1)
                rbh = rb[:, None, 2 * hh:]
            else:
                bias = wb + rb
        s = self.steps(x, w, bias, lens)
        h = self.state(h0, s, x.dtype)
        rt = r.transpose(0, 2, 1)  # (D, H, 3H)
        ys = xp.empty((s.seq, self.dirs, s.batch, hh), dtype=x.dtype)
        for t in range(s.seq):
            feed = s.feed[t]
            zr = feed[..., :2 * hh] + xp.matmul(h, rt[..., :2 * hh])
            z, reset = _sigmoid(xp, zr[..., :hh]), _sigmoid(xp, zr[..., hh:])
            if linear_before_reset:
                rh = xp.matmul(h, rt[..., 2 * hh:])
                if rbh is not None:
                    rh = rh + rbh
                cand = xp.tanh(feed[..., 2 * hh:] + reset * rh)
            else:
                cand = xp.tanh(feed[..., 2 * hh:] + xp.matmul(reset * h, rt[..., 2 * hh:]))
            h_new = (1 - z) * cand + z * h
            h = self.keep(t, s, h_new, h)
            ys[t] = h_new
        return self.finish(ys, [h], s)[:max(len(self.node.outputs), 1)]


def _sigmoid(xp: Any, x: Any) -> Any:
    """1 / (1 + e^-x) through tanh, which cannot overflow."""
    return 0.5 * xp.tanh(0.5 * x) + 0.5
