"""Kernels of the default ONNX domain (``ai.onnx``), one module per op (``op_<name>.py``)."""
