"""The ``numpy`` provider: the default CPU provider, appended last to every session.

Its provider options are the fields of ``runtime.tuning.NumpyTuning`` (``default_options``); the
provider builds one frozen ``tuning`` from them, which its kernels read through their context."""

from __future__ import annotations

from typing import ClassVar

from onnxplug.device import HardwareDevice, host_cpu
from onnxplug.ir import Graph, Node
from onnxplug.kernel import Kernel
from onnxplug.provider import ExecutionProvider
from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS
from onnxplug.providers.numpy.layout import channels_last_nodes
from onnxplug.providers.numpy.registry import REGISTRY
from onnxplug.providers.numpy.runtime.tuning import PRODUCT_OPTIONS, NumpyTuning


class NumpyProvider(ExecutionProvider):
    """Vectorised NumPy kernels on the host; rare ops reuse onnx.reference (listed in the docs)."""

    name: ClassVar[str] = "numpy"
    aliases: ClassVar[tuple[str, ...]] = ("CPUExecutionProvider",)
    version: ClassVar[str] = "0.1.0"
    #: The tuning options (docs/numpy-provider-ops.md, "Provider options"), onnxruntime-style strings.
    default_options: ClassVar[dict[str, str]] = NumpyTuning().as_options()

    def __init__(self, options=None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.tuning = NumpyTuning.from_options(self.options)
        self._given = frozenset(options or {})
        self.kernel_registry = REGISTRY
        self._channels_last: tuple[Graph, tuple[int, ...], set[int]] | None = None
        # process-wide, as numpy's BLAS: the last session created that sets one sets it for all
        given = {name: getattr(self.tuning, name) for name in PRODUCT_OPTIONS if name in self._given}
        PRODUCT_THREADS.configure(intra_op_num_threads, **given)

    def reported_options(self) -> dict[str, object]:
        """The options the session set: onnxruntime's CPU provider, which has none of these, lists none."""
        return {k: v for k, v in self.options.items() if k in self._given}

    @classmethod
    def devices(cls) -> list[str]:
        """The host CPU."""
        return ["cpu (host memory)"]

    @classmethod
    def hardware_devices(cls) -> list[HardwareDevice]:
        """The host CPU (declared, so that listing devices creates no provider: creating one sets
        the process-wide product threads)."""
        return [host_cpu()]

    def preferred_layout(self, node: Node, graph: Graph) -> str | None:
        """"NHWC" for depthwise convolutions and the 1x1 convolutions and pools around them (see
        :mod:`onnxplug.providers.numpy.layout`), else None (the standard layout)."""
        # The layout pass asks about every convolution of a graph in a row: the regions are found
        # once per graph state (the nodes' identities), not once per node. A stale answer could only
        # cost speed: the pass still checks that the provider runs the channels-last twin.
        key = tuple(map(id, graph.nodes))
        cached = self._channels_last
        if cached is None or cached[0] is not graph or cached[1] != key:
            cached = self._channels_last = (graph, key, channels_last_nodes(graph))
        return "NHWC" if id(node) in cached[2] else None

    def resolve_kernel(self, node: Node) -> type[Kernel] | None:
        """The provider's own kernel, else an adapter over onnx.reference's implementation."""
        kernel = super().resolve_kernel(node)
        if kernel is None:
            from onnxplug.providers.numpy.reference_adapter import reference_kernel

            kernel = reference_kernel(node)
        return kernel
