"""Kernels of the ONNX-ML domain (``ai.onnx.ml``), one module per op (``op_<name>.py``)."""
