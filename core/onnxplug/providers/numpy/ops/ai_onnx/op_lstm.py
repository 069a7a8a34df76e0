import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import (RecurrentKernel, blocked_steps, fast_feed, fast_outputs,
                                                    finish_direction, gate_scale, recurrent_weights, step_products)
from onnxplug.providers.numpy.registry import op


@op("LSTM")
class LSTM(RecurrentKernel):
    """LSTM with gates (i, o, f, c), optional peepholes P (i, o, f) and input_forget coupling."""

    gates = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p_peep=None):
        coupled = bool(self.attr("input_forget", 0))
        if (self.default_acts and self.clip is None and p_peep is None and not coupled and x.dtype.kind == "f"
                and self.full_lengths(x, sequence_lens)):
            return self._fast(x, w, r, b, initial_h, initial_c)
        p = self.prepare(x, w, r, b, sequence_lens, [True] * 4)
        hs = p.hidden
        h = self.initial_state(initial_h, p)
        c = self.initial_state(initial_c, p)
        peep = None
        if p_peep is not None:
            peep = p_peep.astype(x.dtype, copy=False).reshape(self.num_directions, 1, 3 * hs)
            pi, po, pf = peep[..., :hs], peep[..., hs:2 * hs], peep[..., 2 * hs:]
        # with no peepholes the three sigmoid gates (i, o, f) are one contiguous slice
        fused = peep is None and not coupled and not isinstance(self.activations[0], list)
        ys = np.empty((p.seq, self.num_directions, p.batch, hs), dtype=x.dtype)
        g = np.empty(h.shape[:-1] + (4 * hs,), dtype=x.dtype)
        for t in range(p.seq):
            matmul(h, p.rt, out=g)
            g += p.feed[t]
            gi, go, gf, gc = g[..., :hs], g[..., hs:2 * hs], g[..., 2 * hs:3 * hs], g[..., 3 * hs:]
            if fused:
                self.act(0, g[..., :3 * hs])
            else:
                if peep is not None:
                    gi += pi * c
                    gf += pf * c
                gi = self.act(0, gi)
                gf = 1 - gi if coupled else self.act(0, gf)
            gc = self.act(1, gc)
            cn = c * gf
            gc *= gi
            cn += gc
            if not fused:
                if peep is not None:
                    go += po * cn
                go = self.act(0, go)
            hn = self.act_h(cn.copy())
            hn *= go
            mask = p.step_mask(t)
            if mask is not None:
                hn = np.where(mask, hn, h)
                cn = np.where(mask, cn, c)
            ys[t] = hn
            h, c = ys[t], cn
        return self.finish(ys, [h.copy(), c], p)

    def act_h(self, x):
        """The output activation h(Ct); clip applies to gate inputs only."""
        f = self.activations[2]
        return f(x) if not isinstance(f, list) else np.stack([fd(x[d]) for d, fd in enumerate(f)])

    def _fast(self, x, w, r, b, h0, c0):
        """Default activations, no peepholes, all sequences full: one direction at a time, gate-major
        (see ``_rnn_util``), gates reordered (o, i, f, c) with o, i, f negated for 1 / (1 + exp(-x))."""
        dtype = x.dtype
        hs = w.shape[1] // 4
        scale = gate_scale(self, hs, dtype)
        batch = x.shape[0 if self.layout == 1 else 1]
        blocked = blocked_steps(batch, hs)
        feeds = fast_feed(self, x, w, b, scale, [True] * 4, _ORDER, blocked)
        d_count, seq = len(feeds), feeds[0].shape[0]
        weights = recurrent_weights(self, r, scale, _ORDER, batch, blocked)
        ys = np.empty((seq, d_count, batch, hs), dtype=dtype)
        h_last = np.empty((d_count, batch, hs), dtype=dtype)
        c_last = np.empty((d_count, batch, hs), dtype=dtype)
        for d in range(d_count):
            h_first = 0 if h0 is None else (h0[:, d] if self.layout == 1 else h0[d])
            c_first = 0 if c0 is None else (c0[:, d] if self.layout == 1 else c0[d])
            if blocked:  # h per step (B, H), slot 0 the initial one
                states = np.empty((seq + 1, batch, hs), dtype=dtype)
                states[0] = h_first
                c_last[d] = _lstm_direction(feeds[d], weights[d], states, c_first)
            else:  # h^T per step (H, B)
                states = np.empty((seq + 1, hs, batch), dtype=dtype)
                states[0] = np.transpose(h_first)
                c_last[d] = _lstm_direction(feeds[d], weights[d], states, np.transpose(c_first)).T
            h_last[d] = finish_direction(ys, d, self.is_reverse(d), states, blocked)
        if not seq:  # as onnxruntime: a sequence without steps ends in zero states
            h_last[...] = 0
            c_last[...] = 0
        return fast_outputs(self, ys, [h_last, c_last])


#: The fast path's gate order (ONNX indices of i, o, f, c): o first, then i, f next to each other.
_ORDER = (1, 0, 2, 3)


def _lstm_direction(feed: np.ndarray, weights: np.ndarray, states: np.ndarray, c_first) -> np.ndarray:
    """One direction of the fast path, gate-major: ``states[t + 1]`` (H, B) receives step t's h;
    returns the final cell state (H, B). Gate-blocked (``_rnn_util.blocked_steps``) the same code
    runs on (B, H) blocks: ``states`` (S + 1, B, H), ``feed`` (S, 4B, H), the cell (B, H).

    ``feed`` (S, 4H, B) and ``weights`` (see ``step_products``) have the gates in the order o, i, f, c
    with o, i, f negated, so 1 + exp(gate) is 1 / sigmoid: the loop divides by it instead of
    multiplying by the sigmoid. One (5H, B) buffer holds [o, i, f, g, cell], so that i * g and f * c
    are a single division of the contiguous [g, cell] by the contiguous [1 + exp(-i), 1 + exp(-f)].
    """
    hs, batch = states.shape[1:]
    dtype = feed.dtype
    one = np.array(1, dtype=dtype)  # a 0-d array operand dispatches faster than a scalar
    buf = np.empty((5 * hs, batch), dtype=dtype)
    gates, sig, inv_o, g, cell = buf[:4 * hs], buf[:3 * hs], buf[:hs], buf[3 * hs:4 * hs], buf[4 * hs:]
    cell[...] = c_first
    g_cell, inv_if = buf[3 * hs:], buf[hs:3 * hs]
    prod = np.empty((2 * hs, batch), dtype=dtype)
    ig, fc = prod[:hs], prod[hs:]
    tanh_c = np.empty((hs, batch), dtype=dtype)
    tanh, exp, add, divide = np.tanh, np.exp, np.add, np.divide
    # outputs are passed positionally (a little faster than out=); exp(-x) = inf (the executor runs
    # kernels with numpy's warnings off) gives the right limits: 1 / inf = 0
    for (dot, operand, out), x_t, h_out in zip(step_products(weights, states[:-1], gates), feed, states[1:]):
        dot(operand, out)
        add(gates, x_t, gates)
        exp(sig, sig)
        add(sig, one, sig)
        tanh(g, g)
        divide(g_cell, inv_if, prod)
        add(ig, fc, cell)
        tanh(cell, tanh_c)
        divide(tanh_c, inv_o, h_out)
    return cell
