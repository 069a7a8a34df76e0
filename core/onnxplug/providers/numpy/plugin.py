"""Entry point of the built-in ``numpy`` provider (group ``onnxplug.providers``)."""

from __future__ import annotations

from typing import Callable

from onnxplug.hookspecs import hookimpl
from onnxplug.provider import ExecutionProvider


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register the default CPU provider."""
    from onnxplug.providers.numpy.provider import NumpyProvider

    register(NumpyProvider)
