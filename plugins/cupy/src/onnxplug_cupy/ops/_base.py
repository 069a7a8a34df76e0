"""The base of the provider's kernels and the dtype checks their ``supports`` share.

A kernel's ``run`` is an array program over ``self.xp`` (CuPy), entered through ``compute``, which
makes the provider's device, memory pool and this thread's stream current. Inputs that are
shapes, axes or sizes are read from the graph's constants at session creation when they are
constants, and copied to the host (a small synchronising copy) only when they are computed.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np
from onnxplug_sdk import GraphView, Kernel, KernelContext, Node, errors

FLOAT = frozenset({np.dtype(t) for t in (np.float16, np.float32, np.float64)})
FLOAT_NO_HALF = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
INTEGER = frozenset({np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                            np.uint8, np.uint16, np.uint32, np.uint64)})
NUMERIC = FLOAT | INTEGER
#: Every element type a CuPy array can hold that ONNX has (no strings, bfloat16 or float8).
PLAIN = NUMERIC | {np.dtype(np.bool_)}
INDEX = frozenset({np.dtype(np.int32), np.dtype(np.int64)})


class CupyKernel(Kernel):
    """A kernel running an array program on the provider's CUDA device."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        provider = context.provider
        self.backend: Any = provider.backend  # type: ignore[attr-defined]
        view = provider.view_of(node)  # type: ignore[attr-defined]
        if view is None:
            raise errors.PartitionError(f"provider 'cupy' was asked for a kernel of {node.describe()}, "
                                        "which it never claimed")
        self.view: GraphView = view
        self.setup()

    @property
    def xp(self) -> Any:
        """The array module of the device (``cupy``)."""
        return self.backend.xp

    def setup(self) -> None:
        """Work done once at session creation (compiling kernels, reading constants)."""

    def compute(self, *inputs: Any) -> Any:
        with self.backend.scope():
            result = self.run(*inputs)
            if isinstance(result, tuple):
                return tuple(self._array(r) for r in result)
            return self._array(result)

    def _array(self, value: Any) -> Any:
        """Results as device arrays (a reduction to a scalar may hand back a bare scalar)."""
        xp = self.xp
        return value if value is None or isinstance(value, xp.ndarray) else xp.asarray(value)

    def run(self, *inputs: Any) -> Any:
        """The array program; inputs and outputs are device arrays."""
        raise NotImplementedError(f"{type(self).__name__}.run")

    # --- inputs that are shapes, axes, sizes ------------------------------------------------------

    def constant(self, index: int) -> np.ndarray | None:
        """Input ``index`` when it is a graph constant (initializer or Constant node), else None."""
        name = self.node.inputs[index] if index < len(self.node.inputs) else ""
        return constant_of(self.view, name)

    def host_input(self, index: int, value: Any) -> np.ndarray | None:
        """Input ``index`` on the host: its constant if it is one, else a copy of the device value."""
        if value is None:
            return None
        found = self.constant(index)
        if found is not None:
            return found
        return self.backend.to_host(value)

    def host_ints(self, index: int, value: Any) -> list[int] | None:
        """An int tensor input as a Python list (None when omitted)."""
        host = self.host_input(index, value)
        return None if host is None else [int(v) for v in np.asarray(host).reshape(-1)]


def constant_of(view: GraphView, name: str) -> np.ndarray | None:
    """The value of ``name`` when it is an initializer or the output of a Constant node with ``value``."""
    if not name:
        return None
    value = view.constant(name)
    if value is None:
        producer = view.producer(name)
        if producer is not None and producer.op_type == "Constant" and producer.attr("value") is not None:
            value = producer.attr("value")
    return None if value is None else np.asarray(value)


def dtypes_in(view: GraphView, names: Iterable[str], allowed: frozenset[np.dtype]) -> bool:
    """Whether every named (non-omitted) value has a known dtype in ``allowed``."""
    return all(view.dtype_of(n) in allowed for n in names if n)


def same_dtype(view: GraphView, node: Node, allowed: frozenset[np.dtype],
               inputs: Iterable[int] | None = None) -> bool:
    """The chosen inputs (default: all) and every output share one known dtype from ``allowed``."""
    picked = [node.inputs[i] for i in inputs if i < len(node.inputs)] if inputs is not None else node.inputs
    found = {view.dtype_of(n) for n in [*picked, *node.outputs] if n}
    return len(found) == 1 and next(iter(found)) in allowed


def register_all(decorator: Callable[..., Callable[[type], type]], ops: Iterable[str], cls: type,
                 **kwargs: Any) -> None:
    """Register ``cls`` for every op type of ``ops``."""
    for op in ops:
        decorator(op, **kwargs)(cls)


def normalize_axis(axis: int, rank: int, node: Node) -> int:
    """``axis`` in ``[0, rank)``; a typed error naming the node otherwise."""
    if not -rank <= axis < max(rank, 1):
        raise errors.KernelError(f"{node.describe()}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
