"""The device side of the provider: CuPy on one CUDA device, its memory pool, per-thread streams,
and kernels compiled from generated CUDA C with NVRTC (``cupy.RawModule``).

Kernels never import CuPy themselves: they use ``backend.xp`` (the array module), ``backend.scope()``
(device, pool and stream made current) and ``backend.compile`` / ``backend.launch``. That keeps the
kernels' array programs independent of how the device is reached.

Streams: each thread that runs a session gets its own non-blocking stream per provider, so a run
is ordered on one stream and concurrent runs in other threads do not serialise on the default
stream. Results reach the host through ``to_host``, which copies on that stream and blocks until
the stream has finished everything before the copy.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np
from onnxplug_sdk import errors

from onnxplug_cupy.options import CupyOptionError
from onnxplug_cupy.runtime.probe import import_cupy

#: Threads per block of the generated grid-stride kernels.
BLOCK = 256
#: Upper bound on blocks per launch; grid-stride loops cover the rest.
MAX_BLOCKS = 65535
#: kDLCUDA and kDLCUDAManaged in DLPack's device enumeration.
_DLPACK_CUDA = (2, 13)


class CupyUnavailableError(errors.ProviderUnavailableError):
    """CuPy cannot be imported or cannot reach a CUDA device; the message quotes CuPy's reason."""


class KernelCompileError(errors.OnnxplugError, RuntimeError):
    """NVRTC refused a generated kernel; the message names the kernel and carries the compiler log."""


class ForeignValueError(errors.OnnxplugError, ValueError):
    """A value handed to the provider is not a tensor on its CUDA device."""


def launch_shape(n: int) -> tuple[int, int]:
    """(blocks, threads per block) for a grid-stride loop over ``n`` elements."""
    return max(1, min(MAX_BLOCKS, -(-n // BLOCK))), BLOCK


class CudaBackend:
    """CuPy on CUDA device ``device_id``; allocations come from CuPy's memory pool.

    With ``mem_limit`` > 0 the provider gets its own ``cupy.cuda.MemoryPool`` limited to that many
    bytes; otherwise it shares CuPy's default pool (and so its cache) with the user's CuPy code.
    Nothing touches the GPU until the first kernel is compiled or value is moved.
    """

    def __init__(self, device_id: int = 0, mem_limit: int = 0) -> None:
        self.device_id = device_id
        self.mem_limit = mem_limit
        self._cupy: Any = None
        self._pool: Any = None
        self._local = threading.local()
        self._lock = threading.Lock()

    # --- CuPy, the device, the pool, the stream -------------------------------------------------------

    @property
    def xp(self) -> Any:
        """The array module (``cupy``)."""
        if self._cupy is None:
            cupy, reason = import_cupy()
            if cupy is None:
                raise CupyUnavailableError(f"provider 'cupy' is not available: {reason}")
            try:
                count = int(cupy.cuda.runtime.getDeviceCount())
            except Exception as e:
                raise CupyUnavailableError(f"provider 'cupy' is not available: CuPy {cupy.__version__} "
                                           f"cannot use CUDA: {e}") from e
            if self.device_id >= count:
                raise CupyOptionError(f"provider 'cupy' option 'device_id' is {self.device_id}, but CuPy sees "
                                      f"{count} CUDA device(s) (numbered from 0, after CUDA_VISIBLE_DEVICES)")
            self._cupy = cupy
        return self._cupy

    @property
    def pool(self) -> Any:
        """The ``cupy.cuda.MemoryPool`` every allocation of this provider comes from."""
        if self._pool is None:
            cp = self.xp
            with self._lock:
                if self._pool is None:
                    if self.mem_limit > 0:
                        pool = cp.cuda.MemoryPool()
                        with cp.cuda.Device(self.device_id):
                            pool.set_limit(size=self.mem_limit)
                        self._pool = pool
                    else:
                        self._pool = cp.get_default_memory_pool()
        return self._pool

    def stream(self) -> Any:
        """This thread's stream on the device (created on first use)."""
        stream = getattr(self._local, "stream", None)
        if stream is None:
            cp = self.xp
            with cp.cuda.Device(self.device_id):
                stream = cp.cuda.Stream(non_blocking=True)
            self._local.stream = stream
        return stream

    @contextmanager
    def scope(self) -> Iterator[None]:
        """Make the device current, allocate from the pool and launch on this thread's stream."""
        cp = self.xp
        pool = self.pool
        with cp.cuda.Device(self.device_id):
            with self.stream():
                with cp.cuda.using_allocator(pool.malloc):
                    yield

    def synchronize(self) -> None:
        """Wait for everything this thread launched."""
        self.stream().synchronize()

    # --- values -------------------------------------------------------------------------------

    @property
    def array_types(self) -> tuple[type, ...]:
        """``(cupy.ndarray,)``, the class of this backend's values; empty where CuPy cannot be
        imported (no session then runs the provider). Importing CuPy touches no device."""
        cupy, _ = import_cupy()
        return () if cupy is None else (cupy.ndarray,)

    def empty(self, shape: Sequence[int], dtype: np.dtype) -> Any:
        """An uninitialised device array from the pool."""
        with self.scope():
            return self.xp.empty(tuple(int(d) for d in shape), dtype=np.dtype(dtype))

    def to_device(self, host: np.ndarray) -> Any:
        """Copy a host array to the device. Synchronises, so a value uploaded in one thread (session
        constants) can be read on any other thread's stream."""
        host = np.asarray(host)
        if host.dtype.hasobject:
            raise ForeignValueError(f"cannot place a {host.dtype} (object/string) array on cuda:{self.device_id}")
        with self.scope():
            value = self.xp.asarray(host)
            self.synchronize()
        return value

    def to_host(self, value: Any) -> np.ndarray:
        """Copy a device value to a new host array, after everything queued before it finished."""
        if isinstance(value, np.ndarray):
            return value
        array = self.adopt(value)
        if array is None:
            raise ForeignValueError(f"provider 'cupy' cannot read a {type(value).__name__} as a tensor "
                                    f"on cuda:{self.device_id}")
        with self.scope():
            return array.get()  # blocking copy on this thread's stream

    def adopt(self, value: Any) -> Any | None:
        """``value`` as a ``cupy.ndarray`` on this device without copying, or None when it is not a
        CUDA tensor: a CuPy array, or anything with ``__cuda_array_interface__`` or CUDA DLPack."""
        cp = self.xp
        if isinstance(value, cp.ndarray):
            array = value
            self._after_callers_stream()
        elif hasattr(value, "__cuda_array_interface__"):
            with cp.cuda.Device(self.device_id):
                array = cp.asarray(value)  # zero-copy; orders the producer's stream (CAI v3)
            self._after_callers_stream()
        elif hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
            kind, _ = value.__dlpack_device__()
            if int(kind) not in _DLPACK_CUDA:
                return None
            with cp.cuda.Device(self.device_id), self.stream():
                array = cp.from_dlpack(value)  # the producer orders its work before our stream
        else:
            return None
        if array.device.id != self.device_id:
            raise ForeignValueError(f"provider 'cupy' runs on cuda:{self.device_id}, but the value lives on "
                                    f"cuda:{array.device.id}")
        return array

    def _after_callers_stream(self) -> None:
        """Make this thread's stream wait (on the GPU) for what the caller queued on its current
        stream, which may have produced the value being adopted."""
        cp = self.xp
        with cp.cuda.Device(self.device_id):
            caller = cp.cuda.get_current_stream()
            ours = self.stream()
            if caller.ptr != ours.ptr:
                ours.wait_event(caller.record())

    def from_pointer(self, pointer: int, shape: Sequence[int], dtype: np.dtype) -> Any:
        """A ``cupy.ndarray`` over raw device memory the caller owns (no copy, not freed by us)."""
        cp = self.xp
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        with cp.cuda.Device(self.device_id):
            memory = cp.cuda.UnownedMemory(int(pointer), nbytes, owner=None, device_id=self.device_id)
            array = cp.ndarray(tuple(shape), dtype=dtype, memptr=cp.cuda.MemoryPointer(memory, 0))
        self._after_callers_stream()
        return array

    def copy_into(self, target: Any, value: Any) -> None:
        """Copy a device value into a bound device buffer of the same shape, on this thread's stream."""
        if tuple(target.shape) != tuple(value.shape) or target.dtype != value.dtype:
            raise ForeignValueError(f"cannot copy a {value.dtype} {list(value.shape)} result into a bound "
                                    f"{target.dtype} {list(target.shape)} buffer")
        with self.scope():
            self.xp.copyto(target, value)

    # --- kernels ------------------------------------------------------------------------------

    def compile(self, source: str, names: Sequence[str], label: str) -> dict[str, Any]:
        """Compile ``source`` with NVRTC now (not at first launch) and return its kernels by name.
        Modules are cached per source, and CuPy keeps the binaries on disk across processes."""
        cp = self.xp
        key = (self.device_id, source)
        with self._lock:
            module = _MODULES.get(key)
            if module is None:
                module = cp.RawModule(code=source)  # CuPy compiles as C++17 with -ftz=true
                try:
                    with cp.cuda.Device(self.device_id):
                        module.compile()
                except cp.cuda.compiler.CompileException as e:
                    raise KernelCompileError(f"{label}: NVRTC failed to compile the generated kernel: "
                                             f"{e}\n--- source ---\n{source}") from e
                _MODULES[key] = module
        with cp.cuda.Device(self.device_id):
            return {name: module.get_function(name) for name in names}

    def launch(self, kernel: Any, n: int, args: Sequence[Any]) -> None:
        """Launch a grid-stride kernel over ``n`` elements on this thread's stream (inside ``scope``)."""
        grid, block = launch_shape(n)
        kernel((grid,), (block,), tuple(args))


_MODULES: dict[tuple[int, str], Any] = {}
