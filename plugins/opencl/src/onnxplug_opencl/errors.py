"""Typed errors of the OpenCL provider; each derives from the matching onnxplug error."""

from __future__ import annotations

from onnxplug_sdk import errors


class OpenCLError(errors.OnnxplugError, RuntimeError):
    """Base class of the errors the OpenCL provider raises on purpose."""


class OpenCLBuildError(OpenCLError):
    """An OpenCL program failed to build; ``build_log`` holds the compiler's log for the device."""

    def __init__(self, program: str, device: str, options: str, build_log: str) -> None:
        self.program = program
        self.device = device
        self.options = options
        self.build_log = build_log
        super().__init__(f"OpenCL program {program!r} failed to build for device {device!r} "
                         f"(options: {options or 'none'}); build log:\n{build_log.strip() or '<empty>'}")


class DeviceSelectionError(OpenCLError, errors.UnsupportedOptionError):
    """The ``device`` option or ONNXPLUG_OPENCL_DEVICE names no OpenCL device that exists here."""


class DeviceValueError(OpenCLError, ValueError):
    """A value handed to the provider lives on another OpenCL context or is not a tensor it can read."""
