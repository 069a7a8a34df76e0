import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import (RecurrentKernel, direction_steps, fast_feed, fast_outputs,
                                                    gate_scale, recurrent_weights)
from onnxplug.providers.numpy.registry import op


@op("GRU")
class GRU(RecurrentKernel):
    """GRU with gates (z, r, h); linear_before_reset applies r after the recurrent matmul."""

    gates = 3
    default_activations = ("Sigmoid", "Tanh")

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None):
        lbr = bool(self.attr("linear_before_reset", 0))
        if self.default_acts and self.clip is None and x.dtype.kind == "f" and self.full_lengths(x, sequence_lens):
            return self._fast(x, w, r, b, initial_h, lbr)
        p = self.prepare(x, w, r, b, sequence_lens, [True, True, not lbr])
        hs = p.hidden
        h = self.initial_state(initial_h, p)
        ys = np.empty((p.seq, self.num_directions, p.batch, hs), dtype=x.dtype)
        rt_zr, rt_h = p.rt[..., :2 * hs], p.rt[..., 2 * hs:]
        rb_h = None if p.rb is None else p.rb[:, None, 2 * hs:]
        hr = np.empty(h.shape[:-1] + (3 * hs if lbr else 2 * hs,), dtype=x.dtype)
        for t in range(p.seq):
            feed = p.feed[t]
            matmul(h, p.rt if lbr else rt_zr, out=hr)
            zr = hr[..., :2 * hs]
            zr += feed[..., :2 * hs]
            zr = self.act(0, zr)
            z, rg = zr[..., :hs], zr[..., hs:]
            if lbr:
                n = hr[..., 2 * hs:]
                if rb_h is not None:
                    n += rb_h
                n *= rg
            else:
                n = matmul(rg * h, rt_h)
                if rb_h is not None:
                    n += rb_h
            n += feed[..., 2 * hs:]
            n = self.act(1, n)
            hn = h - n
            hn *= z
            hn += n
            mask = p.step_mask(t)
            ys[t] = hn if mask is None else np.where(mask, hn, h)
            h = ys[t]
        return self.finish(ys, [h.copy()], p)

    def _fast(self, x, w, r, b, h0, lbr):
        """Default activations, all sequences full: one direction at a time (see ``_rnn_util``), with
        the z and r columns of W, R and B negated for 1 / (1 + exp(-x))."""
        dtype = x.dtype
        hs = w.shape[1] // 3
        scale = gate_scale(self, hs, dtype)
        feed = fast_feed(self, x, w, b, scale, [True, True, not lbr])
        rt = recurrent_weights(self, r, scale)
        d_count, seq, batch = feed.shape[:3]
        if lbr:
            # R h + Rb comes out of one product: the n part of each step's feed holds Rb_h (it is added
            # before r multiplies), and the input part of n is added after
            feed_n = feed[..., 2 * hs:].copy()
            feed[..., 2 * hs:] = 0 if b is None else b[:, None, None, 5 * hs:].astype(dtype, copy=False)
            feed_zr, rt_zr = feed, rt
            rt_n = [None] * d_count
        else:
            feed_zr, feed_n = feed[..., :2 * hs], feed[..., 2 * hs:]
            rt_zr = self.derived("rt_zr", (r,), lambda: np.ascontiguousarray(rt[..., :2 * hs]))
            rt_n = self.derived("rt_n", (r,), lambda: np.ascontiguousarray(rt[..., 2 * hs:]))
        ys = np.empty((seq, d_count, batch, hs), dtype=dtype)
        h_last = np.zeros((d_count, batch, hs), dtype=dtype)
        for d in range(d_count):
            if h0 is not None:
                h_last[d] = h0[:, d] if self.layout == 1 else h0[d]
            steps = direction_steps(ys, d, self.is_reverse(d), h_last[d].copy())
            _gru_direction(feed_zr[d], feed_n[d], rt_zr[d], rt_n[d], steps)
            if seq:
                h_last[d] = steps[-1][1]
        if not seq:  # as onnxruntime: a sequence without steps ends in zero states
            for state in [h_last]:
                state[...] = 0
        return fast_outputs(self, ys, [h_last])


def _gru_direction(feed_zr: np.ndarray, feed_n: np.ndarray, rt: np.ndarray, rt_n: np.ndarray | None,
                   steps: list) -> None:
    """One direction of the fast path: writes each step's h where ``steps`` says.

    With ``rt_n`` None (linear_before_reset) ``rt`` (H, 3H) gives [z, r, R_h h] in one product and
    each ``feed_zr`` step (B, 3H) adds [inputs of z and r, Rb_h]; otherwise ``rt`` (H, 2H) gives z, r
    and ``rt_n`` (H, H) multiplies r * h. z and r columns are negated, so 1 + exp(gate) is
    1 / sigmoid: the loop divides by it instead of multiplying by the sigmoid. ``feed_n`` (S, B, H).
    """
    hs = feed_n.shape[-1]
    batch = feed_n.shape[1]
    dtype = feed_n.dtype
    one = np.array(1, dtype=dtype)  # a 0-d array operand dispatches faster than a scalar
    hr = np.empty((batch, rt.shape[1]), dtype=dtype)
    # after exp and + 1, inv_z and inv_r hold 1 / z and 1 / r
    zr, inv_z, inv_r, r_h = hr[:, :2 * hs], hr[:, :hs], hr[:, hs:2 * hs], hr[:, 2 * hs:]
    n = np.empty((batch, hs), dtype=dtype)
    diff = np.empty((batch, hs), dtype=dtype)
    # ndarray.dot: the same BLAS call as np.matmul with ~0.8 us less dispatch (measured, batch 1)
    tanh, exp, add, subtract, divide = np.tanh, np.exp, np.add, np.subtract, np.divide
    # outputs are passed positionally (a little faster than out=); exp(-x) = inf (the executor runs
    # kernels with numpy's warnings off) gives the right limits: 1 / inf = 0
    if rt_n is None:
        for (h, h_out), x_t, xn_t in zip(steps, feed_zr, feed_n):
            h.dot(rt, hr)
            add(hr, x_t, hr)
            exp(zr, zr)
            add(zr, one, zr)
            divide(r_h, inv_r, n)
            add(n, xn_t, n)
            tanh(n, n)
            subtract(h, n, diff)
            divide(diff, inv_z, diff)
            add(diff, n, h_out)
    else:
        rh = np.empty((batch, hs), dtype=dtype)
        for (h, h_out), x_t, xn_t in zip(steps, feed_zr, feed_n):
            h.dot(rt, zr)
            add(zr, x_t, zr)
            exp(zr, zr)
            add(zr, one, zr)
            divide(h, inv_r, rh)
            rh.dot(rt_n, n)
            add(n, xn_t, n)
            tanh(n, n)
            subtract(h, n, diff)
            divide(diff, inv_z, diff)
            add(diff, n, h_out)
