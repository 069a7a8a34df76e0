"""Bases of the OpenCL kernels: device-aware claiming, static types and constants, host mirrors.

Small integer tensors (shapes, axes, indices computed from ``Shape``) carry a *host mirror*: the
same values in a numpy array attached to the device array. Ops that read such values on the host
(Reshape's shape, Slice's starts, ...) use the mirror instead of a blocking device read, and shape
arithmetic on mirrored inputs runs on the host and uploads its small result.
"""

from __future__ import annotations

import contextvars
import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from onnxplug_sdk import Decline, GraphView, Kernel, KernelContext, Node
from onnxplug_sdk.helpers import untyped_reason

from onnxplug_opencl.engine.dtypes import C_TYPES, device_supports
from onnxplug_opencl.runtime.devices import DeviceEntry

if TYPE_CHECKING:
    from onnxplug_opencl.provider import OpenCLProvider
    from onnxplug_opencl.runtime.context import ClRuntime

#: The device of the provider currently claiming nodes (``supports`` is a classmethod without one).
CLAIMING_DEVICE: contextvars.ContextVar[DeviceEntry | None] = contextvars.ContextVar("claiming_device", default=None)
#: Tensors up to this many elements get a host mirror when they are made from host data.
MIRROR_LIMIT = 64
_MIRROR = "_onnxplug_host"


def claiming_device() -> DeviceEntry | None:
    """The device entry of the provider whose ``get_capability`` is running."""
    return CLAIMING_DEVICE.get()


def host_mirror(value: Any) -> np.ndarray | None:
    """The host copy attached to a device array, if any."""
    return getattr(value, _MIRROR, None)


def attach_mirror(value: Any, host: np.ndarray) -> Any:
    """Attach ``host`` (equal to ``value``'s contents) to ``value`` and return ``value``."""
    try:
        setattr(value, _MIRROR, host)
    except AttributeError:  # pragma: no cover - pyopencl arrays accept attributes
        pass
    return value


def dtypes_in(node: Node, view: GraphView, allowed: Any, names: Sequence[str] | None = None) -> bool | Decline:
    """True when every named value (default: the node's inputs and outputs) has an element type in
    ``allowed``, else the ``Decline`` naming the first that does not."""
    for n in [n for n in (names if names is not None else [*node.inputs, *node.outputs]) if n]:
        dtype = view.dtype_of(n)
        if dtype is None:
            return Decline("dtype", untyped_reason(view, n))
        if dtype not in allowed:
            kinds = ", ".join(sorted(np.dtype(t).name for t in allowed))
            return Decline("dtype", f"{n!r} is {dtype}; the {node.op_type} kernel computes in {kinds} only")
    return True


class ClKernel(Kernel):
    """A kernel of the OpenCL provider: claims a node only if the device holds all its element types."""

    #: Whether the node's tensors must all have known, device-supported element types.
    check_types: bool = True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.provider: OpenCLProvider = context.provider  # type: ignore[assignment]
        self.rt: ClRuntime = self.provider.runtime
        self.view: GraphView | None = self.provider.view_of(node)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        """Known, device-supported element types, then the op's own checks in :meth:`accepts`."""
        entry = claiming_device()
        if entry is None:
            return Decline("device", "asked outside the provider's claiming")
        if cls.check_types:
            for n in [n for n in [*node.inputs, *node.outputs] if n]:
                dtype = view.dtype_of(n)
                if dtype is None:
                    return Decline("dtype", untyped_reason(view, n))
                if dtype not in C_TYPES:
                    return Decline("dtype", f"{n!r} is {dtype}, which OpenCL C kernels have no type for")
                if not device_supports(entry, dtype):
                    extension = "cl_khr_fp16" if dtype == np.float16 else "cl_khr_fp64"
                    return Decline("device", f"{n!r} is {dtype}, and device {entry.name!r} lacks {extension}")
        try:
            verdict = cls.accepts(node, view, entry)
        except (TypeError, ValueError, KeyError) as exc:
            return Decline("attribute", f"{cls.__name__}.accepts failed: {exc}")
        return verdict or (verdict if isinstance(verdict, Decline) else
                           Decline("other", f"{cls.__name__} does not accept these attributes, shapes or constants"))

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        """Op-specific checks (attributes, ranks, constants); the default accepts."""
        return True

    # --- static information -----------------------------------------------------------------------

    def constant(self, index: int) -> np.ndarray | None:
        """The value of input ``index`` when it is a constant initializer, else None."""
        if index >= len(self.node.inputs) or not self.node.inputs[index] or self.view is None:
            return None
        return self.view.constant(self.node.inputs[index])

    def static_dtype(self, name: str) -> np.dtype | None:
        """The element type of a value as the graph declares or infers it."""
        return self.view.dtype_of(name) if self.view is not None and name else None

    def output_dtype(self, index: int = 0) -> np.dtype | None:
        """The static element type of output ``index``."""
        return self.static_dtype(self.node.outputs[index]) if index < len(self.node.outputs) else None

    # --- runtime helpers --------------------------------------------------------------------------

    def host_values(self, value: Any, index: int | None = None) -> np.ndarray:
        """A (small) input on the host: its constant value, its host mirror, or a device read."""
        if index is not None:
            found = self.constant(index)
            if found is not None:
                return found
        if isinstance(value, np.ndarray):
            return value
        mirror = host_mirror(value)
        if mirror is not None:
            return mirror
        return self.rt.to_host(value)

    def upload(self, host: np.ndarray) -> Any:
        """Copy a host result to the device, mirroring it when small."""
        out = self.rt.to_device(host)
        if host.size <= MIRROR_LIMIT:
            attach_mirror(out, np.array(host, copy=True))
        return out

    def empty(self, shape: Sequence[int], dtype: Any) -> Any:
        """A new pooled device array."""
        return self.rt.empty(tuple(int(d) for d in shape), dtype)


def mirrored(values: Sequence[Any]) -> list[np.ndarray] | None:
    """The host mirrors of all ``values`` (None entries pass), or None if one lacks a mirror."""
    found = []
    for v in values:
        if v is None:
            found.append(None)
            continue
        m = host_mirror(v)
        if m is None:
            return None
        found.append(m)
    return found


def normalize_axis(axis: int, rank: int, node: Node) -> int:
    """``axis`` in ``[0, rank)``; raises ValueError naming the node when out of range."""
    a = int(axis)
    if not -rank <= a < max(rank, 1):
        raise ValueError(f"{node.describe()}: axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def size_of(shape: Sequence[int]) -> int:
    """Number of elements of ``shape``."""
    return math.prod(int(d) for d in shape)
