import numpy as np

from onnxplug.providers.numpy.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import RecurrentKernel, augmented_weights, state_buffer
from onnxplug.providers.numpy.registry import op


@op("GRU")
class GRU(RecurrentKernel):
    """GRU with gates (z, r, h); linear_before_reset applies r after the recurrent matmul."""

    gates = 3
    default_activations = ("Sigmoid", "Tanh")

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None):
        lbr = bool(self.attr("linear_before_reset", 0))
        p = self.prepare(x, w, r, b, sequence_lens, [True, True, not lbr])
        hs = p.hidden
        h = self.initial_state(initial_h, p)
        if self.default_acts and self.clip is None and p.active is None and x.dtype.kind == "f":
            return self._fast(p, h, lbr, r, b)
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

    def _fast(self, p, h0, lbr, r, b):
        """Default activations, all sequences full: few calls per step.

        z and r come from one tanh on half-scaled inputs (sigmoid(x) = (1 + tanh(x / 2)) / 2), and
        the recurrent bias rides inside the matmul on a state with a trailing 1.
        """
        hs = p.hidden
        half = np.ones(3 * hs, dtype=p.feed.dtype)
        half[:2 * hs] = 0.5
        feed = p.feed
        feed *= half  # scales z and r inputs
        rt = self.derived("rt_aug", (r, b), lambda: augmented_weights(
            p.rt if lbr else p.rt[..., :2 * hs], p.rb if lbr else (None if p.rb is None else p.rb[:, :2 * hs]),
            half if lbr else half[:2 * hs]))
        rt_h = None if lbr else p.rt[..., 2 * hs:]
        rb_h = None if lbr or p.rb is None else p.rb[:, None, 2 * hs:]
        buf = state_buffer(p, h0)
        hr = np.empty(h0.shape[:-1] + (rt.shape[-1],), dtype=p.feed.dtype)
        n = np.empty_like(h0)
        d = np.empty_like(h0)
        # views made once: the loop body is only ufunc calls on preallocated buffers
        zr, z, r = hr[..., :2 * hs], hr[..., :hs], hr[..., hs:2 * hs]
        hr_n = hr[..., 2 * hs:] if lbr else None
        feed_zr, feed_n = feed[..., :2 * hs], feed[..., 2 * hs:]
        states = [buf[t, ..., :hs] for t in range(p.seq + 1)]
        matmul, tanh, multiply = np.matmul, np.tanh, np.multiply
        for t in range(p.seq):
            h = states[t]
            matmul(buf[t], rt, out=hr)
            zr += feed_zr[t]
            tanh(zr, out=zr)
            zr *= 0.5
            zr += 0.5
            if lbr:
                multiply(r, hr_n, out=n)
            else:
                matmul(r * h, rt_h, out=n)
                if rb_h is not None:
                    n += rb_h
            n += feed_n[t]
            tanh(n, out=n)
            np.subtract(h, n, out=d)
            d *= z
            np.add(d, n, out=states[t + 1])
        ys = buf[1:, ..., :hs]
        return self.finish(np.ascontiguousarray(ys), [ys[-1].copy()], p)
