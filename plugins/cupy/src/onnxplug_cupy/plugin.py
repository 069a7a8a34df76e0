"""Entry point of the ``cupy`` provider (group ``onnxplug.providers``, name ``cupy``)."""

from __future__ import annotations

from typing import Callable

from onnxplug_sdk import ExecutionProvider, hookimpl


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register :class:`~onnxplug_cupy.provider.CupyProvider` (it imports CuPy only when used)."""
    from onnxplug_cupy.provider import CupyProvider

    register(CupyProvider)
