"""Fixtures: register SDK-built providers in the process-wide catalog for one test, then remove them."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from onnxplug.plugins import get_catalog
from onnxplug_sdk import ExecutionProvider


@pytest.fixture
def register_provider() -> Iterator[Callable[[type[ExecutionProvider]], str]]:
    """``register_provider(Cls)`` adds Cls to the catalog as a plugin would; undone after the test."""
    catalog = get_catalog()
    added: list[str] = []

    def register(cls: type[ExecutionProvider]) -> str:
        catalog.register(cls, plugin="sdk-tests")
        assert catalog.providers.get(cls.name) is cls, [r.reason for r in catalog.rejected]
        added.append(cls.name)
        return cls.name

    yield register
    for name in added:
        catalog.providers.pop(name, None)
        catalog.owner.pop(name, None)
