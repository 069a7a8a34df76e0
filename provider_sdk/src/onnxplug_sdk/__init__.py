"""onnxplug_sdk: everything an onnxplug execution provider imports.

Provider packages import only from here (plus numpy, onnx and their device library), never from
``onnxplug.*``: the names below are the stable surface, whatever the core reorganises inside.

    from onnxplug_sdk import KernelRegistryProvider, Kernel, hookimpl

    class MyProvider(KernelRegistryProvider):
        name = "mine"
        ops_package = "onnxplug_mine.ops"
"""

from __future__ import annotations

from onnxplug_sdk._compat import SUPPORTED_CORE_API, IncompatibleCoreError, check_core_api

check_core_api()

from onnxplug import errors, geometry, mlas  # noqa: E402  (after the version check, on purpose)
from onnxplug.device import CPU, Allocator, DataTransfer, Device, HardwareDevice, host_cpu  # noqa: E402
from onnxplug.hookspecs import hookimpl  # noqa: E402
from onnxplug.ir import Graph, Node, ValueType, elem_type_of, numpy_dtype  # noqa: E402
from onnxplug.kernel import Kernel, KernelContext, KernelRegistry, check_terminate  # noqa: E402
from onnxplug.provider import (  # noqa: E402
    CORE_API_VERSION,
    Availability,
    DECLINE_KINDS,
    Capability,
    Decline,
    ExecutionProvider,
    FusedSubgraph,
    GraphView,
)

from onnxplug_sdk import helpers  # noqa: E402
from onnxplug_sdk.compiling import FUSABLE_ELEMENTWISE, CompilingProvider  # noqa: E402
from onnxplug_sdk.device_memory import DeviceArray, DeviceMemory, DeviceMemoryError, NullDevice  # noqa: E402
from onnxplug_sdk.helpers import (  # noqa: E402
    ShapeError,
    attribute_defaults,
    check_dtypes,
    broadcast_shapes,
    conv_output_shape,
    conv_transpose_pads,
    decode_auto_pad,
    infer_output_types,
    onnx_type_name,
    output_size,
    pool_output_shape,
    resolve_pads,
    window_geometry,
)
from onnxplug_sdk.registry_provider import KernelRegistryProvider, registry_for  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    # re-exported from the core
    "CORE_API_VERSION", "CPU", "DECLINE_KINDS", "Allocator", "Availability", "Capability", "DataTransfer",
    "Decline", "Device",
    "ExecutionProvider", "FusedSubgraph", "Graph", "GraphView", "HardwareDevice", "Kernel", "KernelContext",
    "KernelRegistry", "Node", "ValueType", "check_terminate", "elem_type_of", "errors", "geometry", "hookimpl",
    "host_cpu", "mlas", "numpy_dtype",
    # the SDK's own
    "FUSABLE_ELEMENTWISE", "SUPPORTED_CORE_API", "CompilingProvider", "DeviceArray", "DeviceMemory",
    "DeviceMemoryError", "IncompatibleCoreError", "KernelRegistryProvider", "NullDevice", "ShapeError",
    "__version__",
    "attribute_defaults", "broadcast_shapes", "check_core_api", "check_dtypes", "conv_output_shape",
    "conv_transpose_pads", "decode_auto_pad", "helpers", "infer_output_types", "onnx_type_name", "output_size",
    "pool_output_shape", "registry_for", "resolve_pads", "window_geometry",
]
