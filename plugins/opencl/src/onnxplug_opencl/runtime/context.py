"""One OpenCL context, in-order queue, pooled allocator and program cache per device, per process.

Sessions that pick the same device share its runtime, so device arrays one session returns can be
fed to the next without a host round trip.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from onnxplug_sdk import Device

from onnxplug_opencl.errors import DeviceValueError, OpenCLBuildError
from onnxplug_opencl.runtime.devices import DeviceEntry
from onnxplug_opencl.runtime.programs import ProgramCache

SYNC_ENV = "ONNXPLUG_OPENCL_SYNC"
PROFILE_ENV = "ONNXPLUG_OPENCL_PROFILE"
_runtimes: dict[int, ClRuntime] = {}
_lock = threading.Lock()


class ClRuntime:
    """Context, queue, memory pool and compiled programs of one OpenCL device."""

    def __init__(self, entry: DeviceEntry) -> None:
        import pyopencl as cl
        import pyopencl.tools as cl_tools

        self.entry = entry
        self.cl_device = cl.get_platforms()[entry.platform_index].get_devices()[entry.device_index]
        self.context = cl.Context([self.cl_device])
        #: ONNXPLUG_OPENCL_PROFILE=1: an event per launch is kept in ``launches`` (see runtime/profiling.py),
        #: so device time can be attributed per kernel; the queue then needs profiling enabled.
        self.profiling = os.environ.get(PROFILE_ENV, "") == "1"
        properties = cl.command_queue_properties.PROFILING_ENABLE if self.profiling else 0
        self.queue = cl.CommandQueue(self.context, properties=properties)
        self.launches: list[tuple[str, Any]] = []
        #: Buffers come from a pool: a freed buffer is reused by the next allocation of its size class.
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        self.programs = ProgramCache(self.context, self.cl_device)
        self.device = Device("opencl", entry.index)
        #: cl.Kernel objects hold their arguments, so setting them and enqueueing is one critical section.
        self.launch_lock = threading.RLock()
        #: ONNXPLUG_OPENCL_SYNC=1 waits for every kernel, so profiles attribute time to the right node.
        self.synchronous = os.environ.get(SYNC_ENV, "") == "1"
        self._compile_checked = False
        self._compile_problem: str | None = None

    def compile_problem(self) -> str | None:
        """Why this device cannot run kernels, or None when it can: a trivial kernel is built and run
        once per runtime. (PoCL 3.0, which pyopencl's wheels bundle, cannot build for CPUs its LLVM 14
        does not know, such as AMD Zen 5.)"""
        with _lock:
            if not self._compile_checked:
                self._compile_problem = self._check_compiles()
                self._compile_checked = True
            return self._compile_problem

    def _check_compiles(self) -> str | None:
        import pyopencl as cl

        source = "__kernel void probe(__global float* x) { const int i = get_global_id(0); x[i] = 2 * x[i] + 1; }"
        try:
            kernel = self.programs.kernel("probe", source, "probe")
            host = np.arange(8, dtype=np.float32)
            buffer = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
            kernel(self.queue, (8,), None, buffer)
            got = np.empty_like(host)
            cl.enqueue_copy(self.queue, got, buffer)
            self.queue.finish()
        except (cl.Error, OpenCLBuildError) as e:
            return f"OpenCL device {self.entry.name!r} ({self.entry.platform_name}) cannot run kernels: {e}"
        if not np.array_equal(got, 2 * host + 1):
            return f"OpenCL device {self.entry.name!r} ({self.entry.platform_name}) computed a test kernel wrongly"
        return None

    @classmethod
    def for_entry(cls, entry: DeviceEntry) -> ClRuntime:
        """The process-wide runtime of ``entry``'s device, created on first use."""
        with _lock:
            runtime = _runtimes.get(entry.index)
            if runtime is None:
                runtime = _runtimes[entry.index] = cls(entry)
            return runtime

    # --- arrays ---------------------------------------------------------------------------------

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """An uninitialised pooled device array."""
        import pyopencl.array as cla

        return cla.empty(self.queue, tuple(int(d) for d in shape), np.dtype(dtype), allocator=self.pool)

    def to_device(self, array: np.ndarray) -> Any:
        """Copy a host array to a new pooled device array (blocking, so ``array`` may change after)."""
        import pyopencl.array as cla

        host = array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)
        if host.dtype == object or host.dtype.kind in "USV":
            raise DeviceValueError(f"OpenCL device {self.entry.name!r} cannot hold a tensor of dtype "
                                   f"{host.dtype}")
        out = cla.empty(self.queue, host.shape, host.dtype, allocator=self.pool)
        if host.size:
            out.set(host)
        return out

    def to_host(self, value: Any) -> np.ndarray:
        """Copy a device array back to a new host array (host arrays pass through)."""
        if isinstance(value, np.ndarray):
            return value
        self.check_array(value)
        if math.prod(value.shape) == 0:
            return np.empty(value.shape, value.dtype)
        return value.get(queue=self.queue)

    def check_array(self, value: Any) -> None:
        """Raise :class:`DeviceValueError` unless ``value`` is a pyopencl array of this context."""
        import pyopencl.array as cla

        if not isinstance(value, cla.Array):
            raise DeviceValueError(f"expected a pyopencl array on OpenCL device {self.entry.name!r}, "
                                   f"got {type(value).__name__}")
        if value.context != self.context:
            raise DeviceValueError(f"a pyopencl array of another OpenCL context was given to the provider "
                                   f"running on {self.entry.name!r}; create it with "
                                   "onnxplug_opencl.runtime_for(session) or copy it to the host first")

    def launch(self, kernel: Any, global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
               *args: Any, label: str = "") -> None:
        """Set the arguments and enqueue ``kernel`` (no-op for an empty range). ``label`` names
        the launch in profiles (the kernel name and global size when empty)."""
        import pyopencl as cl

        if any(g == 0 for g in global_size):
            return
        with self.launch_lock:
            kernel.set_args(*args)
            event = cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local_size)
        if self.profiling:
            self.launches.append((label or f"{kernel.function_name} {list(global_size)}", event))
        if self.synchronous:
            self.queue.finish()
