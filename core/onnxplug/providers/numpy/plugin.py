"""Entry point of the built-in ``numpy`` provider (group ``onnxplug.providers``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from onnxplug.hookspecs import hookimpl
from onnxplug.provider import ExecutionProvider

if TYPE_CHECKING:
    from onnxplug.optimizer.pass_base import GraphPass


@hookimpl
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register the default CPU provider."""
    from onnxplug.providers.numpy.provider import NumpyProvider

    register(NumpyProvider)


@hookimpl
def onnxplug_register_passes(register: Callable[[type[GraphPass]], None]) -> None:
    """Register the provider's own passes: channels-last layout and inverted-bottleneck fusion."""
    from onnxplug.providers.numpy.passes import PASSES

    for graph_pass in PASSES:
        register(graph_pass)
