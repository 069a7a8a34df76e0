"""com.microsoft DynamicQuantizeLSTM: LSTM whose input and recurrent weights are 8-bit, as
onnxruntime's quantization tool writes it.

W [D, input, 4H] and R [D, H, 4H] (transposed against LSTM's), gates (i, o, f, c), with scales and
zero points per direction or per direction and column. Each product quantizes its float operand on
the fly as onnxruntime's CPU kernel does (all of X at once per direction, each step's h over the
rows of each thread's block: ceil(batch / threads) rows where it splits the batch (more than 4
rows, or 2+ with hidden size 256 or less), so results follow ``intra_op_num_threads``); the
integer product is exact (float64 BLAS) and scaled to float32. LSTM's attributes, peepholes,
sequence_lens and initial states apply as in LSTM. Known difference: in a
reverse direction where no sequence runs every step onnxruntime quantizes over other ranges.
"""

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, matmul
from onnxplug.providers.numpy.ops._quant_util import centered
from onnxplug.providers.numpy.ops._rnn_util import RecurrentKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._quantized_lstm_steps import Steps, batch_parallel, \
    exact_weights, halve_sigmoid_columns
from onnxplug.providers.numpy.ops.ai_onnx.op_dynamic_quantize_linear import dynamic_quantize
from onnxplug.providers.numpy.registry import op


def _quantized_product(a: np.ndarray, weights: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """a (float32) @ the centred integer weights, a quantized to uint8 on the fly; float32."""
    qa, a_scale, a_zero_point = dynamic_quantize(a)
    acc = matmul(centered(qa, a_zero_point), weights)
    return acc.astype(np.float32) * (a_scale * scale)


def _blockwise_product(h: np.ndarray, weights: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The recurrent product, h quantized per block of rows as onnxruntime's threads do."""
    rows = -(-h.shape[0] // max(PRODUCT_THREADS.threads, 1))
    if rows >= h.shape[0] or not batch_parallel(h.shape[0], h.shape[1]):
        return _quantized_product(h, weights, scale)
    return np.concatenate([_quantized_product(h[i:i + rows], weights, scale) for i in range(0, h.shape[0], rows)])


@op("DynamicQuantizeLSTM", domain=DOMAIN)
class DynamicQuantizeLSTM(RecurrentKernel):
    gates = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")

    def __init__(self, node, context):
        super().__init__(node, context)
        self._input_forget = bool(self.attr("input_forget", 0))
        #: the step loop of _quantized_lstm_steps applies (with every sequence running every step)
        self._plain_cell = self.default_acts and self.clip is None and not self._input_forget

    def compute(self, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None,
                w_scale=None, w_zero_point=None, r_scale=None, r_zero_point=None):
        if w_scale is None or w_zero_point is None or r_scale is None or r_zero_point is None:
            raise ValueError(f"{self.node.describe()}: W_scale, W_zero_point, R_scale and R_zero_point are required")
        seq, batch, _ = x.shape
        dirs, hidden = self.num_directions, r.shape[1]
        if w.shape[0] != dirs or w.shape[2] != 4 * hidden or r.shape != (dirs, hidden, 4 * hidden):
            raise ValueError(f"{self.node.describe()}: W {list(w.shape)} and R {list(r.shape)} do not fit "
                             f"{dirs} direction(s) of hidden size {hidden}")
        lens = np.full(batch, seq, np.int64) if sequence_lens is None else sequence_lens.astype(np.int64).reshape(-1)
        full = bool((lens == seq).all())
        if full and seq and p is None and self._plain_cell:
            return self._plain_steps(x, w, r, b, initial_h, initial_c, w_scale, w_zero_point, r_scale, r_zero_point)
        ys = np.zeros((seq, dirs, batch, hidden), np.float32)
        h_last = np.empty((dirs, batch, hidden), np.float32)
        c_last = np.empty((dirs, batch, hidden), np.float32)
        for d in range(dirs):
            h = np.zeros((batch, hidden), np.float32) if initial_h is None else initial_h[d].astype(np.float32)
            c = np.zeros((batch, hidden), np.float32) if initial_c is None else initial_c[d].astype(np.float32)
            feed = self._input_product(x, w, b, w_scale, w_zero_point, d)
            r_scales = _param(r_scale, d).astype(np.float32)
            recurrent = centered(r[d], _param(r_zero_point, d))
            peep = None if p is None else p[d].reshape(3, hidden).astype(np.float32)
            for t in range(seq):
                if full:  # every sequence runs every step: plain slices, no masks
                    step = seq - 1 - t if self.is_reverse(d) else t
                    h, c = self._cell(feed[step] + _blockwise_product(h, recurrent, r_scales), c, peep, hidden, d)
                    ys[step, d] = h
                    continue
                active = t < lens
                # a reversed direction reads each sequence from its own last step
                time = np.where(active, lens - 1 - t, 0) if self.is_reverse(d) else np.full(batch, t)
                # rows finished before the previous step enter the product as zeros, which leaves
                # the quantization range as onnxruntime's
                ran = t <= lens
                running = h if ran.all() else np.where(ran[:, None], h, np.float32(0))
                gates = feed[time, np.arange(batch)] + _blockwise_product(running, recurrent, r_scales)
                h_new, c_new = self._cell(gates, c, peep, hidden, d)
                h = np.where(active[:, None], h_new, h)
                c = np.where(active[:, None], c_new, c)
                ys[time[active], d, np.arange(batch)[active]] = h[active]
            empty = (lens == 0)[:, None]  # as onnxruntime: a sequence without steps ends in zero states
            h_last[d], c_last[d] = np.where(empty, np.float32(0), h), np.where(empty, np.float32(0), c)
        return ys, h_last, c_last

    def _input_product(self, x, w, b, w_scale, w_zero_point, d: int) -> np.ndarray:
        """Direction d's X @ W (X quantized as a whole) plus both biases: [seq, batch, 4H] float32."""
        seq, batch, _ = x.shape
        w_int = self.derived(f"w{d}", (w, w_zero_point), lambda: centered(w[d], _param(w_zero_point, d)))
        feed = _quantized_product(x.reshape(seq * batch, -1).astype(np.float32, copy=False), w_int,
                                  _param(w_scale, d).astype(np.float32)).reshape(seq, batch, w_int.shape[1])
        if b is not None:
            hidden4 = w_int.shape[1]
            feed += b[d, :hidden4] + b[d, hidden4:]
        return feed

    def _plain_steps(self, x, w, r, b, initial_h, initial_c, w_scale, w_zero_point, r_scale, r_zero_point):
        """Default activations, no peepholes or clip, every sequence running every step."""
        seq, batch, _ = x.shape
        dirs, hidden = self.num_directions, r.shape[1]
        weights = self.derived("r", (r, r_zero_point), lambda: exact_weights(
            np.stack([centered(r[d], _param(r_zero_point, d)) for d in range(dirs)])))
        scales = np.stack([halve_sigmoid_columns(_param(r_scale, d).astype(np.float32), hidden) for d in range(dirs)])
        steps = Steps(weights, scales, batch, PRODUCT_THREADS.threads)
        feed = np.zeros((seq, dirs, steps.blocks * steps.rows, 4 * hidden), np.float32)
        for d in range(dirs):
            part = self._input_product(x, w, b, w_scale, w_zero_point, d)
            part[..., :3 * hidden] *= np.float32(0.5)
            feed[:, d, :batch] = part[::-1] if self.is_reverse(d) else part
        zeros = np.zeros((dirs, batch, hidden), np.float32)
        h = steps.padded(zeros if initial_h is None else initial_h.astype(np.float32, copy=False))
        c = steps.padded(zeros if initial_c is None else initial_c.astype(np.float32, copy=False))
        ys = np.zeros((seq, dirs, batch, hidden), np.float32)
        h, c = steps.run(feed, h, c, [self.is_reverse(d) for d in range(dirs)], ys)
        return ys, h[:, :batch].copy(), c[:, :batch].copy()

    def _cell(self, gates: np.ndarray, c: np.ndarray, peep: np.ndarray | None, hidden: int, d: int):
        gi, go, gf, gc = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        if peep is not None:
            gi = gi + peep[0] * c
            gf = gf + peep[2] * c
        i = self._act(0, gi, d)
        f = 1 - i if self._input_forget else self._act(0, gf, d)
        c_new = f * c + i * self._act(1, gc, d)
        if peep is not None:
            go = go + peep[1] * c_new
        o = self._act(0, go, d)
        return o * self._act(2, c_new.copy(), d, clip=False), c_new

    def _act(self, slot: int, values: np.ndarray, d: int, clip: bool = True) -> np.ndarray:
        f = self.activations[slot]
        values = np.array(values, np.float32)
        if clip and self.clip is not None:
            np.clip(values, -self.clip, self.clip, out=values)
        return (f[d] if isinstance(f, list) else f)(values)


def _param(value: np.ndarray, d: int) -> np.ndarray:
    """Direction d's scale or zero point: one value, or one per gate column."""
    part = value.reshape(value.shape[0], -1)[d]
    return part.reshape(()) if part.size == 1 else part
