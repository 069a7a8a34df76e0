"""Fixtures of the numpy provider's kernel tests."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from onnxplug.providers.numpy.runtime.scratch import ThreadScratch
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING


@pytest.fixture(autouse=True)
def default_product_thresholds():
    """The product thresholds are process-wide (the last numpy provider created sets them): a test
    whose session set other ones leaves the defaults behind."""
    yield
    PRODUCT_THREADS.tune(DEFAULT_TUNING)


@pytest.fixture
def poisoned_scratch(monkeypatch):
    """Every per-thread scratch buffer (ThreadScratch) comes back filled with NaN (integer ones
    with their type's minimum), so a kernel that reads scratch it did not write produces NaN or a
    wrong value where onnxruntime does not."""
    real = ThreadScratch.get

    def poisoned(self, dtype, size):
        buf = real(self, dtype, size)
        buf.fill(np.nan if buf.dtype.kind in "fc" else np.iinfo(buf.dtype).min)
        return buf

    monkeypatch.setattr(ThreadScratch, "get", poisoned)


@pytest.fixture
def parallel_for_calls(monkeypatch):
    """``spy(module)`` records every call of ``module``'s ``parallel_for`` as (units, whether they
    went to the product threads) and returns the list it appends to."""

    def spy(module) -> list[tuple[int, bool]]:
        calls: list[tuple[int, bool]] = []
        real = module.parallel_for

        def recording(count, body, macs):
            ran = real(count, body, macs)
            calls.append((count, ran))
            return ran

        monkeypatch.setattr(module, "parallel_for", recording)
        return calls

    return spy


@pytest.fixture
def calls_of(monkeypatch):
    """``spy(module, name, record)`` wraps ``module.name`` so that every call first appends
    ``record(*args)`` to the list it returns, then runs the original."""

    def spy(module, name: str, record) -> list:
        calls: list = []
        real = getattr(module, name)

        def recording(*args):
            calls.append(record(*args))
            return real(*args)

        monkeypatch.setattr(module, name, recording)
        return calls

    return spy
