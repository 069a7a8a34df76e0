"""The allocation limit: a node that would allocate more than ``session.onnxplug.max_allocation_bytes``
fails with :class:`~onnxplug.errors.AllocationLimitError` before anything is allocated.

The limit defaults to half of physical memory (``os.sysconf``: ``SC_PHYS_PAGES`` x
``SC_PAGE_SIZE``); ``0`` turns the check off. Only nodes that can ask for far more memory than
their inputs hold get a check (a guard the plan calls before the kernel, on any provider): Expand,
ConstantOfShape, Tile, Resize, Upsample, Range, Pad (output size from the input values), Loop
(trip count x scan-output bytes per iteration, when both are known before it runs), and any node
whose outputs' static shapes already exceed the limit. Loop scan outputs are also counted as they
grow (:class:`ScanCheck`, which a Loop body's plan hands to the Loop's kernel). Other nodes cost nothing.
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from onnxplug.errors import AllocationLimitError, OptionValueError
from onnxplug.ir import Graph, Node

#: the session config entry setting the limit in bytes (``0``: no limit)
CONFIG_KEY = "session.onnxplug.max_allocation_bytes"

#: the op kinds whose output size is computed from their inputs before they run
SIZED_OPS = ("Expand", "ConstantOfShape", "Tile", "Resize", "Upsample", "Range", "Pad", "Loop")


def default_limit() -> int:
    """Half of physical memory, or 0 (no limit) where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 0


def parse_limit(text: str) -> int:
    """The limit a config value sets: a non-negative integer of bytes."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise OptionValueError(f"session config entry {CONFIG_KEY!r} takes a number of bytes (an integer "
                               f"from 0 up, 0 for no limit), not {text!r}")
    return value


def limit_of(config: Mapping[str, str]) -> int:
    """The limit of a session's config entries (the default when not set)."""
    text = config.get(CONFIG_KEY)
    return default_limit() if text is None else parse_limit(text)


def _size(nbytes: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def refuse(source: str, node: Node, what: str, nbytes: int, limit: int) -> AllocationLimitError:
    """The error for ``node`` asking for ``nbytes`` (``what``: the shape and type asked for)."""
    return AllocationLimitError(
        f"model {source}: {node.describe()} would allocate {what}: {nbytes} bytes ({_size(nbytes)}), over the "
        f"limit of {limit} bytes ({_size(limit)}) ({CONFIG_KEY})")


def _ints(value: Any) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1).tolist()]


def _itemsize(dtype: Any) -> int:
    try:
        return max(np.dtype(dtype).itemsize, 1)
    except TypeError:
        return 8


# --- output shapes from input values: (node, inputs as host arrays or shapes) -> (shape, dtype) or None
# (None: the inputs are malformed; the kernel reports that)

def _expand(node: Node, v: _Inputs) -> Any:
    dims, shape = _ints(v.value(1)), v.shape(0)
    if any(d < 0 for d in dims):
        return None
    rank = max(len(dims), len(shape))
    a, b = [1] * (rank - len(shape)) + list(shape), [1] * (rank - len(dims)) + dims
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        return None
    return [max(x, y) if 0 not in (x, y) else 0 for x, y in zip(a, b)], v.dtype(0)


def _constant_of_shape(node: Node, v: _Inputs) -> Any:
    value = node.attr("value")
    dtype = np.asarray(value).dtype if value is not None else np.dtype(np.float32)
    return _ints(v.value(0)), dtype


def _tile(node: Node, v: _Inputs) -> Any:
    reps, shape = _ints(v.value(1)), v.shape(0)
    if len(reps) != len(shape):
        return None
    return [d * r for d, r in zip(shape, reps)], v.dtype(0)


def _resize(node: Node, v: _Inputs) -> Any:
    shape = list(v.shape(0))
    if node.op_type == "Upsample":
        scales = node.attr("scales") if node.opset < 9 else _floats(v.value(1))
        sizes = None
    elif node.opset < 11:
        scales, sizes = _floats(v.value(1)), None
    else:
        scales, sizes = _floats(v.value(2)), v.value(3)
        sizes = _ints(sizes) if sizes is not None and np.asarray(sizes).size else None
    axes = [a % len(shape) for a in node.attr("axes", None) or range(len(shape))] if shape else []
    out = list(shape)
    if sizes is not None:
        if len(sizes) != len(axes):
            return None
        policy = node.attr("keep_aspect_ratio_policy", b"stretch")
        policy = policy.decode() if isinstance(policy, bytes) else str(policy)
        if policy != "stretch" and all(shape[a] for a in axes):
            ratios = [s / shape[a] for s, a in zip(sizes, axes)]
            scale = max(ratios) if policy == "not_smaller" else min(ratios)
            sizes = [int(shape[a] * scale + 0.5) for a in axes]
        for a, s in zip(axes, sizes):
            out[a] = s
    elif scales:
        if len(scales) != len(axes) or any(not math.isfinite(s) or s < 0 for s in scales):
            return None
        for a, s in zip(axes, scales):
            out[a] = math.floor(shape[a] * s)
    return out, v.dtype(0)


def _floats(value: Any) -> list[float]:
    return [] if value is None else [float(s) for s in np.asarray(value).reshape(-1)]


def _range(node: Node, v: _Inputs) -> Any:
    start, limit, delta = (np.asarray(v.value(i)).reshape(-1) for i in range(3))
    if start.size != 1 or limit.size != 1 or delta.size != 1:
        return None
    s, lim, d = start[0].item(), limit[0].item(), delta[0].item()
    if d == 0 or not all(math.isfinite(x) for x in (s, lim, d)):
        return None
    return [max(math.ceil((lim - s) / d), 0)], start.dtype


def _pad(node: Node, v: _Inputs) -> Any:
    shape = list(v.shape(0))
    pads = _ints(node.attr("pads", []) if node.opset < 11 else v.value(1))
    axes_value = v.value(3) if node.opset >= 18 else None
    axes = [a % len(shape) for a in _ints(axes_value)] if axes_value is not None and shape else range(len(shape))
    axes = list(axes)
    if len(pads) != 2 * len(axes):
        return None
    out = list(shape)
    for k, a in enumerate(axes):
        out[a] = max(shape[a] + pads[k] + pads[k + len(axes)], 0)
    return out, v.dtype(0)


_SHAPES: dict[str, Callable[[Node, _Inputs], Any]] = {
    "Expand": _expand, "ConstantOfShape": _constant_of_shape, "Tile": _tile, "Resize": _resize,
    "Upsample": _resize, "Range": _range, "Pad": _pad}


class _Inputs:
    """A step's inputs as the shape functions read them: values on the host (small tensors: shapes,
    repeats, scales), shapes and dtypes of the others."""

    def __init__(self, args: tuple, constants: Mapping[int, np.ndarray], to_host: Callable[[Any], Any] | None):
        self.args, self.constants, self.to_host = args, constants, to_host

    def value(self, i: int) -> Any:
        if i in self.constants:
            return self.constants[i]
        value = self.args[i] if i < len(self.args) else None
        if value is None or value.__class__ is np.ndarray or self.to_host is None:
            return value
        return np.asarray(self.to_host(value))

    def shape(self, i: int) -> tuple:
        return tuple(int(d) for d in self.args[i].shape)  # Python ints: products must not overflow

    def dtype(self, i: int) -> Any:
        return self.args[i].dtype


class Guard:
    """Called with a step's inputs before its kernel: raises AllocationLimitError when the node's
    output would exceed the limit."""

    def __init__(self, source: str, node: Node, limit: int, constants: Mapping[int, np.ndarray],
                 to_host: Callable[[Any], Any] | None, loop_scan_bytes: int | None = None) -> None:
        self.source, self.node, self.limit = source, node, limit
        self.constants, self.to_host = dict(constants), to_host
        self.shape_of = _SHAPES.get(node.op_type)
        self.loop_scan_bytes = loop_scan_bytes
        # constant 1-element inputs as Python numbers, for the fast paths
        self.scalars = {i: v.reshape(-1)[0].item() for i, v in self.constants.items() if np.asarray(v).size == 1}
        self.fast = _FAST.get(node.op_type)

    def __call__(self, *args: Any) -> None:
        fast = self.fast
        if fast is not None:
            nbytes = fast(self, args)
            if nbytes is not None:
                if nbytes > self.limit:
                    self._slow(args)  # the full computation words the error
                return
        self._slow(args)

    def _slow(self, args: tuple) -> None:
        inputs = _Inputs(args, self.constants, self.to_host)
        if self.node.op_type == "Loop":
            self._loop(inputs)
            return
        try:
            found = self.shape_of(self.node, inputs) if self.shape_of is not None else None
        except (TypeError, ValueError, IndexError, AttributeError, OverflowError):
            return  # malformed inputs: the kernel names what is wrong
        if found is None:
            return
        shape, dtype = found
        nbytes = math.prod(shape) * _itemsize(dtype)
        if nbytes > self.limit:
            raise refuse(self.source, self.node, f"{np.dtype(dtype).name}{list(shape)}", nbytes, self.limit)

    def _loop(self, inputs: _Inputs) -> None:
        trips = inputs.value(0)
        cond = inputs.value(1) if len(self.node.inputs) > 1 and self.node.inputs[1] else None
        if trips is None or np.asarray(trips).size != 1 or not self.loop_scan_bytes:
            return
        if cond is not None and not bool(np.asarray(cond).reshape(-1)[0]):
            return
        count = max(int(np.asarray(trips).reshape(-1)[0]), 0)
        nbytes = count * self.loop_scan_bytes
        if nbytes > self.limit:
            raise refuse(self.source, self.node, f"scan outputs of {self.loop_scan_bytes} bytes per iteration "
                         f"for {count} iterations", nbytes, self.limit)


# --- fast paths: the output's byte count from host inputs in a few Python operations, or None
# to take the full computation (device or malformed inputs, an unusual form); only ever an upper
# bound's worth of work: a count over the limit is computed again by the full path

def _scalar(guard: Guard, args: tuple, i: int) -> Any:
    found = guard.scalars.get(i)
    if found is not None:
        return found
    value = args[i]
    if value.__class__ is not np.ndarray or value.size != 1:
        raise _NotFast
    return value.item()


class _NotFast(Exception):
    pass


def _fast_range(guard: Guard, args: tuple) -> int | None:
    if len(args) < 3:
        return None
    try:
        start, limit, delta = _scalar(guard, args, 0), _scalar(guard, args, 1), _scalar(guard, args, 2)
        if not delta or not math.isfinite(start) or not math.isfinite(limit) or not math.isfinite(delta):
            return None
        count = max(math.ceil((limit - start) / delta), 0)
    except (_NotFast, TypeError, ValueError, OverflowError):
        return None
    return count * 8  # at least the element size of any Range type


def _host_ints(guard: Guard, args: tuple, i: int) -> list | None:
    value = guard.constants.get(i)
    if value is None:
        value = args[i] if i < len(args) else None
        if value is None or value.__class__ is not np.ndarray or value.ndim != 1 or value.dtype.kind != "i":
            return None
    return value.tolist()


def _fast_expand(guard: Guard, args: tuple) -> int | None:
    dims, x = _host_ints(guard, args, 1), args[0]
    if dims is None or x.__class__ is not np.ndarray:
        return None
    shape = x.shape
    if len(dims) < len(shape):
        dims = [1] * (len(shape) - len(dims)) + dims
    count = 1
    for k, d in enumerate(dims):
        j = k - (len(dims) - len(shape))
        count *= max(d, shape[j]) if j >= 0 else d
        if d < 0:
            return None
    return count * x.dtype.itemsize


def _fast_tile(guard: Guard, args: tuple) -> int | None:
    reps, x = _host_ints(guard, args, 1), args[0]
    if reps is None or x.__class__ is not np.ndarray or len(reps) != x.ndim:
        return None
    count = x.size
    for r in reps:
        if r < 0:
            return None
        count *= r
    return count * x.dtype.itemsize


def _fast_constant_of_shape(guard: Guard, args: tuple) -> int | None:
    dims = _host_ints(guard, args, 0)
    if dims is None or any(d < 0 for d in dims):
        return None
    return math.prod(dims) * 16  # at least the value's element size


def _fast_pad(guard: Guard, args: tuple) -> int | None:
    x = args[0] if args else None
    if guard.node.opset < 11 or x.__class__ is not np.ndarray or (len(args) > 3 and args[3] is not None):
        return None  # pads as an attribute, or axes: the full computation
    pads = _host_ints(guard, args, 1)
    ndim = x.ndim
    if pads is None or len(pads) != 2 * ndim:
        return None
    count = 1
    for d, size in enumerate(x.shape):
        count *= max(size + pads[d] + pads[d + ndim], 0)
    return count * x.dtype.itemsize


_FAST: dict[str, Callable[[Guard, tuple], int | None]] = {
    "Range": _fast_range, "Expand": _fast_expand, "Tile": _fast_tile, "ConstantOfShape": _fast_constant_of_shape,
    "Pad": _fast_pad}


class StaticGuard:
    """The guard of a node whose outputs' static shapes already exceed the limit: it always refuses
    (when the node runs: an If branch that holds it may never be taken)."""

    def __init__(self, error: AllocationLimitError) -> None:
        self.error = error

    def __call__(self, *args: Any) -> None:
        raise self.error


def _static_bytes(graph: Graph, name: str) -> tuple[str, int] | None:
    t = graph.type_of(name) if name else None
    if t is None or t.kind != "tensor" or t.shape is None or t.dtype is None:
        return None
    if not all(isinstance(d, int) and d >= 0 for d in t.shape):
        return None
    return f"{t.dtype.name}{list(t.shape)}", math.prod(t.shape) * _itemsize(t.dtype)


def static_error(source: str, graph: Graph, nodes: Sequence[Node], limit: int) -> AllocationLimitError | None:
    """The error for the first node whose statically known outputs exceed the limit, if any."""
    for node in nodes:
        for name in node.outputs:
            found = _static_bytes(graph, name)
            if found is not None and found[1] > limit:
                return refuse(source, node, f"output {name!r} of {found[0]}", found[1], limit)
    return None


def exact_trips(node: Node) -> bool:
    """Whether a Loop runs exactly its trip count (when its first condition is true): its body
    passes the condition through unchanged."""
    body = node.attr("body")
    if body is None or len(body.inputs) < 2 or not body.outputs:
        return False
    if len(node.inputs) < 2 or not node.inputs[1]:
        return True
    cond_in, cond_out = body.inputs[1].name, body.outputs[0].name
    while cond_out != cond_in:
        producer = next((n for n in body.nodes if cond_out in n.outputs), None)
        if producer is None or producer.op_type != "Identity":
            return False
        cond_out = producer.inputs[0]
    return True


def loop_scan_bytes(node: Node) -> int | None:
    """The bytes a Loop's scan outputs add per iteration, when their static shapes say."""
    body = node.attr("body")
    if body is None:
        return None
    n_carried = len(body.inputs) - 2
    total = 0
    for vi in body.outputs[1 + n_carried:]:
        found = _static_bytes(body, vi.name)
        if found is None:
            return None
        total += found[1]
    return total


def guard_for(source: str, graph: Graph, nodes: Sequence[Node], limit: int,
              to_host: Callable[[Any], Any] | None) -> Callable[..., None] | None:
    """The guard of a step running ``nodes`` of ``graph`` (a fused step is checked on its outputs'
    static shapes only), or None when it needs none; ``to_host`` reads a device input."""
    if limit <= 0:
        return None
    error = static_error(source, graph, nodes, limit)
    if error is not None:
        return StaticGuard(error)
    if len(nodes) != 1:
        return None
    node = nodes[0]
    if node.domain not in ("", "ai.onnx") or node.op_type not in SIZED_OPS:
        return None
    scan_bytes = None
    if node.op_type == "Loop":
        scan_bytes = loop_scan_bytes(node)
        if not scan_bytes or not exact_trips(node) or not node.inputs or not node.inputs[0]:
            return None
    constants = {i: graph.initializers[n] for i, n in enumerate(node.inputs)
                 if n and n in graph.initializers and not any(vi.name == n for vi in graph.inputs)}
    return Guard(source, node, limit, constants, to_host, scan_bytes)


class ScanCheck:
    """Counts a Loop's scan outputs as they grow: ``check(i, counted, *scans)`` after iteration
    ``i`` (from 1) raises AllocationLimitError when the values kept exceed the limit, and returns
    the iteration to check next (an eighth more), so an iteration costs one comparison. ``counted``
    (a list the caller starts empty) holds the bytes counted and the values counted per output."""

    def __init__(self, source: str, node: Node, limit: int) -> None:
        self.source, self.node, self.limit = source, node, limit

    def __call__(self, i: int, counted: list[int], *scans: list) -> int:
        if not counted:
            counted.extend([0] * (1 + len(scans)))
        total = counted[0]
        for k, values in enumerate(scans):
            for value in values[counted[1 + k]:]:
                total += _nbytes(value)
            counted[1 + k] = len(values)
        counted[0] = total
        if total > self.limit:
            raise self.refused(i, total)
        return i + max(1, i >> 3)

    def refused(self, i: int, total: int) -> AllocationLimitError:
        """The error for scan outputs of ``total`` bytes after iteration ``i``, for a kernel that
        keeps its scan outputs its own way and counts them against ``limit`` itself."""
        return refuse(self.source, self.node, f"scan outputs of {total} bytes after {i} iterations",
                      total, self.limit)


def _nbytes(value: Any) -> int:
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0) or 0)
