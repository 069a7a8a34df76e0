"""DeviceMemory over NullDevice: round trips for many dtypes and shapes, lifetimes, refused values."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

from onnxplug_sdk import CPU, Device, DeviceArray, DeviceMemory, DeviceMemoryError, NullDevice

_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64,
           np.bool_, np.complex64, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn]
_SHAPES = [(), (1,), (7,), (2, 3), (3, 1, 5), (0, 4)]


def _sample(dtype: type, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype)


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_round_trip_is_bit_exact(dtype: type, shape: tuple[int, ...]) -> None:
    device = NullDevice()
    host = _sample(dtype, shape, np.random.default_rng(0))
    on_device = device.to_device(host)
    assert isinstance(on_device, DeviceArray) and on_device.device == device.device
    assert on_device.shape == host.shape and on_device.dtype == host.dtype and on_device.nbytes == host.nbytes
    back = device.to_host(on_device)
    assert back.dtype == host.dtype and back.shape == host.shape
    assert back.tobytes() == host.tobytes()
    assert not np.shares_memory(back, host)


def test_device_memory_is_separate_from_the_host_array() -> None:
    device = NullDevice()
    host = np.arange(6, dtype=np.float32)
    on_device = device.to_device(host)
    host[:] = -1  # changing the source after the copy must not change the device copy
    np.testing.assert_array_equal(device.to_host(on_device), np.arange(6, dtype=np.float32))
    assert device.bytes_in == 24 and device.bytes_out == 24


def test_non_contiguous_inputs_are_copied_in_logical_order() -> None:
    device = NullDevice()
    host = np.arange(24, dtype=np.int32).reshape(2, 3, 4).transpose(2, 0, 1)[::2]
    np.testing.assert_array_equal(device.to_host(device.to_device(host)), host)


def test_free_and_garbage_collection_give_memory_back() -> None:
    device = NullDevice()
    a = device.alloc((4, 4), np.float64)
    b = device.to_device(np.ones((3,), np.float32))
    assert device.live_bytes == 128 + 12 and device.allocations == 2
    device.free(a)
    assert a.freed and device.live_bytes == 12
    with pytest.raises(DeviceMemoryError, match="freed twice"):
        device.free(a)
    with pytest.raises(DeviceMemoryError, match="it was freed"):
        device.to_host(a)
    del b
    gc.collect()
    assert device.live_bytes == 0


def test_empty_arrays_use_no_device_memory() -> None:
    device = NullDevice()
    empty = device.to_device(np.zeros((0, 5), np.float32))
    assert empty.handle is None and device.allocations == 0
    assert device.to_host(empty).shape == (0, 5)


def test_refusals_name_the_culprit() -> None:
    device = NullDevice(Device("null", 3))
    other = NullDevice(Device("null", 4))
    with pytest.raises(DeviceMemoryError, match=r"null:3: cannot allocate a object"):
        device.to_device(np.array(["a", "b"], dtype=object))
    with pytest.raises(DeviceMemoryError, match=r"null:3: cannot copy to the host a ndarray"):
        device.to_host(np.zeros(2))
    with pytest.raises(DeviceMemoryError, match=r"null:3: cannot copy to the host an array of device null:4"):
        device.to_host(other.to_device(np.zeros(2)))
    with pytest.raises(DeviceMemoryError, match="negative dimension"):
        device.alloc((2, -1), np.float32)


def test_a_device_implements_only_the_four_methods() -> None:
    class DictDevice(DeviceMemory):
        """Handles are keys into a dict of bytes: nothing like a numpy buffer."""

        def __init__(self) -> None:
            super().__init__(Device("dict"))
            self.store: dict[int, bytearray] = {}

        def _alloc(self, nbytes: int) -> int:
            key = len(self.store) + 1
            self.store[key] = bytearray(nbytes)
            return key

        def _free(self, handle: int) -> None:
            del self.store[handle]

        def _copyin(self, handle: int, host: np.ndarray) -> None:
            self.store[handle][:] = host.tobytes()

        def _copyout(self, host: np.ndarray, handle: int) -> None:
            host.reshape(-1).view(np.uint8)[:] = np.frombuffer(bytes(self.store[handle]), np.uint8)

    device = DictDevice()
    x = np.linspace(-1, 1, 10).reshape(2, 5)
    value = device.to_device(x)
    assert isinstance(value.handle, int) and device.device != CPU
    np.testing.assert_array_equal(device.to_host(value), x)
    device.free(value)
    assert device.store == {}


def test_the_four_methods_are_required() -> None:
    with pytest.raises(NotImplementedError, match="_alloc"):
        DeviceMemory(Device("nothing")).to_device(np.zeros(2))
