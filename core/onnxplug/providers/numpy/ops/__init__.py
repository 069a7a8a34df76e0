"""The numpy provider's op kernels, one package per domain, one module per op (``op_<name>.py``), as
onnx's reference ops: ``ai_onnx`` (the default domain), ``ai_onnx_ml``, ``com_onnxplug`` (onnxplug's
own fused and channels-last ops) and ``com_microsoft``. The registry imports every ``op_`` module of
each domain package; the ``_*`` modules here are helpers the domains share."""
