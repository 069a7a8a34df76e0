import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import (RecurrentKernel, direction_steps, fast_feed, fast_outputs,
                                                    gate_scale, recurrent_weights)
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
        """Default activations, no peepholes, all sequences full: one direction at a time (see
        ``_rnn_util``), with the i, o, f columns of W, R and B negated for 1 / (1 + exp(-x))."""
        dtype = x.dtype
        hs = w.shape[1] // 4
        scale = gate_scale(self, hs, dtype)
        feed = fast_feed(self, x, w, b, scale, [True] * 4)
        rt = recurrent_weights(self, r, scale)
        d_count, seq, batch = feed.shape[:3]
        ys = np.empty((seq, d_count, batch, hs), dtype=dtype)
        h_last = np.zeros((d_count, batch, hs), dtype=dtype)
        c_last = np.zeros((d_count, batch, hs), dtype=dtype)
        for d in range(d_count):
            if h0 is not None:
                h_last[d] = h0[:, d] if self.layout == 1 else h0[d]
            if c0 is not None:
                c_last[d] = c0[:, d] if self.layout == 1 else c0[d]
            steps = direction_steps(ys, d, self.is_reverse(d), h_last[d].copy())
            _lstm_direction(feed[d], rt[d], steps, c_last[d])
            if seq:
                h_last[d] = steps[-1][1]
        if not seq:  # as onnxruntime: a sequence without steps ends in zero states
            for state in [h_last, c_last]:
                state[...] = 0
        return fast_outputs(self, ys, [h_last, c_last])


def _lstm_direction(feed: np.ndarray, rt: np.ndarray, steps: list, c: np.ndarray) -> None:
    """One direction of the fast path: writes each step's h where ``steps`` says, leaves the final
    cell state in ``c`` (B, H).

    ``feed`` (S, B, 4H) and ``rt`` (H, 4H) have the i, o, f columns negated, so 1 + exp(gate) is
    1 / sigmoid: the loop divides by it instead of multiplying by the sigmoid. The gates live in
    mem[0] (B, 4H) and the cell state in mem[1][:, :H]; a view pairs them so that f * c and i * g
    are one division of [c, g] by [1 + exp(-f), 1 + exp(-i)].
    """
    batch, hs = c.shape
    dtype = feed.dtype
    one = np.array(1, dtype=dtype)  # a 0-d array operand dispatches faster than a scalar
    mem = np.empty((2, batch, 4 * hs), dtype=dtype)
    gates, cell = mem[0], mem[1, :, :hs]
    cell[...] = c
    iof, o, g = gates[:, :3 * hs], gates[:, hs:2 * hs], gates[:, 3 * hs:]
    fi = gates.reshape(batch, 4, hs)[:, 2::-2]  # (B, 2, H): f then i
    # (B, 2, H): c (mem[1][b, :H]) then g (mem[0][b, 3H:]), one fixed step apart for every b
    item = mem.itemsize
    cg = np.lib.stride_tricks.as_strided(mem[1], shape=(batch, 2, hs),
                                         strides=(4 * hs * item, (3 * hs - 4 * batch * hs) * item, item))
    prod = np.empty((batch, 2, hs), dtype=dtype)
    fc, ig = prod[:, 0], prod[:, 1]
    tanh_c = np.empty((batch, hs), dtype=dtype)
    # ndarray.dot: the same BLAS call as np.matmul with ~0.8 us less dispatch (measured, batch 1)
    tanh, exp, add, divide = np.tanh, np.exp, np.add, np.divide
    # outputs are passed positionally (a little faster than out=); exp(-x) = inf (the executor runs
    # kernels with numpy's warnings off) gives the right limits: 1 / inf = 0
    for (h, h_out), x_t in zip(steps, feed):
        h.dot(rt, gates)
        add(gates, x_t, gates)
        exp(iof, iof)
        add(iof, one, iof)
        tanh(g, g)
        divide(cg, fi, prod)
        add(fc, ig, cell)
        tanh(cell, tanh_c)
        divide(tanh_c, o, h_out)
    c[...] = cell
