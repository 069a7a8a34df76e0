"""Entry point of the OpenCL provider (group ``onnxplug.providers``, name ``opencl``)."""

from __future__ import annotations

from typing import Callable

from onnxplug_sdk import ExecutionProvider, hookimpl


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register :class:`~onnxplug_opencl.provider.OpenCLProvider` (imported here, not at plugin load)."""
    from onnxplug_opencl.provider import OpenCLProvider

    register(OpenCLProvider)
