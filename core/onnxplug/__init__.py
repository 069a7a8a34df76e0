"""onnxplug: onnxruntime's Python API on a runtime whose execution providers are plugins.

    import onnxplug as ort
    sess = ort.InferenceSession("model.onnx", providers=["numba", "numpy"])
    outputs = sess.run(None, {"input": x})
"""

from __future__ import annotations

from typing import Any

from onnxplug.errors import OnnxplugError
from onnxplug.ep_devices import (
    OrtEpAssignedNode,
    OrtEpAssignedSubgraph,
    OrtEpDevice,
    OrtExecutionProviderDevicePolicy,
    OrtHardwareDevice,
    OrtHardwareDeviceType,
    get_ep_devices,
)
from onnxplug.ep_libraries import register_execution_provider_library, unregister_execution_provider_library
from onnxplug.io_binding import IOBinding
from onnxplug.logs import set_default_logger_severity, set_default_logger_verbosity
from onnxplug.options import ExecutionMode, GraphOptimizationLevel, RunOptions, SessionOptions
from onnxplug.ort_functions import (
    ExecutionOrder,
    get_build_info,
    has_collective_ops,
    preload_dlls,
    print_debug_info,
    set_global_thread_pool_sizes,
)
from onnxplug.ort_value import OrtValue
from onnxplug.seeding import set_seed
from onnxplug.session import InferenceSession, ModelMetadata, NodeArg, NodeAssignment
from onnxplug.version import __version__


def get_version_string() -> str:
    """onnxplug's version, as onnxruntime's ``get_version_string()`` gives its own."""
    return __version__


def disable_telemetry_events() -> None:
    """onnxruntime's switch for its telemetry: onnxplug collects and sends none, on or off."""


def enable_telemetry_events() -> None:
    """onnxruntime's switch for its telemetry: onnxplug collects and sends none, on or off."""


def get_all_providers() -> list[str]:
    """Every installed provider's short name, available here or not."""
    from onnxplug.plugins import get_catalog

    return sorted(get_catalog().providers)


def get_available_providers() -> list[str]:
    """The installed providers that can run on this machine, the default provider last."""
    from onnxplug.plugins import available_providers

    return available_providers()


def get_device() -> str:
    """The device type of the default provider, as onnxruntime's ``get_device()``."""
    return "CPU"


def __getattr__(name: str) -> Any:
    # onnxruntime's names that onnxplug refuses (onnxplug.ort_api_table): a stand-in that says why
    from onnxplug.ort_api_table import refused_stand_in

    return refused_stand_in(name, __name__)


__all__ = [
    "ExecutionMode", "ExecutionOrder", "GraphOptimizationLevel", "OrtEpAssignedNode", "OrtEpAssignedSubgraph",
    "OrtEpDevice", "OrtExecutionProviderDevicePolicy", "OrtHardwareDevice", "OrtHardwareDeviceType",
    "get_ep_devices", "has_collective_ops", "preload_dlls", "print_debug_info", "register_execution_provider_library",
    "set_global_thread_pool_sizes", "unregister_execution_provider_library", "IOBinding", "InferenceSession",
    "ModelMetadata", "NodeArg",
    "NodeAssignment", "OnnxplugError", "OrtValue", "RunOptions", "SessionOptions", "__version__",
    "disable_telemetry_events", "enable_telemetry_events", "get_all_providers", "get_available_providers",
    "get_build_info", "get_device", "get_version_string", "set_default_logger_severity",
    "set_default_logger_verbosity", "set_seed",
]
