"""``onnxruntime.capi.onnxruntime_inference_collection`` is onnxplug's ``onnxplug.capi.onnxruntime_inference_collection``."""

import sys

from onnxplug.capi import onnxruntime_inference_collection

sys.modules[__name__] = onnxruntime_inference_collection
