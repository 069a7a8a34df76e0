"""Fixtures of the numba provider tests; helpers live in numba_test_helpers (a name no other test
folder uses, so running every test folder in one pytest session cannot pick up another conftest)."""

from __future__ import annotations

import numpy as np
import pytest

import numba_test_helpers  # noqa: F401  (sets the private kernel cache folder before onnxplug loads)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
