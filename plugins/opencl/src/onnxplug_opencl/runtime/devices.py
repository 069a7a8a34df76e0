"""Discovering OpenCL devices and choosing one from a provider option or ONNXPLUG_OPENCL_DEVICE.

A selector is ``"P:D"`` (platform index, device index within it), a plain index into the flat list
of every device, or a case-insensitive substring of the device or platform name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from onnxplug_opencl.errors import DeviceSelectionError

DEVICE_ENV = "ONNXPLUG_OPENCL_DEVICE"


@dataclass(frozen=True)
class DeviceEntry:
    """One OpenCL device as discovered: where it is and what it can do."""

    index: int  # position in the flat list of every device
    platform_index: int
    device_index: int
    platform_name: str
    name: str
    kind: str  # "gpu", "cpu", "accelerator" or "other"
    version: str
    compute_units: int
    global_mem_bytes: int
    local_mem_bytes: int
    max_work_group_size: int
    fp16: bool
    fp64: bool

    def describe(self) -> str:
        """One line for ``onnxplug providers``."""
        extras = ", ".join(x for x, ok in (("fp16", self.fp16), ("fp64", self.fp64)) if ok) or "fp32 only"
        return (f"opencl:{self.index} [{self.platform_index}:{self.device_index}] {self.name} "
                f"({self.kind}, {self.platform_name}, {self.compute_units} compute units, "
                f"{self.global_mem_bytes // 2**20} MiB, {extras})")


def _kind(device_type: int) -> str:
    import pyopencl as cl

    for flag, name in ((cl.device_type.GPU, "gpu"), (cl.device_type.CPU, "cpu"),
                       (cl.device_type.ACCELERATOR, "accelerator")):
        if device_type & flag:
            return name
    return "other"


@lru_cache(maxsize=1)
def discover() -> tuple[tuple[DeviceEntry, ...], str]:
    """Every OpenCL device, and an explanation when there is none (no pyopencl, no ICD, no device)."""
    try:
        import pyopencl as cl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        return (), f"pyopencl cannot be imported ({e}); pip install 'onnxplug-opencl[pocl]'"
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        return (), (f"no OpenCL platform found ({e}); install a vendor OpenCL driver or "
                    "PoCL (pip install 'pyopencl[pocl]')")
    found: list[DeviceEntry] = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue  # a platform with no usable device is skipped, others may still work
        for d_index, d in enumerate(devices):
            ext = d.extensions.split()
            found.append(DeviceEntry(
                index=len(found), platform_index=p_index, device_index=d_index,
                platform_name=platform.name.strip(), name=d.name.strip(), kind=_kind(d.type),
                version=d.version.strip(), compute_units=int(d.max_compute_units),
                global_mem_bytes=int(d.global_mem_size), local_mem_bytes=int(d.local_mem_size),
                max_work_group_size=int(d.max_work_group_size),
                fp16="cl_khr_fp16" in ext, fp64="cl_khr_fp64" in ext or d.double_fp_config != 0))
    if not found:
        return (), f"{len(platforms)} OpenCL platform(s) found but none has a device"
    return tuple(found), ""


def select_device(selector: str | None = None) -> DeviceEntry:
    """The device ``selector`` names; without one, ONNXPLUG_OPENCL_DEVICE, else the first GPU or
    accelerator, else the first device. Raises :class:`DeviceSelectionError` naming the selector."""
    devices, reason = discover()
    source = "provider option 'device'"
    if not selector:
        selector = os.environ.get(DEVICE_ENV, "").strip() or None
        source = f"environment variable {DEVICE_ENV}"
    if not devices:
        raise DeviceSelectionError(f"no OpenCL device available: {reason}")
    if not selector:
        preferred = [d for d in devices if d.kind in ("gpu", "accelerator")]
        return (preferred or list(devices))[0]
    chosen = _match(devices, str(selector).strip())
    if chosen is None:
        listing = "; ".join(d.describe() for d in devices)
        raise DeviceSelectionError(f"{source} is {selector!r}, which matches no OpenCL device "
                                   f"(use 'platform:device', a flat index, or a name substring); "
                                   f"devices: {listing}")
    return chosen


def _match(devices: tuple[DeviceEntry, ...], selector: str) -> DeviceEntry | None:
    if ":" in selector:
        p, _, d = selector.partition(":")
        if p.strip().isdigit() and d.strip().isdigit():
            for dev in devices:
                if dev.platform_index == int(p) and dev.device_index == int(d):
                    return dev
            return None
    if selector.isdigit():
        i = int(selector)
        return devices[i] if i < len(devices) else None
    needle = selector.lower()
    for dev in devices:
        if needle in dev.name.lower() or needle in dev.platform_name.lower():
            return dev
    return None
