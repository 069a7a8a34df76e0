"""Fixtures of the numba provider tests; helpers live in numba_test_helpers (a name no other test
folder uses, so running every test folder in one pytest session cannot pick up another conftest)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_test_helpers  # noqa: F401  (sets the private kernel cache folder before onnxplug loads)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture
def generic_calls(monkeypatch) -> list:
    """How many Loop calls ran on the generic (node-by-node) path rather than the compiled loop."""
    from onnxplug_numba.ops import op_loop

    calls: list = []
    original = op_loop.Loop.run_generic

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(op_loop.Loop, "run_generic", spy)
    return calls
