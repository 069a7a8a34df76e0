"""The default CPU provider: vectorised NumPy, with BLAS for MatMul, Gemm and Conv."""

from onnxplug.providers.numpy.provider import NumpyProvider

__all__ = ["NumpyProvider"]
