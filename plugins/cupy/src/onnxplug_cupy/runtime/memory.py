"""The provider's allocator and data transfer, over :class:`~onnxplug_cupy.runtime.backend.CudaBackend`.

Device values are ``cupy.ndarray``; they stay on the GPU between the provider's nodes, and the
executor only calls ``to_host`` where a value leaves for the host (a graph output, a node of
another provider).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import Allocator, DataTransfer, Device

from onnxplug_cupy.runtime.backend import CudaBackend


class CupyAllocator(Allocator):
    """Arrays from CuPy's memory pool on the provider's device."""

    def __init__(self, backend: CudaBackend, device: Device) -> None:
        self.backend = backend
        self.device = device

    @property  # type: ignore[override]
    def array_types(self) -> tuple[type, ...]:
        """The backend's array class (``cupy.ndarray``), read when a session plans its output
        checks, so the plugin imports without CuPy: every kernel output of the provider must be one."""
        return tuple(self.backend.array_types)

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """An uninitialised ``cupy.ndarray``."""
        return self.backend.empty(shape, dtype)

    def free(self, buffer: Any) -> None:
        """Nothing to do now: the block returns to the pool when its last reference goes."""


class CupyTransfer(DataTransfer):
    """Host <-> device copies on the calling thread's stream."""

    def __init__(self, backend: CudaBackend, device: Device) -> None:
        self.backend = backend
        self.device = device

    def to_device(self, array: np.ndarray) -> Any:
        """Upload a host array (synchronised, so any stream may read it next)."""
        return self.backend.to_device(array)

    def to_host(self, value: Any) -> np.ndarray:
        """Download a device value, after the work queued before it on this thread's stream."""
        return self.backend.to_host(value)

    def adopt(self, value: Any) -> Any | None:
        """A CUDA tensor (CuPy, ``__cuda_array_interface__`` or DLPack) as a device value of this
        provider without a copy, or None when ``value`` does not live on a CUDA device."""
        return self.backend.adopt(value)

    def from_pointer(self, pointer: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """Raw device memory (IOBinding's ``buffer_ptr``) as a ``cupy.ndarray`` without a copy."""
        return self.backend.from_pointer(pointer, shape, dtype)

    def copy_into(self, target: Any, value: Any) -> None:
        """Device-to-device copy of a result into a bound output buffer."""
        self.backend.copy_into(target, value)

    def synchronize(self) -> None:
        """Wait for everything this thread queued on the device."""
        self.backend.synchronize()
