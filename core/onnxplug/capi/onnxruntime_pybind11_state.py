"""The names clients import from onnxruntime's compiled ``onnxruntime_pybind11_state`` module.

Status exceptions come from :mod:`onnxplug.ort_status`; the rest is onnxplug's API under
onnxruntime's names. ``get_version_string()`` reports :func:`onnxplug.capi.onnxruntime_version`.
Names onnxruntime has and onnxplug does not implement are listed, with the reason, in
:mod:`onnxplug.ort_api_table`; asking this module for one gives a stand-in that raises
:class:`~onnxplug.errors.UnsupportedOptionError` when called or read.
"""

from __future__ import annotations

from typing import Any

from onnxplug import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    ModelMetadata,
    NodeArg,
    OrtEpAssignedNode,
    OrtEpAssignedSubgraph,
    OrtEpDevice,
    OrtExecutionProviderDevicePolicy,
    OrtHardwareDevice,
    OrtHardwareDeviceType,
    OrtValue,
    RunOptions,
    SessionOptions,
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    get_ep_devices,
    has_collective_ops,
    register_execution_provider_library,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_global_thread_pool_sizes,
    set_seed,
    unregister_execution_provider_library,
)
from onnxplug.ort_status import (
    DeviceReset,
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoadCanceled,
    ModelLoaded,
    ModelRequiresCompilation,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    RuntimeException,
)


def get_version_string() -> str:
    """The version reported to onnxruntime clients (see :mod:`onnxplug.capi`)."""
    from onnxplug.capi import onnxruntime_version

    return onnxruntime_version()


def get_default_session_options() -> SessionOptions:
    """A fresh ``SessionOptions`` with the defaults, as onnxruntime's."""
    return SessionOptions()


def __getattr__(name: str) -> Any:
    from onnxplug.ort_api_table import refused_stand_in

    return refused_stand_in(name, __name__)


__all__ = [
    "DeviceReset", "EPFail", "EngineError", "ExecutionMode", "ExecutionOrder", "Fail", "GraphOptimizationLevel",
    "InvalidArgument", "InvalidGraph", "InvalidProtobuf", "ModelLoadCanceled", "ModelLoaded", "ModelMetadata",
    "ModelRequiresCompilation", "NoModel", "NoSuchFile", "NodeArg", "NotFound", "NotImplemented",
    "OrtEpAssignedNode", "OrtEpAssignedSubgraph", "OrtEpDevice", "OrtExecutionProviderDevicePolicy",
    "OrtHardwareDevice", "OrtHardwareDeviceType", "OrtValue", "RunOptions", "RuntimeException", "SessionOptions",
    "disable_telemetry_events", "enable_telemetry_events", "get_all_providers", "get_available_providers",
    "get_build_info", "get_default_session_options", "get_device", "get_ep_devices", "get_version_string",
    "has_collective_ops", "register_execution_provider_library", "set_default_logger_severity",
    "set_default_logger_verbosity", "set_global_thread_pool_sizes", "set_seed",
    "unregister_execution_provider_library",
]
