"""``onnxruntime.capi._pybind_state`` is onnxplug's ``onnxplug.capi._pybind_state``."""

import sys

from onnxplug.capi import _pybind_state

sys.modules[__name__] = _pybind_state
