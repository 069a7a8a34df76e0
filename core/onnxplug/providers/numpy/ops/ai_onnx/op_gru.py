import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import (RecurrentKernel, fast_feed, fast_outputs, finish_direction,
                                                    gate_scale, recurrent_weights, step_products)
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
        """Default activations, all sequences full: one direction at a time, gate-major (see
        ``_rnn_util``), with the z and r columns of W, R and B negated for 1 / (1 + exp(-x))."""
        dtype = x.dtype
        hs = w.shape[1] // 3
        scale = gate_scale(self, hs, dtype)
        feeds = fast_feed(self, x, w, b, scale, [True, True, not lbr], _ORDER)
        d_count, (seq, _, batch) = len(feeds), feeds[0].shape
        weights = recurrent_weights(self, r, scale, _ORDER, batch)
        if lbr:
            # R h + Rb comes out of one product: the n part of each step's feed holds Rb_h (it is added
            # before r multiplies), and the input part of n is added after
            feed_n = [f[:, 2 * hs:].copy() for f in feeds]
            for d, f in enumerate(feeds):
                f[:, 2 * hs:] = 0 if b is None else b[d, None, 5 * hs:, None].astype(dtype, copy=False)
            feed_zr, w_zr, w_n = feeds, weights, [None] * d_count
        else:
            feed_zr, feed_n = [f[:, :2 * hs] for f in feeds], [f[:, 2 * hs:] for f in feeds]
            axis = 2 if batch == 1 else 1  # the gate axis: of R^T for batch 1, of R otherwise
            w_zr, w_n = (self.derived(f"{name} {axis}", (r,), lambda part=part: np.ascontiguousarray(part))
                         for name, part in zip(("w_zr", "w_n"), np.split(weights, [2 * hs], axis=axis)))
        ys = np.empty((seq, d_count, batch, hs), dtype=dtype)
        h_last = np.empty((d_count, batch, hs), dtype=dtype)
        for d in range(d_count):
            states = np.empty((seq + 1, hs, batch), dtype=dtype)  # h^T per step, slot 0 the initial one
            states[0] = 0 if h0 is None else (h0[:, d] if self.layout == 1 else h0[d]).T
            _gru_direction(feed_zr[d], feed_n[d], w_zr[d], w_n[d], states)
            h_last[d] = finish_direction(ys, d, self.is_reverse(d), states)
        if not seq:  # as onnxruntime: a sequence without steps ends in zero states
            h_last[...] = 0
        return fast_outputs(self, ys, [h_last])


#: The fast path's gate order (ONNX indices of z, r, h): unchanged.
_ORDER = (0, 1, 2)


def _gru_direction(feed_zr: np.ndarray, feed_n: np.ndarray, weights: np.ndarray, w_n: np.ndarray | None,
                   states: np.ndarray) -> None:
    """One direction of the fast path, gate-major: ``states[t + 1]`` (H, B) receives step t's h.

    With ``w_n`` None (linear_before_reset) ``weights`` give [z, r, R_h h] in one product and each
    ``feed_zr`` step (3H, B) adds [inputs of z and r, Rb_h]; otherwise ``weights`` give z, r and
    ``w_n`` multiplies r * h (layouts as ``step_products``). z and r are negated, so 1 + exp(gate) is
    1 / sigmoid: the loop divides by it instead of multiplying by the sigmoid. ``feed_n`` (S, H, B).
    """
    hs, batch = states.shape[1:]
    dtype = feed_n.dtype
    one = np.array(1, dtype=dtype)  # a 0-d array operand dispatches faster than a scalar
    hr = np.empty((feed_zr.shape[1], batch), dtype=dtype)
    # after exp and + 1, inv_z and inv_r hold 1 / z and 1 / r
    zr, inv_z, inv_r, r_h = hr[:2 * hs], hr[:hs], hr[hs:2 * hs], hr[2 * hs:]
    n = np.empty((hs, batch), dtype=dtype)
    diff = np.empty((hs, batch), dtype=dtype)
    tanh, exp, add, subtract, divide = np.tanh, np.exp, np.add, np.subtract, np.divide
    steps = zip(step_products(weights, states[:-1], hr), feed_zr, feed_n, states[:-1], states[1:])
    # outputs are passed positionally (a little faster than out=); exp(-x) = inf (the executor runs
    # kernels with numpy's warnings off) gives the right limits: 1 / inf = 0
    if w_n is None:
        for (dot, operand, out), x_t, xn_t, h, h_out in steps:
            dot(operand, out)
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
        rh = np.empty((hs, batch), dtype=dtype)
        ((n_dot, n_operand, n_out),) = step_products(w_n, [rh], n)
        for (dot, operand, out), x_t, xn_t, h, h_out in steps:
            dot(operand, out)
            add(zr, x_t, zr)
            exp(zr, zr)
            add(zr, one, zr)
            divide(h, inv_r, rh)
            n_dot(n_operand, n_out)
            add(n, xn_t, n)
            tanh(n, n)
            subtract(h, n, diff)
            divide(diff, inv_z, diff)
            add(diff, n, h_out)
