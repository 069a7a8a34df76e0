"""DynamicQuantizeLSTM's time steps with the default activations, no peepholes and no clip, every
sequence running every step: few numpy calls per step, the same float32 results as the general path.

Each step's h is quantized per block of rows (one block, or one per thread's rows as onnxruntime
splits the batch): the blocks' ranges, scales and zero points are computed together, and the centred
codes ``clip(rint(h / scale), -zp, 255 - zp)`` (equal to the uint8 codes minus zp) enter one product
with the centred R. That product is exact: in float32 when every partial sum stays below 2**24
(checked from R's range), else in float64. The sigmoid gates (i, o, f) are contiguous and take one
call; sigmoid and tanh work elementwise, so the values equal the gate-by-gate ones.
"""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._rnn_util import _sigmoid

_F32 = np.float32
_EXACT = float(1 << 24)


def batch_parallel(batch: int, hidden: int) -> bool:
    """Whether onnxruntime's LSTM splits the batch rows over its threads (else one block)."""
    return batch > 4 or (batch >= 2 and hidden <= 256)


def exact_weights(centered_r: np.ndarray) -> np.ndarray:
    """Centred integer R as float32 when every product sum with 8-bit codes is exact there."""
    bound = centered_r.shape[-2] * 255.0 * float(np.abs(centered_r).max(initial=0.0))
    return centered_r.astype(np.float32) if bound < _EXACT else centered_r


def halve_sigmoid_columns(values: np.ndarray, hidden: int) -> np.ndarray:
    """``values`` (per gate column, or one) with the i, o, f columns halved: sigmoid(v) is computed
    as 0.5 * tanh(v / 2) + 0.5, and halving before or after a rounding gives the same float32."""
    out = np.broadcast_to(np.asarray(values, dtype=np.float32), (4 * hidden,)).copy()
    out[:3 * hidden] *= _F32(0.5)
    return out


class Steps:
    """Every direction's steps together: state [D, blocks * rows, H], rows past the batch zero.

    Zero rows keep each block's range (which always includes 0) and stay zero through the cell, so
    one quantization, one batched product and one cell update serve all directions and blocks.
    """

    def __init__(self, weights: np.ndarray, scales: np.ndarray, batch: int, threads: int):
        self.weights = weights  # [D, H, 4H] centred R, exact dtype
        dirs, hidden = weights.shape[0], weights.shape[1]
        rows = -(-batch // max(threads, 1))
        if rows >= batch or not batch_parallel(batch, hidden):
            rows = batch
        self.rows, self.blocks, self.batch = rows, -(-batch // rows), batch
        self.scales = scales.reshape(dirs, 1, 1, 4 * hidden)  # R's scales, sigmoid columns halved

    def padded(self, values: np.ndarray) -> np.ndarray:
        """[D, batch, ...] values in a zero-padded [D, blocks * rows, ...] array."""
        out = np.zeros((values.shape[0], self.blocks * self.rows) + values.shape[2:], np.float32)
        out[:, :self.batch] = values
        return out

    def product(self, h: np.ndarray) -> np.ndarray:
        """h @ R per direction, h quantized per block; [D, blocks, rows, 4H] float32."""
        dirs, hidden = h.shape[0], h.shape[2]
        flat = h.reshape(dirs, self.blocks, self.rows * hidden)
        hi, lo = flat.max(axis=2, initial=0.0), flat.min(axis=2, initial=0.0)
        span = hi - lo
        scale = np.where(span != 0, span / _F32(255), _F32(1.0))
        zp = np.minimum(_F32(0) - lo / scale, _F32(255))  # lo <= 0 < scale: never below 0
        np.rint(zp, out=zp)
        codes = np.divide(flat, scale[..., None], dtype=np.float32)
        np.rint(codes, out=codes)
        # h >= lo gives rint(h / scale) >= -zp (scale >= -lo / 255 up to one rounding), so only the
        # upper end of the uint8 range can cut
        np.minimum(codes, (255 - zp)[..., None], out=codes)
        codes = codes.reshape(dirs, self.blocks * self.rows, hidden).astype(self.weights.dtype, copy=False)
        acc = np.matmul(codes, self.weights).reshape(dirs, self.blocks, self.rows, 4 * hidden)
        return np.multiply(acc, scale[..., None, None] * self.scales, dtype=np.float32)

    def run(self, feed: np.ndarray, h: np.ndarray, c: np.ndarray, reverse: list[bool],
            ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``feed`` [seq, D, blocks * rows, 4H] in each direction's step order (X's product plus
        biases, sigmoid columns halved); writes ys [seq, D, batch, H]; the last h and c (padded)."""
        seq, dirs, hidden = feed.shape[0], feed.shape[1], h.shape[2]
        three, shape = 3 * hidden, (dirs, self.blocks * self.rows, 4 * hidden)
        hs = np.empty((seq,) + h.shape, np.float32)
        for t in range(seq):
            gates = feed[t] + self.product(h).reshape(shape)
            np.tanh(gates, out=gates)
            sig = gates[..., :three]
            sig *= _F32(0.5)
            sig += _F32(0.5)
            c = gates[..., 2 * hidden:three] * c + gates[..., :hidden] * gates[..., three:]
            h = np.multiply(gates[..., hidden:2 * hidden], np.tanh(c), out=hs[t])
        for d in range(dirs):
            ys[:, d] = hs[::-1, d, :self.batch] if reverse[d] else hs[:, d, :self.batch]
        return h, c
