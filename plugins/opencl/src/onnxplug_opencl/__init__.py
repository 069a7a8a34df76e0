"""onnxplug-opencl: an onnxplug execution provider running ONNX models on OpenCL devices.

    import onnxplug as ort
    session = ort.InferenceSession("model.onnx", providers=["opencl"])
    session = ort.InferenceSession("model.onnx", providers=[("opencl", {"device": "0:0"})])

Helpers for values that stay on the device (with ``onnxplug.io_binding``):
:func:`cl_runtime` gives the context, queue and memory pool a session on that device uses, and
:func:`to_device` uploads a host array into it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

__version__ = "0.1.0"

if TYPE_CHECKING:
    from onnxplug_opencl.runtime.context import ClRuntime


def cl_runtime(device: str | None = None) -> ClRuntime:
    """The process-wide OpenCL runtime of a device, chosen as the provider's ``device`` option does."""
    from onnxplug_opencl.runtime.context import ClRuntime
    from onnxplug_opencl.runtime.devices import select_device

    return ClRuntime.for_entry(select_device(device))


def to_device(array: np.ndarray, device: str | None = None) -> Any:
    """Upload ``array`` into the pooled memory of a device; the result is a ``pyopencl.array.Array``."""
    return cl_runtime(device).to_device(np.asarray(array))


def devices() -> list[str]:
    """A description of every OpenCL device found (what ``onnxplug providers`` lists)."""
    from onnxplug_opencl.runtime.devices import discover

    found, reason = discover()
    return [d.describe() for d in found] if found else [f"none: {reason}"]


__all__ = ["__version__", "cl_runtime", "devices", "to_device"]
