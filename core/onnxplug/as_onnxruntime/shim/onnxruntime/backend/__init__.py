"""``onnxruntime.backend`` is not provided under onnxplug: see ``onnxplug.as_onnxruntime``."""

from onnxplug.as_onnxruntime import refuse_module

refuse_module(__name__)
