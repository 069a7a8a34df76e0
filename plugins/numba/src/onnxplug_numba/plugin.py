"""Entry point of the ``numba`` provider (group ``onnxplug.providers``)."""

from __future__ import annotations

from typing import Callable

from onnxplug_sdk import ExecutionProvider, hookimpl


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register the numba provider."""
    from onnxplug_numba.provider import NumbaProvider

    register(NumbaProvider)
