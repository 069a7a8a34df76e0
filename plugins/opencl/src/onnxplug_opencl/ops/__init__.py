"""Kernels of the OpenCL provider, one module per family of ops (``op_*.py``)."""
