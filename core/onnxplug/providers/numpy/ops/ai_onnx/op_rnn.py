import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._rnn_util import RecurrentKernel
from onnxplug.providers.numpy.registry import op


@op("RNN")
class RNN(RecurrentKernel):
    """Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb); outputs Y and Y_h."""

    gates = 1
    default_activations = ("Tanh",)

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None):
        p = self.prepare(x, w, r, b, sequence_lens, [True])
        h = self.initial_state(initial_h, p)
        ys = np.empty((p.seq, self.num_directions, p.batch, p.hidden), dtype=x.dtype)
        g = np.empty_like(h)
        for t in range(p.seq):
            matmul(h, p.rt, out=g)
            g += p.feed[t]
            hn = self.act(0, g)
            mask = p.step_mask(t)
            ys[t] = hn if mask is None else np.where(mask, hn, h)
            h = ys[t]
        return self.finish(ys, [h.copy()], p)
