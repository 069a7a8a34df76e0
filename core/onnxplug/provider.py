"""The execution-provider interface: what a provider claims, and how it builds kernels for its claims."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

import numpy as np

from onnxplug.device import CPU, Allocator, DataTransfer, Device, HardwareDevice, HostAllocator, HostDataTransfer
from onnxplug.errors import NotImplementedOpError, UnsupportedOptionError
from onnxplug.kernel import Kernel, KernelContext, KernelRegistry

if TYPE_CHECKING:
    from onnxplug.ir import Graph, Node, ValueType

#: The interface version the core implements. A provider declaring another is refused at discovery.
CORE_API_VERSION = 1


@dataclass(frozen=True)
class Availability:
    """Whether a provider can run here, and if not, a reason a person can act on."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


#: The kinds of reason a provider gives for declining a node (:class:`Decline`).
DECLINE_KINDS = ("op", "dtype", "attribute", "shape", "device", "fusion", "other")


@dataclass(frozen=True)
class Decline:
    """Why a provider did not claim a node: a ``kind`` of :data:`DECLINE_KINDS` and a sentence.

    It is false, so ``Kernel.supports`` can return one instead of ``False`` and callers testing
    ``if kernel.supports(...)`` see no difference. ``provider`` is filled in by the partitioner.
    """

    kind: str
    reason: str
    provider: str = ""

    def __post_init__(self) -> None:
        if self.kind not in DECLINE_KINDS:
            raise ValueError(f"Decline kind {self.kind!r} is not one of {', '.join(DECLINE_KINDS)}")

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}"


@dataclass(frozen=True)
class Capability:
    """A provider's claim: one node, or a fused subgraph of several nodes compiled into one kernel."""

    nodes: tuple[Node, ...]
    fused: bool = False
    #: A label for profiles and assignment listings, e.g. ``"fused_elementwise_3"``.
    name: str = ""


@dataclass
class FusedSubgraph:
    """Nodes claimed together, with the values crossing the subgraph's boundary."""

    name: str
    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    view: GraphView


class GraphView:
    """A provider's read-only view of a graph during partitioning: the nodes still unclaimed, plus types."""

    def __init__(self, graph: Graph, nodes: Sequence[Node]) -> None:
        self.graph = graph
        self.nodes: list[Node] = list(nodes)
        self._producers: dict[str, Node] = {}
        self._consumers: dict[str, list[Node]] = {}
        for node in graph.nodes:
            for out in node.outputs:
                if out:
                    self._producers[out] = node
            for name in {*node.inputs, *node.implicit_inputs}:
                if name:
                    self._consumers.setdefault(name, []).append(node)
        self._graph_inputs = {vi.name for vi in graph.inputs}
        self.graph_outputs: frozenset[str] = frozenset(vi.name for vi in graph.outputs)

    @property
    def opsets(self) -> dict[str, int]:
        """The model's opset imports by domain (``''`` is ai.onnx)."""
        return self.graph.opsets

    def type_of(self, name: str) -> ValueType | None:
        """The value's type as declared or inferred, or None when unknown."""
        return self.graph.type_of(name)

    def dtype_of(self, name: str) -> np.dtype | None:
        """The numpy dtype of a tensor value, or None when unknown or not a tensor."""
        t = self.type_of(name)
        return t.dtype if t is not None else None

    def constant(self, name: str) -> np.ndarray | None:
        """The value of an initializer that a feed cannot override, else None."""
        if name in self._graph_inputs:
            return None
        g: Graph | None = self.graph
        while g is not None:
            if name in g.initializers:
                return g.initializers[name]
            g = g.parent
        return None

    def producer(self, name: str) -> Node | None:
        """The node that computes ``name``, or None for inputs and initializers."""
        return self._producers.get(name)

    def consumers(self, name: str) -> list[Node]:
        """The nodes that read ``name`` (directly or from a subgraph)."""
        return self._consumers.get(name, [])


class ExecutionProvider:
    """A provider: a device, an allocator, a data transfer, and kernels for the nodes it claims.

    Subclasses set ``name`` and, unless they compute on host numpy arrays, ``allocator`` and
    ``data_transfer``. Kernel-registry providers fill ``kernel_registry``; compiling providers
    override ``get_capability`` to claim fused subgraphs and ``compile`` to build them.
    """

    #: The short name users pass in ``providers=[...]``.
    name: ClassVar[str] = ""
    #: Other accepted names, e.g. onnxruntime's ``"CPUExecutionProvider"``.
    aliases: ClassVar[tuple[str, ...]] = ()
    #: The provider's own version, shown by ``onnxplug providers``.
    version: ClassVar[str] = ""
    #: The core interface version this provider was written for.
    api_version: ClassVar[int] = CORE_API_VERSION
    #: Accepted provider options and their defaults; other keys are refused.
    default_options: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        unknown = sorted(set(options or {}) - set(self.default_options))
        if unknown:
            known = ", ".join(sorted(self.default_options)) or "none"
            raise UnsupportedOptionError(f"provider {self.name!r} does not support option(s) "
                                         f"{', '.join(map(repr, unknown))} (supported: {known})")
        self.options: dict[str, Any] = {**self.default_options, **(options or {})}
        self.intra_op_num_threads = intra_op_num_threads
        self.device: Device = CPU
        self.allocator: Allocator = HostAllocator()
        self.data_transfer: DataTransfer = HostDataTransfer()
        self.kernel_registry: KernelRegistry | None = None

    @classmethod
    def availability(cls) -> Availability:
        """Whether the provider can run on this machine; called before a session uses it."""
        return Availability(True)

    @classmethod
    def devices(cls) -> list[str]:
        """Human-readable descriptions of the devices this provider sees, for ``onnxplug providers``."""
        return []

    @classmethod
    def hardware_devices(cls) -> list[HardwareDevice] | None:
        """The physical devices this provider can run on, for ``get_ep_devices()``. None (the default)
        lets the core derive one from a provider made with default options: its ``device``, the host
        CPU for ``cpu`` and an NVIDIA GPU for ``cuda``. Called only when the provider is available."""
        return None

    def reported_options(self) -> Mapping[str, Any]:
        """The options ``get_provider_options()`` lists: by default all of ``options``, defaults
        filled in. A provider playing an onnxruntime one that reports none may list fewer."""
        return self.options

    def preferred_layout(self, node: Node, graph: Graph) -> str | None:
        """The layout this provider wants ``node`` of ``graph`` in: ``"NHWC"`` (channels-last) asks
        the layout pass to rewrite it to domain ``com.onnxplug.nhwc`` between Transposes, for which
        the provider must have a kernel; None (the default) keeps the standard layout. Asked for
        convolutions and pools, on the graph as it stands before any rewrite."""
        return None

    def get_capability(self, view: GraphView) -> list[Capability]:
        """Claim nodes of ``view.nodes``. The default claims each node its registry can compute."""
        claims = []
        for node in view.nodes:
            kernel = self.resolve_kernel(node)
            if kernel is not None and kernel.supports(node, view):
                claims.append(Capability((node,)))
        return claims

    def explain(self, node: Node, view: GraphView) -> Decline:
        """Why ``get_capability(view)`` left ``node`` unclaimed; asked by the partitioner for each
        such node. The default: no registered kernel, else the :class:`Decline` the kernel's
        ``supports`` returned. Providers that claim by other rules override it."""
        kernel = self.resolve_kernel(node)
        if kernel is None:
            return Decline("op", f"no kernel registered for {node.domain or 'ai.onnx'}::{node.op_type} "
                                 f"at opset {node.opset}")
        verdict = kernel.supports(node, view)
        if isinstance(verdict, Decline):
            return verdict
        if not verdict:
            return Decline("other", f"{kernel.__name__}.supports declined it")
        return Decline("other", "its kernel supports it, but the provider's get_capability did not claim it")

    def resolve_kernel(self, node: Node) -> type[Kernel] | None:
        """The registered kernel class for ``node`` at its opset, if any."""
        if self.kernel_registry is None:
            return None
        return self.kernel_registry.resolve(node.domain, node.op_type, node.opset)

    def create_kernel(self, node: Node, context: KernelContext) -> Kernel:
        """Create the kernel of a node this provider claimed on its own."""
        kernel = self.resolve_kernel(node)
        if kernel is None:
            raise NotImplementedOpError(f"provider {self.name!r} claimed {node.describe()} but has no kernel")
        return kernel(node, context)

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        """Build one kernel for a fused subgraph this provider claimed; its ``compute`` takes
        ``subgraph.inputs`` in order and returns ``subgraph.outputs`` in order."""
        raise NotImplementedError(f"provider {self.name!r} claimed a fused subgraph but cannot compile")
