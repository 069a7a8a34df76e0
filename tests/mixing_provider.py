"""A test provider on a second "device": it claims only Relu and Add, and keeps its values in
``DeviceValue`` wrappers from its own allocator, so a missing copy cannot go unnoticed."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from onnxplug.device import Allocator, DataTransfer, Device
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.provider import ExecutionProvider

TEST_DEVICE = Device("testdev", 0)


@dataclass
class DeviceValue:
    """A buffer on the test device; numpy kernels cannot read it."""

    data: np.ndarray


class CountingAllocator(Allocator):
    """Hands out DeviceValues and counts live buffers."""

    device = TEST_DEVICE

    def __init__(self) -> None:
        self.live = 0
        self.total = 0
        self._lock = threading.Lock()

    def alloc(self, shape, dtype) -> DeviceValue:
        with self._lock:
            self.live += 1
            self.total += 1
        return DeviceValue(np.empty(shape, dtype))

    def free(self, buffer) -> None:
        with self._lock:
            self.live -= 1


class TestTransfer(DataTransfer):
    """Copies between host arrays and DeviceValues, counting both directions."""

    device = TEST_DEVICE

    def __init__(self, allocator: CountingAllocator) -> None:
        self.allocator = allocator
        self.to_device_count = 0
        self.to_host_count = 0

    def to_device(self, array: np.ndarray) -> DeviceValue:
        self.to_device_count += 1
        value = self.allocator.alloc(array.shape, array.dtype)
        value.data[...] = array
        return value

    def to_host(self, value: DeviceValue) -> np.ndarray:
        assert isinstance(value, DeviceValue), f"to_host got {type(value).__name__}"
        self.to_host_count += 1
        return value.data.copy()


REGISTRY = KernelRegistry("mixing")


@REGISTRY.kernel("Relu", 6, 13, 14)
class DeviceRelu(Kernel):
    def compute(self, x: DeviceValue) -> DeviceValue:
        assert isinstance(x, DeviceValue), "input was not copied to the test device"
        return DeviceValue(np.maximum(x.data, 0))


@REGISTRY.kernel("Add", 7, 13, 14)
class DeviceAdd(Kernel):
    def compute(self, a: DeviceValue, b: DeviceValue) -> DeviceValue:
        assert isinstance(a, DeviceValue) and isinstance(b, DeviceValue), "input not on the test device"
        return DeviceValue(a.data + b.data)


class MixingProvider(ExecutionProvider):
    """Claims Relu and Add (float32 only) on the test device."""

    name: ClassVar[str] = "mixing"
    version: ClassVar[str] = "test"
    default_options: ClassVar[dict] = {"claim": "Relu,Add"}

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.device = TEST_DEVICE
        self.allocator = CountingAllocator()
        self.data_transfer = TestTransfer(self.allocator)
        self.kernel_registry = REGISTRY
        self.claimable = set(self.options["claim"].split(","))

    def get_capability(self, view):
        claims = super().get_capability(view)
        return [c for c in claims if c.nodes[0].op_type in self.claimable
                and all(view.dtype_of(i) == np.float32 for i in c.nodes[0].inputs)]


class BindingTransfer(TestTransfer):
    """The test transfer plus the optional methods IOBinding and OrtValue use: adopt, copy_into,
    synchronize (counted)."""

    def __init__(self, allocator) -> None:
        super().__init__(allocator)
        self.synchronized = 0

    def adopt(self, value) -> DeviceValue | None:
        return value if isinstance(value, DeviceValue) else None

    def copy_into(self, target: DeviceValue, value: DeviceValue) -> None:
        target.data[...] = value.data

    def synchronize(self) -> None:
        self.synchronized += 1


class BindingProvider(MixingProvider):
    """MixingProvider whose transfer is a BindingTransfer (register it for a test module)."""

    name: ClassVar[str] = "binding_test"

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.data_transfer = BindingTransfer(self.allocator)
