"""Contract tests of a provider's allocator and data transfer.

Round trips are checked bit for bit for every ONNX element type the provider claims (the dtypes
of tensors its claimed nodes read or write, see :mod:`.survey`); other dtypes are reported as
"not claimed". Buffers are inspected only through the provider's own ``to_host``, so the tests
work whatever a device value is (a numpy array, a ``DeviceArray``, a ``pyopencl`` array...).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxplug.device import CPU, Allocator, DataTransfer
from onnxplug.provider import ExecutionProvider

from onnxplug_conformance.contract.dtypes import ONNX_DTYPES, same_array, sample_array
from onnxplug_conformance.contract.fixtures import ProviderFixtures

DTYPE_KEYS = sorted(ONNX_DTYPES)
SHAPES = [(), (0,), (1,), (2, 3, 4), (7, 1, 5), (3, 0, 2)]


def _host_copy(provider: ExecutionProvider, value: object) -> object:
    return provider.data_transfer.to_host(value)


class BaseAllocatorTests(ProviderFixtures):
    """``alloc`` / ``free`` of the provider's allocator."""

    def test_allocator_and_transfer_serve_the_provider_device(self, provider: ExecutionProvider) -> None:
        assert isinstance(provider.allocator, Allocator), type(provider.allocator).__name__
        assert isinstance(provider.data_transfer, DataTransfer), type(provider.data_transfer).__name__
        assert provider.allocator.device == provider.device, (
            f"allocator serves {provider.allocator.device}, provider computes on {provider.device}")
        assert provider.data_transfer.device == provider.device, (
            f"data transfer serves {provider.data_transfer.device}, provider computes on {provider.device}")

    @pytest.mark.parametrize("dtype_key", DTYPE_KEYS)
    def test_alloc_gives_requested_shape_and_dtype(self, provider: ExecutionProvider,
                                                   claimed_dtypes: set[str], dtype_key: str) -> None:
        self.require_dtype(claimed_dtypes, dtype_key)
        buffer = provider.allocator.alloc((2, 3), ONNX_DTYPES[dtype_key])
        host = _host_copy(provider, buffer)
        assert isinstance(host, np.ndarray), f"to_host(alloc(...)) gave {type(host).__name__}"
        assert host.shape == (2, 3) and host.dtype == ONNX_DTYPES[dtype_key], (host.shape, host.dtype)
        provider.allocator.free(buffer)

    @pytest.mark.parametrize("shape", SHAPES, ids=str)
    def test_alloc_scalar_and_empty_shapes(self, provider: ExecutionProvider, claimed_dtypes: set[str],
                                           shape: tuple[int, ...]) -> None:
        dtype = ONNX_DTYPES[self.some_claimed_dtype(claimed_dtypes)]
        buffer = provider.allocator.alloc(shape, dtype)
        host = _host_copy(provider, buffer)
        assert isinstance(host, np.ndarray) and host.shape == shape and host.dtype == dtype
        provider.allocator.free(buffer)

    def test_alloc_free_cycles(self, provider: ExecutionProvider, claimed_dtypes: set[str]) -> None:
        """64 alloc/free cycles of 4 MiB, then a transfer still works. (A leak is not measured:
        there is no device-independent way to; an allocator that breaks on reuse fails here.)"""
        dtype = np.dtype(ONNX_DTYPES[self.some_claimed_dtype(claimed_dtypes)])
        count = (4 << 20) // dtype.itemsize
        for _ in range(64):
            buffer = provider.allocator.alloc((count,), dtype)
            provider.allocator.free(buffer)
        last = provider.data_transfer.to_device(sample_array(self.some_claimed_dtype(claimed_dtypes), (4, 4)))
        assert _host_copy(provider, last).shape == (4, 4)


class BaseDataTransferTests(ProviderFixtures):
    """Host -> device -> host round trips."""

    @pytest.mark.parametrize("dtype_key", DTYPE_KEYS)
    def test_round_trip_every_claimed_dtype(self, provider: ExecutionProvider, claimed_dtypes: set[str],
                                            dtype_key: str) -> None:
        self.require_dtype(claimed_dtypes, dtype_key)
        host = sample_array(dtype_key, (3, 5))
        back = _host_copy(provider, provider.data_transfer.to_device(host.copy()))
        problem = same_array(back, host)
        assert not problem, f"{dtype_key} round trip: {problem}"

    @pytest.mark.parametrize("shape", SHAPES, ids=str)
    def test_round_trip_shapes(self, provider: ExecutionProvider, claimed_dtypes: set[str],
                               shape: tuple[int, ...]) -> None:
        host = sample_array(self.some_claimed_dtype(claimed_dtypes), shape, seed=1)
        problem = same_array(_host_copy(provider, provider.data_transfer.to_device(host.copy())), host)
        assert not problem, f"shape {shape} round trip: {problem}"

    def test_round_trip_non_contiguous_views(self, provider: ExecutionProvider, claimed_dtypes: set[str]) -> None:
        base = sample_array(self.some_claimed_dtype(claimed_dtypes), (6, 8), seed=2)
        for label, view in (("strided", base[:, ::3]), ("transposed", base.T), ("reversed", base[::-1])):
            back = _host_copy(provider, provider.data_transfer.to_device(view))
            problem = same_array(back, np.ascontiguousarray(view))
            assert not problem, f"{label} view round trip: {problem}"

    def test_device_values_do_not_alias(self, provider: ExecutionProvider, claimed_dtypes: set[str]) -> None:
        key = self.some_claimed_dtype(claimed_dtypes)
        hosts = [sample_array(key, (16,), seed=s) for s in range(4)]
        values = [provider.data_transfer.to_device(h.copy()) for h in hosts]
        for host, value in zip(hosts, values):
            problem = same_array(_host_copy(provider, value), host)
            assert not problem, f"device values alias each other: {problem}"

    def test_device_copies_are_independent_of_host_arrays(self, provider: ExecutionProvider,
                                                          claimed_dtypes: set[str]) -> None:
        if provider.device == CPU:
            pytest.skip("host provider: to_device may share memory with the host array")
        key = self.some_claimed_dtype(claimed_dtypes)
        host = sample_array(key, (8,), seed=3)
        original = host.copy()
        value = provider.data_transfer.to_device(host)
        host[...] = sample_array(key, (8,), seed=4)
        first = _host_copy(provider, value)
        assert not same_array(first, original), "changing the host array changed the device value"
        first[...] = sample_array(key, (8,), seed=5)
        assert not same_array(_host_copy(provider, value), original), (
            "changing a to_host result changed the device value")
