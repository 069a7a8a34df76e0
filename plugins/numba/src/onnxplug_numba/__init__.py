"""onnxplug-numba: the numba CPU execution provider of onnxplug.

    import onnxplug as ort
    session = ort.InferenceSession("model.onnx", providers=["numba"])
"""

from onnxplug_numba.provider import NumbaProvider, __version__

__all__ = ["NumbaProvider", "__version__"]
