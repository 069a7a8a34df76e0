"""Fixtures of the OpenCL provider tests: the real OpenCL device (in CI, Intel's CPU runtime and PoCL) and a model helper."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug_opencl.runtime.devices import discover


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a device that runs kernels the tests cannot mean anything: skip them, saying why
    (no OpenCL device, or one that cannot build a kernel, as PoCL 3.0 on CPUs its LLVM does not know)."""
    devices, reason = discover()
    if devices:
        from onnxplug_opencl.provider import OpenCLProvider

        availability = OpenCLProvider.availability()
        if availability:
            return
        skip = pytest.mark.skip(reason=availability.reason)
    else:
        skip = pytest.mark.skip(reason=f"no OpenCL device: {reason}")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def rt():
    """The runtime of the default OpenCL device."""
    import onnxplug_opencl

    return onnxplug_opencl.cl_runtime()


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, fresh per test."""
    return np.random.default_rng(1234)
