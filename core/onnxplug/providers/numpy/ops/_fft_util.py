"""Shared by DFT and STFT: ONNX's real/complex layout (a last axis of 1 or 2) and numpy's FFTs."""

from __future__ import annotations

import numpy as np


def to_complex(x: np.ndarray) -> np.ndarray:
    """[..., 1] real or [..., 2] (real, imag) -> complex array without the last axis.

    float64 signals give complex128, others complex64: numpy's FFTs then run in the signal's
    precision, as onnx.reference's do (their rounding noise is what the backend tests expect).
    """
    ctype = np.complex128 if x.dtype == np.float64 else np.complex64
    if x.shape[-1] == 1:
        return x[..., 0].astype(ctype)
    if x.shape[-1] == 2:
        return (x[..., 0] + 1j * x[..., 1].astype(np.float64)).astype(ctype)
    raise ValueError(f"the last axis must hold 1 (real) or 2 (real, imag) values, got {x.shape[-1]}")


def from_complex(z: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A complex array -> [..., 2] (real, imag) of ``dtype``."""
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def transform(signal: np.ndarray, length: int, axis: int, inverse: bool, onesided: bool) -> np.ndarray:
    """DFT / inverse DFT along ``axis`` (``onesided``: the first length // 2 + 1 bins, or the
    inverse of such a half spectrum, which is real)."""
    if inverse:
        return np.fft.irfft(signal, n=length, axis=axis) if onesided else np.fft.ifft(signal, n=length, axis=axis)
    out = np.fft.fft(signal, n=length, axis=axis)
    if onesided:
        out = np.take(out, np.arange(length // 2 + 1), axis=axis)
    return out
