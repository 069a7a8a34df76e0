"""Kernels of onnxruntime's contrib domain ``com.microsoft`` (ContribOperators.md, version 1): the
ops onnxruntime's transformer optimizer and quantization tools write into models. One module per op
(``op_<name>.py``); every one is imported when the registry loads. Each kernel follows onnxruntime's
CPU kernel, including output dtypes, and refuses attributes or input variants it does not implement
with an error naming the node."""

#: The domain every kernel of this package registers in.
DOMAIN = "com.microsoft"
