"""Every hook onnxplug calls on its plugins, in one module.

A plugin is a module (or object) with functions named like the specs below. It reaches onnxplug
through the ``onnxplug.providers`` entry-point group; the built-in ``numpy`` provider does too.
Hooks hand the plugin a registrar to call rather than collecting return values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:
    from onnxplug.kernel import KernelRegistry
    from onnxplug.optimizer.pass_base import GraphPass
    from onnxplug.provider import ExecutionProvider

hookspec = pluggy.HookspecMarker("onnxplug")
hookimpl = pluggy.HookimplMarker("onnxplug")
"""Marker for plugin functions implementing the hooks below."""


@hookspec
def onnxplug_register_providers(register: Callable[[type[ExecutionProvider]], None]) -> None:
    """Register execution-provider classes by calling ``register(ProviderClass)``.

    Called once per process, the first time onnxplug needs its provider list: on the first
    ``InferenceSession``, ``get_available_providers()`` or ``onnxplug providers``.
    """


@hookspec
def onnxplug_register_kernels(provider_name: str, registry: KernelRegistry) -> None:
    """Add kernels to another provider's registry with ``registry.register(...)``.

    Called once per provider, right after that provider's own kernels are loaded into
    ``registry``, so a plugin can extend a provider it does not own (say, a custom-domain op
    for ``numpy``). Registering a key the provider already has raises ``DuplicateKernelError``.
    """


@hookspec
def onnxplug_register_passes(register: Callable[[type[GraphPass]], None]) -> None:
    """Register graph-optimizer pass classes by calling ``register(PassClass)``.

    Called once per process, when the first session with optimization enabled is created.
    Each pass declares the level at which it runs.
    """
