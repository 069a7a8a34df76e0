import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._fft_util import from_complex, to_complex
from onnxplug.providers.numpy.registry import op


@op("STFT")
class STFT(NumpyKernel):
    """Short-time Fourier transform: [batch, length, 1|2] -> [batch, frames, bins, 2]; frames are
    strided views of the signal, windowed and transformed together."""

    def compute(self, signal, frame_step, window=None, frame_length=None):
        step = int(np.asarray(frame_step).reshape(-1)[0])
        if frame_length is not None and frame_length.size:
            size = int(frame_length.reshape(-1)[0])
        else:
            size = window.shape[0] if window is not None else signal.shape[1]
        z = to_complex(signal)  # [batch, length]
        frames = np.lib.stride_tricks.sliding_window_view(z, size, axis=1)[:, ::step]
        if window is not None:
            frames = frames * window.astype(frames.real.dtype)
        out = np.fft.fft(frames, n=size, axis=-1)
        if self.attr("onesided", 1):
            out = out[..., : size // 2 + 1]
        return from_complex(out, signal.dtype)
