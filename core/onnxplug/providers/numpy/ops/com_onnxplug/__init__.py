"""Kernels of onnxplug's own ops: the fused ones (``com.onnxplug``) and the channels-last ones
(``com.onnxplug.nhwc``) the provider's passes write; one module per op (``op_<name>.py``)."""
