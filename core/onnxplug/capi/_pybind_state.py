"""onnxruntime's ``onnxruntime.capi._pybind_state``: re-exports :mod:`onnxplug.capi.onnxruntime_pybind11_state`."""

from __future__ import annotations

from typing import Any

from onnxplug.capi import onnxruntime_pybind11_state as _state
from onnxplug.capi.onnxruntime_pybind11_state import *  # noqa: F403
from onnxplug.capi.onnxruntime_pybind11_state import __all__  # noqa: F401


def __getattr__(name: str) -> Any:
    return getattr(_state, name)
