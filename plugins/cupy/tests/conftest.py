"""Fixtures and markers of the cupy provider's tests; helpers are in cupy_test_support.py.

Three kinds of test live here, and they are never confused:
* device-free tests (registration, options, availability, claims, code generation): always run;
* host-emulation tests (marker ``emulation``, ``host_emulation.py``: numpy + the generated CUDA C
  compiled by g++): check the provider's logic without a GPU; they are NOT GPU tests;
* GPU tests (marker ``gpu``): run on a real CUDA device through CuPy, skipped with CuPy's own
  reason when there is none.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cupy_test_support import EMULATED  # noqa: E402
from host_emulation import EmulatedCupyProvider, compiler  # noqa: E402
from onnxplug.plugins import get_catalog  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA device through CuPy")
    config.addinivalue_line("markers", "nvcc: compiles generated CUDA C with nvcc")
    config.addinivalue_line("markers", "emulation: host emulation of the provider (numpy + g++), not a GPU test")


@pytest.fixture(scope="session")
def emulated() -> str:
    """Register the host-emulated provider and return its name."""
    if compiler() is None:
        pytest.skip("host emulation needs g++")
    catalog = get_catalog()
    if catalog.providers.get(EMULATED) is not EmulatedCupyProvider:
        catalog.register(EmulatedCupyProvider)
    return EMULATED


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
