import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("CausalConvWithState")
class CausalConvWithState(NumpyKernel):
    """Depthwise causal 1-D convolution over [batch, channels, length], continuing from ``past_state``
    (the last k-1 inputs of the previous call); optional SiLU. Returns the output and the new state.

    Windows are strided views; products are summed in float32 (float64 for float64) and rounded once.
    """

    def compute(self, x, weight, bias=None, past_state=None):
        activation = self.attr("activation", "none")
        if activation not in ("none", "silu", "swish"):
            raise ValueError(f"CausalConvWithState: unsupported activation {activation!r}")
        k = weight.shape[2]
        acc = np.float64 if x.dtype == np.float64 else np.float32
        pad = np.zeros((x.shape[0], x.shape[1], k - 1), x.dtype) if past_state is None else past_state.astype(x.dtype)
        padded = np.concatenate([pad, x], axis=2)
        windows = np.lib.stride_tricks.sliding_window_view(padded.astype(acc), k, axis=2)  # [n, c, t, k]
        y = np.einsum("nctk,ck->nct", windows, weight[:, 0, :].astype(acc))
        if bias is not None:
            y = y + bias.astype(acc)[:, None]
        y = y.astype(x.dtype)
        if activation != "none":
            yf = y.astype(np.float32) if x.dtype != np.float64 else y
            y = (yf / (1 + np.exp(-yf))).astype(x.dtype)
        return y, padded[:, :, padded.shape[2] - (k - 1):]
