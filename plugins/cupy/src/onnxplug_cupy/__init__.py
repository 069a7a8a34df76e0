"""onnxplug-cupy: the CUDA execution provider of onnxplug, on CuPy.

    import onnxplug as ort
    session = ort.InferenceSession("model.onnx", providers=["cupy"])   # or "CUDAExecutionProvider"

Importing this package never imports CuPy and never fails: without CuPy or without a CUDA device
the provider reports itself unavailable with CuPy's own reason (``onnxplug providers``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
