"""The core's Allocator and DataTransfer over pooled pyopencl arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Allocator, DataTransfer

from onnxplug_opencl.runtime.context import ClRuntime


class OpenCLAllocator(Allocator):
    """Hands out ``pyopencl.array.Array`` values whose buffers come from the runtime's memory pool.

    ``array_types`` declares that class, so the executor checks every kernel output of the provider
    is one (a host array or anything else returned by a kernel is a KernelError naming the node)."""

    def __init__(self, runtime: ClRuntime) -> None:
        import pyopencl.array as cla

        self.runtime = runtime
        self.device = runtime.device
        self.array_types = (cla.Array,)

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """An uninitialised device array."""
        return self.runtime.empty(shape, dtype)

    def free(self, buffer: Any) -> None:
        """Return the array's buffer to the pool now instead of at garbage collection."""
        base = getattr(buffer, "base_data", None)
        if base is not None and hasattr(base, "release") and getattr(buffer, "offset", 0) == 0:
            base.release()


class OpenCLTransfer(DataTransfer):
    """Copies between host numpy arrays and device arrays of one runtime.

    Besides the core's two methods it offers the optional ones IOBinding looks for: ``adopt``,
    ``from_pointer``, ``copy_into`` and ``synchronize``.
    """

    def __init__(self, runtime: ClRuntime) -> None:
        self.runtime = runtime
        self.device = runtime.device

    def to_device(self, array: np.ndarray) -> Any:
        """Upload a host array."""
        return self.runtime.to_device(np.asarray(array))

    def to_host(self, value: Any) -> np.ndarray:
        """Download a device array."""
        return self.runtime.to_host(value)

    def adopt(self, value: Any) -> Any | None:
        """``value`` itself when it is a C-contiguous pyopencl array of this context, else None.
        (One in-order queue per context orders its producer's work before ours.)"""
        import pyopencl.array as cla

        if not isinstance(value, cla.Array) or value.context != self.runtime.context:
            return None
        if not value.flags.c_contiguous:
            return None
        if value.queue is not None and value.queue != self.runtime.queue:
            value.queue.finish()  # another queue of the same context: its writes must land first
        return value

    def from_pointer(self, pointer: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """Wrap a ``cl_mem`` handle (an OpenCL buffer of this context) as a device array."""
        import pyopencl as cl
        import pyopencl.array as cla

        buffer = cl.Buffer.from_int_ptr(int(pointer), retain=True)
        return cla.Array(self.runtime.queue, shape, np.dtype(dtype), data=buffer)

    def copy_into(self, target: Any, value: Any) -> None:
        """Copy device array ``value`` into the bound device array ``target``."""
        import pyopencl as cl

        if tuple(target.shape) != tuple(value.shape) or target.dtype != value.dtype:
            raise ValueError(f"cannot copy a {value.dtype}{list(value.shape)} result into a bound "
                             f"{target.dtype}{list(target.shape)} buffer")
        if value.nbytes:
            cl.enqueue_copy(self.runtime.queue, target.base_data, value.base_data, byte_count=value.nbytes,
                            src_offset=value.offset, dst_offset=target.offset)

    def synchronize(self) -> None:
        """Wait until the device finished the work queued so far."""
        self.runtime.queue.finish()
