import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import RecurrentKernel, augmented_weights, state_buffer
from onnxplug.providers.numpy.registry import op


@op("LSTM")
class LSTM(RecurrentKernel):
    """LSTM with gates (i, o, f, c), optional peepholes P (i, o, f) and input_forget coupling."""

    gates = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p_peep=None):
        p = self.prepare(x, w, r, b, sequence_lens, [True] * 4)
        hs = p.hidden
        h = self.initial_state(initial_h, p)
        c = self.initial_state(initial_c, p)
        coupled = bool(self.attr("input_forget", 0))
        if (self.default_acts and self.clip is None and p.active is None and p_peep is None and not coupled
                and x.dtype.kind == "f"):
            return self._fast(p, h, c, r, b)
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

    def _fast(self, p, h0, c0, r, b):
        """Default activations, no peepholes, all sequences full: one tanh over all four gates.

        The i, o, f inputs are half-scaled so sigmoid(x) = (1 + tanh(x / 2)) / 2, and the recurrent
        bias rides inside the matmul on a state with a trailing 1.
        """
        hs = p.hidden
        half = np.ones(4 * hs, dtype=p.feed.dtype)
        half[:3 * hs] = 0.5
        feed = p.feed
        feed *= half
        rt = self.derived("rt_aug", (r, b), lambda: augmented_weights(p.rt, p.rb, half))
        buf = state_buffer(p, h0)
        c = c0.copy()
        g = np.empty(h0.shape[:-1] + (4 * hs,), dtype=p.feed.dtype)
        tmp = np.empty_like(c)
        # views made once: the loop body is only ufunc calls on preallocated buffers
        iof, gi, go, gf, gc = (g[..., :3 * hs], g[..., :hs], g[..., hs:2 * hs], g[..., 2 * hs:3 * hs],
                               g[..., 3 * hs:])
        outs = [buf[t + 1, ..., :hs] for t in range(p.seq)]
        matmul, tanh, multiply = np.matmul, np.tanh, np.multiply
        for t in range(p.seq):
            matmul(buf[t], rt, out=g)
            g += feed[t]
            tanh(g, out=g)
            iof *= 0.5
            iof += 0.5
            c *= gf
            multiply(gi, gc, out=tmp)
            c += tmp
            tanh(c, out=tmp)
            multiply(go, tmp, out=outs[t])
        ys = buf[1:, ..., :hs]
        return self.finish(np.ascontiguousarray(ys), [ys[-1].copy(), c], p)
