"""Kernels and the kernel registry keyed by (domain, op_type, since_version)."""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Mapping, Sequence

from onnxplug.cancellation import check_terminate  # noqa: F401  (for providers' long loops, via onnxplug_sdk)
from onnxplug.errors import DuplicateKernelError

if TYPE_CHECKING:
    from onnxplug.ir import Graph, Node
    from onnxplug.provider import ExecutionProvider, GraphView

SubgraphRunner = Callable[[Sequence[Any], Mapping[str, Any]], list[Any]]
"""Runs a compiled subgraph: ``runner(graph_input_values, outer_scope_values) -> output values``."""


@dataclass
class KernelContext:
    """What a kernel may use when it is created: its provider, the session's threads, subgraphs."""

    provider: ExecutionProvider
    intra_op_num_threads: int = 0
    #: Plans a subgraph (If branch, Loop or Scan body) with the session's providers. The session's
    #: runners are ``executor.SubgraphPlan``s, which also run a Loop body's iterations in one call
    #: (``run_loop``); a kernel should check for it, as other contexts may give plain callables.
    #: A Loop body's SubgraphPlan also has ``scan_check`` (``allocation_limit.ScanCheck``, None
    #: without a limit): a kernel that keeps scan outputs its own way counts them against its
    #: ``limit`` and raises ``scan_check.refused(iterations, bytes)`` past it.
    compile_subgraph: Callable[[Graph], SubgraphRunner] | None = None
    #: Initializers that feeds cannot override, by name, so a kernel can prepack its weights.
    constants: Mapping[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class Kernel:
    """Computes one node (or one fused subgraph).

    A kernel is created once per node at session creation, from the node's attributes.
    ``compute`` must not change the kernel's state, so one session can serve many threads.
    """

    #: True for kernels of nodes with subgraphs: ``compute`` then also receives ``scope=``, the
    #: outer-scope values the subgraphs read (the node's implicit inputs).
    wants_scope: ClassVar[bool] = False

    def __init__(self, node: Node, context: KernelContext) -> None:
        self.node = node
        self.context = context

    def attr(self, name: str, default: Any = None) -> Any:
        """The value of one of the node's attributes, or ``default``."""
        return self.node.attr(name, default)

    def compute(self, *inputs: Any) -> Any:
        """Compute the outputs from the inputs (``None`` for an omitted optional input).

        Returns a tuple or list with one entry per output, or a single value for one output.
        """
        raise NotImplementedError(f"{type(self).__name__}.compute")

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        """Whether this kernel can compute ``node`` (types, attributes); called during partitioning.
        Instead of ``False`` it may return a :class:`~onnxplug.provider.Decline` saying why."""
        return True


class KernelRegistry:
    """Kernels keyed by (domain, op_type, since_version).

    ``resolve`` returns the kernel with the largest since_version not above the model's opset.
    Registering the same key twice raises :class:`DuplicateKernelError`.
    """

    def __init__(self, name: str, loader: Callable[[KernelRegistry], None] | None = None) -> None:
        self.name = name
        self._versions: dict[tuple[str, str], list[int]] = {}
        self._kernels: dict[tuple[str, str, int], type[Kernel]] = {}
        self._loader = loader
        self._lock = threading.Lock()

    def register(self, op_type: str, since_version: int, kernel: type[Kernel], domain: str = "") -> None:
        """Register ``kernel`` for ``op_type`` in ``domain`` from ``since_version`` on."""
        domain = "" if domain == "ai.onnx" else domain
        key = (domain, op_type, since_version)
        if key in self._kernels:
            raise DuplicateKernelError(
                f"registry {self.name!r}: a kernel for {domain or 'ai.onnx'}::{op_type} since opset "
                f"{since_version} is already registered ({self._kernels[key].__qualname__}); "
                f"refusing {kernel.__qualname__}")
        self._kernels[key] = kernel
        bisect.insort(self._versions.setdefault((domain, op_type), []), since_version)

    def kernel(self, op_type: str, *since_versions: int, domain: str = "") -> Callable[[type[Kernel]], type[Kernel]]:
        """Class decorator registering a kernel for one or more since_versions (default 1)."""
        def deco(cls: type[Kernel]) -> type[Kernel]:
            for v in since_versions or (1,):
                self.register(op_type, v, cls, domain)
            return cls
        return deco

    def resolve(self, domain: str, op_type: str, opset: int) -> type[Kernel] | None:
        """The kernel for the largest since_version <= ``opset``, or None."""
        self._ensure_loaded()
        domain = "" if domain == "ai.onnx" else domain
        versions = self._versions.get((domain, op_type))
        if not versions:
            return None
        i = bisect.bisect_right(versions, opset)
        return self._kernels[(domain, op_type, versions[i - 1])] if i else None

    def keys(self) -> Iterator[tuple[str, str, int]]:
        """Every registered (domain, op_type, since_version)."""
        self._ensure_loaded()
        return iter(sorted(self._kernels))

    def _ensure_loaded(self) -> None:
        if self._loader is None:
            return
        with self._lock:
            loader, self._loader = self._loader, None
            if loader is not None:
                loader(self)
