"""``DeviceMemory``: an allocator and data transfer built from four device methods, and ``NullDevice``.

A device fills in ``_alloc``, ``_free``, ``_copyin`` and ``_copyout`` (as tinygrad's allocators do);
this base turns them into the core's ``Allocator`` and ``DataTransfer`` over :class:`DeviceArray`.
The executor never frees values explicitly (it drops references), so each array frees its memory
when it is garbage collected, or earlier through ``free``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxplug.device import Allocator, DataTransfer, Device
from onnxplug.errors import OnnxplugError


class DeviceMemoryError(OnnxplugError, ValueError):
    """A value cannot be placed on or read from a device: wrong device, freed, unsupported dtype."""


@dataclass(eq=False)
class DeviceArray:
    """A tensor in device memory: an opaque ``handle`` from ``_alloc`` plus shape, dtype and device.

    ``handle`` is ``None`` for an empty (zero-byte) array, which needs no device memory.
    """

    handle: Any
    shape: tuple[int, ...]
    dtype: np.dtype
    device: Device
    _finalizer: Any = field(default=None, repr=False, compare=False)

    @property
    def nbytes(self) -> int:
        """Size of the data in bytes (the executor reads this for memory statistics)."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def freed(self) -> bool:
        """True once the memory has been given back."""
        return self._finalizer is not None and not self._finalizer.alive


class DeviceMemory(Allocator, DataTransfer):
    """Allocator and data transfer of one device, over four methods a subclass implements.

    ``_alloc(nbytes) -> handle``, ``_free(handle)``, ``_copyin(handle, host)`` (host array, C-contiguous,
    into device memory) and ``_copyout(host, handle)`` (device memory into a C-contiguous host array).
    They are never called for zero-byte arrays. Object (string) arrays cannot live on a device.
    Kernel outputs of a provider on this memory must be :class:`DeviceArray` values (``array_types``):
    the executor checks each one's class, element type and rank, and reports any other value (a host
    array, a list) as ``KernelError`` naming the node and provider.
    """

    #: The class of this device's values, checked on every kernel output of the provider.
    array_types: tuple[type, ...] = (DeviceArray,)

    def __init__(self, device: Device) -> None:
        self.device = device

    # --- what a device implements -------------------------------------------------------------

    def _alloc(self, nbytes: int) -> Any:
        """Allocate ``nbytes`` (> 0) of device memory and return a handle to it."""
        raise NotImplementedError(f"{type(self).__name__}._alloc")

    def _free(self, handle: Any) -> None:
        """Give the memory behind ``handle`` back to the device."""
        raise NotImplementedError(f"{type(self).__name__}._free")

    def _copyin(self, handle: Any, host: np.ndarray) -> None:
        """Copy the bytes of ``host`` (C-contiguous) into the memory behind ``handle``."""
        raise NotImplementedError(f"{type(self).__name__}._copyin")

    def _copyout(self, host: np.ndarray, handle: Any) -> None:
        """Copy the memory behind ``handle`` into ``host`` (C-contiguous, same size)."""
        raise NotImplementedError(f"{type(self).__name__}._copyout")

    # --- Allocator and DataTransfer ------------------------------------------------------------

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> DeviceArray:
        """An uninitialised device array, freed when garbage collected or by :meth:`free`."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise DeviceMemoryError(f"device {self.device}: cannot allocate a {dtype} (object/string) array; "
                                    "such values stay on the host")
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise DeviceMemoryError(f"device {self.device}: negative dimension in shape {list(shape)}")
        nbytes = math.prod(shape) * dtype.itemsize
        handle = self._alloc(nbytes) if nbytes else None
        array = DeviceArray(handle, shape, dtype, self.device)
        if handle is not None:
            array._finalizer = weakref.finalize(array, self._free, handle)
        return array

    def free(self, buffer: Any) -> None:
        """Give ``buffer``'s memory back now; freeing twice is an error."""
        array = self._own(buffer, "free")
        if array.freed:
            raise DeviceMemoryError(f"device {self.device}: array {list(array.shape)} {array.dtype} freed twice")
        if array._finalizer is not None:
            array._finalizer()

    def to_device(self, array: np.ndarray) -> DeviceArray:
        """Copy a host array into new device memory."""
        host = np.asarray(array)
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host).reshape(host.shape)  # ascontiguousarray makes 0-d arrays 1-d
        out = self.alloc(host.shape, host.dtype)
        if out.handle is not None:
            self._copyin(out.handle, host)
        return out

    def to_host(self, value: Any) -> np.ndarray:
        """Copy a device array into a new host array."""
        array = self._own(value, "copy to the host")
        if array.freed:
            raise DeviceMemoryError(f"device {self.device}: cannot read array {list(array.shape)} "
                                    f"{array.dtype}: it was freed")
        host = np.empty(array.shape, dtype=array.dtype)
        if array.handle is not None:
            self._copyout(host, array.handle)
        return host

    def _own(self, value: Any, action: str) -> DeviceArray:
        if not isinstance(value, DeviceArray):
            raise DeviceMemoryError(f"device {self.device}: cannot {action} a {type(value).__name__}; "
                                    "expected a DeviceArray")
        if value.device != self.device:
            raise DeviceMemoryError(f"device {self.device}: cannot {action} an array of device {value.device}")
        return value


class NullDevice(DeviceMemory):
    """A device whose memory is host memory behind the four methods: for tests of device plumbing.

    Handles are flat ``uint8`` numpy buffers. ``view`` lets a test kernel compute on them; the
    counters record traffic so tests can check where copies happen.
    """

    def __init__(self, device: Device | None = None) -> None:
        super().__init__(device if device is not None else Device("null"))
        self.live_bytes = 0
        self.allocations = 0
        self.bytes_in = 0
        self.bytes_out = 0

    def _alloc(self, nbytes: int) -> np.ndarray:
        self.allocations += 1
        self.live_bytes += nbytes
        return np.empty(nbytes, dtype=np.uint8)

    def _free(self, handle: np.ndarray) -> None:
        self.live_bytes -= handle.nbytes

    def _copyin(self, handle: np.ndarray, host: np.ndarray) -> None:
        handle[:] = host.reshape(-1).view(np.uint8)
        self.bytes_in += host.nbytes

    def _copyout(self, host: np.ndarray, handle: np.ndarray) -> None:
        host.reshape(-1).view(np.uint8)[:] = handle
        self.bytes_out += host.nbytes

    def view(self, array: DeviceArray) -> np.ndarray:
        """A writable numpy view of a NullDevice array's memory, for kernels computing "on the device"."""
        array = self._own(array, "view")
        if array.handle is None:
            return np.empty(array.shape, dtype=array.dtype)
        return array.handle.view(array.dtype).reshape(array.shape)
