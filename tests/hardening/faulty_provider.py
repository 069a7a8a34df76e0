"""A test provider on its own device whose kernels misbehave on demand.

It claims the op types named by its ``claim`` option (float32 only) and computes them on host
memory wrapped in ``FaultArray``s from a ``TrackingAllocator`` that counts live buffers and tracks
which thread allocated each (``tracked``), so the executor checks its steps for leaks. Set
``provider.fault`` to one of :data:`FAULTS` to make the next kernel calls misbehave; ``None`` (the
default) computes correctly. Register it per test module with ``get_catalog().register``.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, ClassVar

import numpy as np

from onnxplug.device import Allocator, DataTransfer, Device
from onnxplug.kernel import Kernel, KernelRegistry
from onnxplug.provider import ExecutionProvider

FAULTY_DEVICE = Device("faulty", 0)

#: raise after allocating its output; a wrong dimension; a wrong rank; float64; None; a list; a
#: host array instead of the device's; a scratch buffer kept and never freed
FAULTS = ("raise", "shape", "rank", "dtype", "none", "list", "host_array", "leak")


class FaultArray:
    """A buffer on the faulty device: a host array numpy kernels cannot read directly."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.dtype = data.dtype
        self.shape = data.shape
        self.ndim = data.ndim
        self.nbytes = data.nbytes


class TrackingAllocator(Allocator):
    """Counts live buffers (freed explicitly or when collected) and which thread allocated each."""

    device = FAULTY_DEVICE
    array_types = (FaultArray,)
    tracked = True

    def __init__(self) -> None:
        self.live = 0
        self.total = 0
        self._serial = itertools.count(1)
        self._owners: dict[int, tuple[int, int, weakref.ref]] = {}  # id -> (thread, serial, ref)
        self._finalizers: dict[int, weakref.finalize] = {}
        self._lock = threading.Lock()

    def alloc(self, shape, dtype) -> FaultArray:
        buffer = FaultArray(np.empty(shape, dtype))
        key = id(buffer)
        with self._lock:
            self.live += 1
            self.total += 1
            self._owners[key] = (threading.get_ident(), next(self._serial), weakref.ref(buffer))
            self._finalizers[key] = weakref.finalize(buffer, self._release, key)
        return buffer

    def _release(self, key: int) -> None:
        with self._lock:
            self.live -= 1
            self._owners.pop(key, None)
            self._finalizers.pop(key, None)

    def free(self, buffer) -> None:
        with self._lock:
            finalizer = self._finalizers.get(id(buffer))
        if finalizer is not None:
            finalizer()

    def allocation_mark(self) -> tuple[int, int]:
        """This thread and the last serial handed out."""
        with self._lock:
            return threading.get_ident(), next(self._serial)

    def allocated_since(self, mark: tuple[int, int]) -> list[FaultArray]:
        """Buffers this thread allocated after ``mark`` that are still live."""
        thread, serial = mark
        with self._lock:
            owners = list(self._owners.values())
        found = [ref() for t, s, ref in owners if t == thread and s > serial]
        return [b for b in found if b is not None]


class FaultyTransfer(DataTransfer):
    device = FAULTY_DEVICE

    def __init__(self, allocator: TrackingAllocator) -> None:
        self.allocator = allocator

    def to_device(self, array: np.ndarray) -> FaultArray:
        value = self.allocator.alloc(array.shape, array.dtype)
        value.data[...] = array
        return value

    def to_host(self, value: FaultArray) -> np.ndarray:
        if not isinstance(value, FaultArray):
            raise TypeError(f"to_host got a {type(value).__name__}")
        return value.data.copy()


REGISTRY = KernelRegistry("faulty")


class _FaultyUnary(Kernel):
    """Computes ``fn`` of its inputs correctly, or misbehaves as ``provider.fault`` says."""

    kept: list  # buffers a leaking kernel holds on to

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.provider = context.provider
        self.kept = []

    def fn(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute(self, *xs: FaultArray) -> Any:
        provider = self.provider
        provider.calls += 1
        fault = provider.fault
        result = np.asarray(self.fn(*(x.data for x in xs)))
        out = provider.allocator.alloc(result.shape, result.dtype)
        out.data[...] = result
        if fault is None:
            return out
        if fault == "raise":
            raise RuntimeError("injected fault")
        if fault == "shape":
            return provider.data_transfer.to_device(result[..., :-1])
        if fault == "rank":
            return provider.data_transfer.to_device(result.reshape(-1))
        if fault == "dtype":
            return provider.data_transfer.to_device(result.astype(np.float64))
        if fault == "none":
            return None
        if fault == "list":
            return [out]
        if fault == "host_array":
            return result
        if fault == "leak":
            self.kept.append(provider.allocator.alloc((64,), np.float32))
            return out
        raise ValueError(f"unknown fault {fault!r}")


@REGISTRY.kernel("Relu", 6, 13, 14)
class FaultyRelu(_FaultyUnary):
    def fn(self, x):
        return np.maximum(x, np.float32(0))


@REGISTRY.kernel("Sigmoid", 6, 13)
class FaultySigmoid(_FaultyUnary):
    def fn(self, x):
        return (1 / (1 + np.exp(-x))).astype(x.dtype)


@REGISTRY.kernel("Abs", 6, 13)
class FaultyAbs(_FaultyUnary):
    def fn(self, x):
        return np.abs(x)


@REGISTRY.kernel("Add", 7, 13, 14)
class FaultyAdd(_FaultyUnary):
    def fn(self, a, b):
        return a + b


class FaultyProvider(ExecutionProvider):
    """Claims the op types of option ``claim`` (comma-separated; float32 inputs) on the faulty device."""

    name: ClassVar[str] = "faulty"
    version: ClassVar[str] = "test"
    default_options: ClassVar[dict] = {"claim": "Relu"}

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.device = FAULTY_DEVICE
        self.allocator = TrackingAllocator()
        self.data_transfer = FaultyTransfer(self.allocator)
        self.kernel_registry = REGISTRY
        self.claimable = set(self.options["claim"].split(","))
        self.fault: str | None = None
        self.calls = 0

    def get_capability(self, view):
        claims = super().get_capability(view)
        return [c for c in claims if c.nodes[0].op_type in self.claimable
                and all(view.dtype_of(i) == np.float32 for i in c.nodes[0].inputs)]
