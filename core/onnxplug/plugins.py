"""Plugin discovery through entry points, and the registry of provider classes it fills.

Environment variables:
    ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD=1  load only the core's own entry points (and those allowlisted).
    ONNXPLUG_PLUGINS=a,b                load only these entry-point names (plus the core's own).
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from dataclasses import dataclass
from typing import Any, Iterable

import pluggy

from onnxplug import hookspecs, logs
from onnxplug.errors import UnknownProviderError
from onnxplug.provider import CORE_API_VERSION, ExecutionProvider

ENTRY_POINT_GROUP = "onnxplug.providers"
DISABLE_AUTOLOAD_ENV = "ONNXPLUG_DISABLE_PLUGIN_AUTOLOAD"
ALLOWLIST_ENV = "ONNXPLUG_PLUGINS"
CORE_DISTRIBUTION = "onnxplug"

#: onnxruntime's provider names, mapped to the short name of the provider that plays their part.
ORT_ALIASES = {
    "CPUExecutionProvider": "numpy",
    "CUDAExecutionProvider": "cupy",
    "OpenCLExecutionProvider": "opencl",
}
DEFAULT_PROVIDER = "numpy"


@dataclass
class PluginRecord:
    """One entry point that was found, and what became of it."""

    name: str
    value: str
    distribution: str
    version: str
    loaded: bool = False
    error: str = ""


@dataclass
class RejectedProvider:
    """A provider class refused at registration, with the reason."""

    name: str
    plugin: str
    reason: str


class ProviderCatalog:
    """The provider classes registered by plugins, by name and alias."""

    def __init__(self) -> None:
        self.providers: dict[str, type[ExecutionProvider]] = {}
        self.owner: dict[str, str] = {}
        self.rejected: list[RejectedProvider] = []
        self.plugins: list[PluginRecord] = []
        self.pm = pluggy.PluginManager("onnxplug")
        self.pm.add_hookspecs(hookspecs)

    def register(self, cls: type[ExecutionProvider], plugin: str = "<direct>") -> None:
        """Register a provider class; classes for another core interface version are refused."""
        name = getattr(cls, "name", "") or cls.__name__
        if not (isinstance(cls, type) and issubclass(cls, ExecutionProvider)):
            self.rejected.append(RejectedProvider(name, plugin, "not an ExecutionProvider subclass"))
            return
        if cls.api_version != CORE_API_VERSION:
            self.rejected.append(RejectedProvider(
                name, plugin, f"written for core interface version {cls.api_version}, but this core "
                f"implements version {CORE_API_VERSION}; install a provider release built for it"))
            return
        if name in self.providers and self.providers[name] is not cls:
            self.rejected.append(RejectedProvider(
                name, plugin, f"the name {name!r} is already taken by plugin {self.owner[name]!r}"))
            return
        self.providers[name] = cls
        self.owner[name] = plugin

    def add_plugin(self, plugin: Any, name: str) -> None:
        """Register a plugin object (module) and let it register its providers."""
        self.pm.register(plugin, name=name)
        hook = getattr(plugin, "onnxplug_register_providers", None)
        if hook is not None:
            hook(register=lambda cls: self.register(cls, name))

    def remove_plugin(self, name: str) -> None:
        """Unregister a plugin added with :meth:`add_plugin` and forget the providers it registered."""
        for short in [n for n, owner in self.owner.items() if owner == name]:
            del self.providers[short], self.owner[short]
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)

    def resolve_name(self, name: str) -> str:
        """The registered short name for ``name`` or one of its aliases."""
        if name in self.providers:
            return name
        for short, cls in self.providers.items():
            if name in cls.aliases:
                return short
        alias = ORT_ALIASES.get(name)
        if alias in self.providers:
            return alias
        known = ", ".join(sorted(self.providers))
        raise UnknownProviderError(f"unknown provider {name!r}; installed providers: {known}")

    def get(self, name: str) -> type[ExecutionProvider]:
        """The provider class for a short name or alias."""
        return self.providers[self.resolve_name(name)]

    def default_provider(self) -> type[ExecutionProvider]:
        """The class of the default provider, appended last to sessions (constant folding runs on it)."""
        return self.providers[DEFAULT_PROVIDER]


_catalog: ProviderCatalog | None = None
_lock = threading.Lock()


def get_catalog() -> ProviderCatalog:
    """The process-wide provider catalog, loading entry points the first time."""
    global _catalog
    with _lock:
        if _catalog is None:
            catalog = ProviderCatalog()
            _load_entry_points(catalog)
            _catalog = catalog
        return _catalog


def available_providers() -> list[str]:
    """The installed providers that can run on this machine, by name, the default provider last."""
    catalog = get_catalog()
    names = [n for n, cls in sorted(catalog.providers.items()) if cls.availability()]
    return sorted(names, key=lambda n: n == DEFAULT_PROVIDER)


def reset_catalog() -> None:
    """Forget discovered plugins, so the next use discovers them again (tests, environment changes)."""
    global _catalog
    with _lock:
        _catalog = None


def _selected(entry_points: Iterable[importlib.metadata.EntryPoint]) -> list[importlib.metadata.EntryPoint]:
    autoload = os.environ.get(DISABLE_AUTOLOAD_ENV, "").strip().lower() not in ("1", "true", "yes")
    allow_raw = os.environ.get(ALLOWLIST_ENV)
    allow = {n.strip() for n in allow_raw.split(",") if n.strip()} if allow_raw is not None else None
    chosen = []
    for ep in entry_points:
        core = ep.dist is not None and ep.dist.name == CORE_DISTRIBUTION
        if core or (allow is not None and ep.name in allow) or (allow is None and autoload):
            chosen.append(ep)
    return chosen


def _load_entry_points(catalog: ProviderCatalog) -> None:
    seen: set[str] = set()
    for ep in _selected(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)):
        if ep.name in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(ep.name)
        dist = ep.dist.name if ep.dist is not None else "?"
        version = ep.dist.version if ep.dist is not None else "?"
        record = PluginRecord(ep.name, ep.value, dist, version)
        catalog.plugins.append(record)
        try:
            catalog.add_plugin(ep.load(), ep.name)
            record.loaded = True
        except Exception as e:  # a broken plugin must not break the runtime; it is reported instead
            record.error = f"{type(e).__name__}: {e}"
            logs.warn(f"onnxplug: plugin {ep.name!r} ({ep.value}) failed to load: {record.error}", stacklevel=2)


def extend_registry(provider_name: str, registry: Any) -> None:
    """Let plugins add kernels to ``provider_name``'s registry (``onnxplug_register_kernels``)."""
    get_catalog().pm.hook.onnxplug_register_kernels(provider_name=provider_name, registry=registry)
