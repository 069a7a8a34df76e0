"""Turning ``--provider SPEC`` and ``--provider-option KEY=VALUE`` into a registered provider class.

A SPEC is an installed provider's name or alias (``numpy``, ``CPUExecutionProvider``), ``null``
(the suite's control provider), or ``package.module:ClassName`` for a provider class that is not
installed through entry points (a provider in development, a test provider).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Sequence

from onnxplug.errors import UnknownProviderError
from onnxplug.plugins import get_catalog
from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.null_provider import NULL_PROVIDER_NAME, NullProvider

#: The plugin name shown for providers this suite registers itself.
REGISTRAR = "onnxplug-conformance"


class ProviderSpecError(ValueError):
    """A ``--provider`` or ``--provider-option`` value cannot be used; the message says which."""


@dataclass
class ProviderUnderTest:
    """The provider a conformance run tests: its catalog name, class and options."""

    name: str
    cls: type[ExecutionProvider]
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> tuple[str, dict[str, Any]]:
        """The ``providers=[...]`` entry for a session."""
        return (self.name, dict(self.options))


def register_class(cls: type[ExecutionProvider]) -> str:
    """Register ``cls`` in the process catalog (unless it is there already) and return its name."""
    catalog = get_catalog()
    name = getattr(cls, "name", "") or cls.__name__
    if catalog.providers.get(name) is cls:
        return name
    catalog.register(cls, REGISTRAR)
    if catalog.providers.get(name) is not cls:
        reason = next((r.reason for r in reversed(catalog.rejected) if r.name == name), "refused")
        raise ProviderSpecError(f"cannot register provider class {cls.__module__}.{cls.__qualname__} "
                                f"as {name!r}: {reason}")
    return name


def _import_class(spec: str) -> type[ExecutionProvider]:
    module_name, _, attr = spec.partition(":")
    try:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            # `onnxplug conformance pkg.mod:Class` from a source checkout: console scripts do not
            # put the working directory on sys.path the way `python -m` does
            if os.getcwd() in sys.path:
                raise
            sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise ProviderSpecError(f"--provider {spec!r}: cannot import module {module_name!r}: {e}") from None
    try:
        cls = getattr(module, attr)
    except AttributeError:
        raise ProviderSpecError(f"--provider {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if not (isinstance(cls, type) and issubclass(cls, ExecutionProvider)):
        raise ProviderSpecError(f"--provider {spec!r}: {attr!r} is not an ExecutionProvider subclass")
    return cls


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """``["threads=2", "claim=Relu,Add"]`` -> ``{"threads": 2, "claim": "Relu,Add"}``.

    Values are read as JSON when they parse (numbers, booleans, lists), else kept as strings.
    """
    options: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ProviderSpecError(f"--provider-option {item!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(raw)
        except ValueError:
            options[key] = raw
    return options


def resolve_provider(spec: str, option_items: Sequence[str] = ()) -> ProviderUnderTest:
    """The provider named by ``spec``, registered in the catalog, with its parsed options."""
    options = parse_options(option_items)
    if ":" in spec:
        cls = _import_class(spec)
        return ProviderUnderTest(register_class(cls), cls, options)
    catalog = get_catalog()
    if spec == NULL_PROVIDER_NAME and NULL_PROVIDER_NAME not in catalog.providers:
        register_class(NullProvider)
    try:
        name = catalog.resolve_name(spec)
    except UnknownProviderError as e:
        failed = [f"{p.name} ({p.error})" for p in catalog.plugins if p.error]
        hint = f"; plugins that failed to load: {', '.join(failed)}" if failed else ""
        raise ProviderSpecError(f"--provider {spec!r}: {e}{hint}") from None
    return ProviderUnderTest(name, catalog.providers[name], options)
