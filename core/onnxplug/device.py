"""Devices, allocators and data transfers: where a provider's values live and how they get there."""

from __future__ import annotations

import functools
import platform
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Device:
    """A device values can live on, e.g. ``Device("cpu")`` or ``Device("opencl", 0)``."""

    type: str
    index: int = 0

    def __str__(self) -> str:
        return self.type if self.type == "cpu" else f"{self.type}:{self.index}"


CPU = Device("cpu")
"""The host. Graph inputs, initializers and outputs live here."""


@dataclass(frozen=True)
class HardwareDevice:
    """A physical device a provider runs on, as onnxruntime's ``OrtHardwareDevice`` describes it
    (listed by ``onnxplug.get_ep_devices()``), with the provider options that select it."""

    #: ``"CPU"``, ``"GPU"`` or ``"NPU"`` (onnxruntime's ``OrtHardwareDeviceType`` names).
    kind: str
    vendor: str = ""
    #: The PCI vendor id (0x8086 Intel, 0x10DE NVIDIA, 0x1002/0x1022 AMD), 0 when unknown.
    vendor_id: int = 0
    device_id: int = 0
    metadata: tuple[tuple[str, str], ...] = ()
    #: Provider options that make a provider use this device.
    options: tuple[tuple[str, str], ...] = ()


_CPU_VENDORS = {"GenuineIntel": ("Intel", 0x8086), "AuthenticAMD": ("AMD", 0x1022), "ARM": ("ARM", 0x13B5)}


@functools.lru_cache(maxsize=1)
def host_cpu() -> HardwareDevice:
    """The host CPU, with the vendor read from ``/proc/cpuinfo`` where there is one."""
    vendor, vendor_id, model = "", 0, platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = (part.strip() for part in line.partition(":"))
                if key == "vendor_id" and not vendor:
                    vendor, vendor_id = _CPU_VENDORS.get(value, (value, 0))
                elif key == "CPU implementer" and not vendor:
                    vendor, vendor_id = _CPU_VENDORS["ARM"]
                elif key == "model name" and value:
                    model = value
                    break
    except OSError:  # not Linux: the vendor stays unknown
        pass
    return HardwareDevice("CPU", vendor, vendor_id, 0, (("model", model),) if model else ())


class Allocator(ABC):
    """Allocates and frees buffers on one device."""

    #: The device whose memory this allocator hands out.
    device: Device
    #: Classes of this device's values; when set, every kernel output of a provider on a device
    #: other than the host is checked to be one (host values must be ``np.ndarray``).
    array_types: tuple[type, ...] = ()
    #: True when the allocator implements ``allocation_mark()`` and ``allocated_since(mark)`` (the
    #: calling thread's buffers allocated after the mark and still live): the executor then frees
    #: what a kernel allocated and did not return, and reports it as ``KernelError``.
    tracked: bool = False

    @abstractmethod
    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """Return an uninitialised buffer of ``shape`` and ``dtype`` on ``device``."""

    @abstractmethod
    def free(self, buffer: Any) -> None:
        """Give ``buffer`` back; it must not be used afterwards."""


class HostAllocator(Allocator):
    """The default allocator: numpy arrays in host memory, freed by the garbage collector."""

    device = CPU

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialised host array."""
        return np.empty(shape, dtype=dtype)

    def free(self, buffer: Any) -> None:
        """Nothing to do: numpy frees the memory when the last reference goes."""


class DataTransfer(ABC):
    """Copies tensors between the host and one device."""

    #: The non-host side of the copies.
    device: Device

    @abstractmethod
    def to_device(self, array: np.ndarray) -> Any:
        """Copy a host array to the device and return the device value."""

    @abstractmethod
    def to_host(self, value: Any) -> np.ndarray:
        """Copy a device value back into a host numpy array."""

    # Optional methods: IOBinding and OrtValue use them where a transfer offers them (:meth:`offers`).

    def adopt(self, value: Any) -> Any | None:
        """Optional: ``value`` as this device's own value without a copy (DLPack,
        ``__cuda_array_interface__``, its own type), or None when it does not live on this device.
        It must also order the producer's pending work before the provider's own."""
        raise NotImplementedError(f"{type(self).__name__} cannot adopt values")

    def from_pointer(self, pointer: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """Optional: a device value over raw device memory at ``pointer`` (not copied)."""
        raise NotImplementedError(f"{type(self).__name__} cannot wrap raw device pointers")

    def copy_into(self, target: Any, value: Any) -> None:
        """Optional: copy device ``value`` into the existing device value ``target`` (same shape and
        element type): bound output buffers, ``OrtValue.update_inplace``."""
        raise NotImplementedError(f"{type(self).__name__} cannot write into existing device memory")

    def synchronize(self) -> None:
        """Wait for the calling thread's pending work on the device (the default has none)."""

    def offers(self, method: str) -> bool:
        """Whether this transfer implements the optional method ``"adopt"``, ``"from_pointer"`` or
        ``"copy_into"``."""
        if method not in _OPTIONAL_TRANSFER_METHODS:
            raise ValueError(f"{method!r} is not an optional DataTransfer method")
        return getattr(type(self), method) is not getattr(DataTransfer, method)


_OPTIONAL_TRANSFER_METHODS = ("adopt", "from_pointer", "copy_into")


class HostDataTransfer(DataTransfer):
    """The identity transfer of providers that compute on host memory."""

    device = CPU

    def to_device(self, array: np.ndarray) -> np.ndarray:
        """Host values need no copy."""
        return array

    def to_host(self, value: Any) -> np.ndarray:
        """Host values need no copy."""
        return value
