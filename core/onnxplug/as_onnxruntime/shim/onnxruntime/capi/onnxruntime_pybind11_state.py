"""``onnxruntime.capi.onnxruntime_pybind11_state`` is onnxplug's ``onnxplug.capi.onnxruntime_pybind11_state``."""

import sys

from onnxplug.capi import onnxruntime_pybind11_state

sys.modules[__name__] = onnxruntime_pybind11_state
