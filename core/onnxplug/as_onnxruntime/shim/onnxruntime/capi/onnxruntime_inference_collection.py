"""``onnxruntime.capi.onnxruntime_inference_collection`` is onnxplug's module of that name in
``onnxplug.capi``."""

import sys

from onnxplug.capi import onnxruntime_inference_collection

sys.modules[__name__] = onnxruntime_inference_collection
