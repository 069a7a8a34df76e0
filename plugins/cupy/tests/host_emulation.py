"""Host emulation of the cupy provider, for checking its logic on a machine without a GPU.

NOT a GPU test and never reported as one. The provider's kernels are array programs over
``backend.xp``; here ``xp`` is numpy, and the generated CUDA C kernels are compiled for the host
by g++ (a shim maps ``__global__``/``__device__`` away and runs the grid-stride loop as one
thread) and called through ctypes with the same argument lists the provider passes to CuPy.
What this checks: the ops' array programs and index arithmetic, the generated C expressions
and broadcasting/stride code, the claims, the plumbing between nodes. What it cannot check:
anything CUDA- or CuPy-specific at run time (NVRTC, launches, streams, the memory pool, cuBLAS,
CuPy/numpy API differences).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Iterator, Sequence

import numpy as np
from onnxplug_sdk import Availability

from onnxplug_cupy.provider import CupyProvider

SHIM = r"""
#include <math.h>
#include <string.h>
#define __global__
#define __device__
#define __forceinline__ inline
struct onnxplug_dim3 { unsigned int x, y, z; };
static const onnxplug_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline float __int_as_float(int v) { float f; memcpy(&f, &v, sizeof f); return f; }
static inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, sizeof d); return d; }
"""

_CTYPES = {np.dtype(np.int64): ctypes.c_longlong, np.dtype(np.int32): ctypes.c_int,
           np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
           np.dtype(np.bool_): ctypes.c_bool}
_CACHE = Path(os.environ.get("ONNXPLUG_CUPY_EMULATION_CACHE", Path(tempfile.gettempdir()) / "onnxplug-cupy-emulation"))
_lock = threading.Lock()
_libraries: dict[str, ctypes.CDLL] = {}


def compiler() -> str | None:
    """The host C++ compiler used for emulation, if installed."""
    return shutil.which("g++")


def compile_host(source: str) -> ctypes.CDLL:
    """Compile generated CUDA C as host C++ (cached by source) and load it."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    with _lock:
        if digest in _libraries:
            return _libraries[digest]
        _CACHE.mkdir(parents=True, exist_ok=True)
        library = _CACHE / f"k_{digest}.so"
        if not library.exists():
            src = _CACHE / f"k_{digest}.cpp"
            src.write_text(SHIM + source)
            tmp = _CACHE / f"k_{digest}.{os.getpid()}.so"
            result = subprocess.run([compiler() or "g++", "-std=c++17", "-O1", "-shared", "-fPIC",
                                     "-fno-fast-math", "-o", str(tmp), str(src)],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"g++ rejected the generated kernel:\n{result.stderr}\n--- source ---\n{source}")
            os.replace(tmp, library)
        _libraries[digest] = ctypes.CDLL(str(library))
        return _libraries[digest]


class EmulatedDeviceArray(np.ndarray):
    """A "device" array of the emulation. Like CuPy, it refuses to be mixed with host numpy arrays
    in ufuncs and array functions (numpy scalars and Python numbers are fine), so kernel code that
    would pass a host array to CuPy fails here too."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _refuse_host(inputs + tuple(kwargs.get("out", ())), f"np.{ufunc.__name__}")
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return _device(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        _refuse_host(tuple(args) + tuple(kwargs.values()), f"np.{func.__name__}")
        return _device(func(*_plain(args), **_plain(kwargs)))


def _refuse_host(values: Sequence[Any], where: str) -> None:
    for value in values:
        if type(value) is np.ndarray:
            raise TypeError(f"{where}: a host numpy array was mixed with device arrays (CuPy raises here)")
        if isinstance(value, (list, tuple)):
            _refuse_host(value, where)


def _plain(value: Any) -> Any:
    if isinstance(value, EmulatedDeviceArray):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _device(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.view(EmulatedDeviceArray)
    if isinstance(value, np.generic):  # CuPy reductions give 0-d arrays, not scalars
        return np.asarray(value).view(EmulatedDeviceArray)
    if isinstance(value, (list, tuple)):
        return type(value)(_device(v) for v in value)
    return value


class _StrideTricks:
    @staticmethod
    def as_strided(x: Any, shape: Any = None, strides: Any = None) -> Any:
        return _device(np.lib.stride_tricks.as_strided(_plain(x), shape=shape, strides=strides))


class _Lib:
    stride_tricks = _StrideTricks


class StrictNumpy:
    """``xp`` of the emulation: numpy's functions, whose array results are device arrays; host
    arrays pass in only through ``asarray``/``array`` (an upload, as with CuPy)."""

    ndarray = EmulatedDeviceArray
    lib = _Lib

    def __getattr__(self, name: str) -> Any:
        found = getattr(np, name)
        if not callable(found) or isinstance(found, type):
            return found
        uploads = name in ("asarray", "array", "ascontiguousarray")

        def call(*args: Any, **kwargs: Any) -> Any:
            if not uploads:
                _refuse_host(tuple(args) + tuple(kwargs.values()), f"xp.{name}")
            return _device(found(*_plain(args), **_plain(kwargs)))
        return call


class HostBackend:
    """The backend interface of :class:`onnxplug_cupy.runtime.backend.CudaBackend`, on the host."""

    xp = StrictNumpy()
    array_types = (EmulatedDeviceArray,)

    def __init__(self) -> None:
        self.launches = 0

    @contextmanager
    def scope(self) -> Iterator[None]:
        yield

    def synchronize(self) -> None:
        pass

    def empty(self, shape: Sequence[int], dtype: np.dtype) -> Any:
        return np.empty(tuple(shape), dtype=dtype).view(EmulatedDeviceArray)

    def to_device(self, host: np.ndarray) -> Any:
        return np.array(host, copy=True).view(EmulatedDeviceArray)

    def to_host(self, value: Any) -> np.ndarray:
        if type(value) is np.ndarray:
            return value
        return np.array(_plain(value), copy=True)

    def adopt(self, value: Any) -> Any | None:
        return value if isinstance(value, EmulatedDeviceArray) else None

    def compile(self, source: str, names: Sequence[str], label: str) -> dict[str, Any]:
        library = compile_host(source)
        kernels = {}
        for name in names:
            fn = getattr(library, name)
            fn.restype = None
            kernels[name] = fn
        return kernels

    def launch(self, kernel: Any, n: int, args: Sequence[Any]) -> None:
        converted = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                converted.append(ctypes.c_void_p(arg.ctypes.data))
            elif isinstance(arg, np.generic) and arg.dtype in _CTYPES:
                converted.append(_CTYPES[arg.dtype](arg.item()))
            else:  # CuPy would pass a Python scalar with a guessed C type: refuse, as a bug
                raise TypeError(f"kernel argument {arg!r} ({type(arg).__name__}) must be an array or a "
                                "numpy scalar of the exact C type")
        self.launches += 1
        kernel(*converted)


class EmulatedCupyProvider(CupyProvider):
    """The cupy provider with :class:`HostBackend`: same claims, kernels and generated C."""

    name: ClassVar[str] = "cupy_host_emulation"
    aliases: ClassVar[tuple[str, ...]] = ()
    ops_package: ClassVar[str] = ""

    def make_backend(self) -> HostBackend:
        return HostBackend()

    @classmethod
    def availability(cls) -> Availability:
        if compiler() is None:
            return Availability(False, "host emulation needs g++ to compile the generated kernels")
        return Availability(True)

    @classmethod
    def devices(cls) -> list[str]:
        return ["host emulation (numpy + generated CUDA C compiled by g++); not a GPU"]
