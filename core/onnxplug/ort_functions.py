"""onnxruntime's module-level functions about its build and its process-wide thread pools, and
its ``ExecutionOrder`` enum (values of ``SessionOptions.execution_order``).

They have little to do here: onnxplug has no collective ops, loads no CUDA libraries of its own,
and gives every session its own threads (``SessionOptions.intra_op_num_threads``), so the global
thread pools that ``set_global_thread_pool_sizes`` sizes are never used; the sizes are checked and
logged at verbose severity, as the rule for options that only tune onnxruntime's internals says.
"""

from __future__ import annotations

import enum
import operator
import platform
from typing import Any

from onnxplug import logs
from onnxplug.errors import OptionValueError
from onnxplug.version import __version__


class ExecutionOrder(enum.IntEnum):
    """onnxruntime's node orders for ``SessionOptions.execution_order``."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


def has_collective_ops() -> bool:
    """Whether the build has collective (multi-device communication) ops: onnxplug has none."""
    return False


def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None:
    """Accepted and logged: onnxruntime's global pools serve only sessions that share them
    (``use_per_session_threads=False``); every onnxplug session has its own threads."""
    for what, value in (("intra_op_num_threads", intra_op_num_threads), ("inter_op_num_threads", inter_op_num_threads)):
        try:
            if isinstance(value, bool) or operator.index(value) < 0:
                raise TypeError
        except TypeError:
            raise OptionValueError(f"set_global_thread_pool_sizes: {what} must be a non-negative integer, "
                                   f"not {value!r}") from None
    logs.get_logger("onnxplug.options").debug(
        "set_global_thread_pool_sizes(%s, %s) accepted: onnxplug sessions use their own threads "
        "(SessionOptions.intra_op_num_threads)", intra_op_num_threads, inter_op_num_threads)


def get_build_info() -> str:
    """What this runtime is built on: onnxplug's version, Python's, numpy's and onnx's."""
    import numpy
    import onnx

    return (f"onnxplug {__version__}, Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"onnx {onnx.__version__}")


def preload_dlls(cuda: bool = True, cudnn: bool = True, msvc: bool = True, directory: Any = None) -> None:
    """Accepted and logged: onnxplug loads no CUDA, cuDNN or MSVC libraries itself (the ``cupy``
    provider loads CUDA through CuPy)."""
    logs.get_logger("onnxplug.options").debug("preload_dlls accepted: onnxplug preloads no libraries")


def print_debug_info() -> None:
    """Print the runtime's version, the platform and each installed provider with its availability."""
    from onnxplug.plugins import get_catalog

    print(get_build_info())
    print("platform:", platform.platform())
    for name, cls in sorted(get_catalog().providers.items()):
        availability = cls.availability()
        print(f"provider {name}: {'available' if availability else 'not available: ' + availability.reason}")
