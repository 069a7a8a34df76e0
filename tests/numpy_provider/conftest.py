"""Fixtures of the numpy provider's kernel tests."""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.providers.numpy.ops._scratch import ThreadScratch


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
