"""Which core interface versions this SDK supports, checked when the SDK is imported."""

from __future__ import annotations

from onnxplug.provider import CORE_API_VERSION

#: Core interface versions (``onnxplug.provider.CORE_API_VERSION``) this SDK release is written for.
SUPPORTED_CORE_API: frozenset[int] = frozenset({1})


class IncompatibleCoreError(ImportError):
    """The installed onnxplug core implements an interface version this SDK does not support.

    Raised at import, so a plugin built on this SDK fails to load with this message (and the core
    reports the plugin as failed) instead of misbehaving later.
    """


def check_core_api(core_api: int = CORE_API_VERSION, supported: frozenset[int] = SUPPORTED_CORE_API) -> None:
    """Raise :class:`IncompatibleCoreError` unless ``core_api`` is one of ``supported``."""
    if core_api not in supported:
        versions = ", ".join(str(v) for v in sorted(supported))
        raise IncompatibleCoreError(
            f"onnxplug-sdk supports core interface version(s) {versions}, but the installed onnxplug "
            f"implements version {core_api}; install an onnxplug-sdk release built for it")
