"""The ``cupy`` execution provider: ONNX on a CUDA device through CuPy."""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from onnxplug_sdk import (
    Availability,
    Capability,
    CompilingProvider,
    Device,
    FusedSubgraph,
    GraphView,
    Kernel,
    KernelContext,
    Node,
)

from onnxplug_cupy import __version__
from onnxplug_cupy.codegen.expressions import step_for
from onnxplug_cupy.options import DEFAULT_OPTIONS, CupyOptions, parse_options
from onnxplug_cupy.runtime.backend import CudaBackend
from onnxplug_cupy.runtime.memory import CupyAllocator, CupyTransfer
from onnxplug_cupy.runtime.probe import probe


class CupyProvider(CompilingProvider):
    """Runs ONNX nodes on an NVIDIA GPU with CuPy.

    MatMul/Gemm go to cuBLAS through ``cupy.matmul``; Conv is im2col (a strided window view copied
    into columns) followed by one batched GEMM; chains of elementwise nodes are generated as CUDA C
    and compiled with NVRTC at session creation; reductions, normalisations, attention and
    pooling are CuPy array programs. Values stay on the device between the provider's nodes.

    Options: ``device_id`` (CUDA device, default 0), ``gpu_mem_limit`` (bytes for a private memory
    pool; 0 shares CuPy's default pool), ``fuse_elementwise`` (default True).
    """

    name: ClassVar[str] = "cupy"
    aliases: ClassVar[tuple[str, ...]] = ("CUDAExecutionProvider",)
    version: ClassVar[str] = __version__
    ops_package: ClassVar[str] = "onnxplug_cupy.ops"
    default_options: ClassVar[Mapping[str, Any]] = DEFAULT_OPTIONS

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.settings: CupyOptions = parse_options(self.options)
        self.device = Device("cuda", self.settings.device_id)
        self.backend = self.make_backend()
        self.allocator = CupyAllocator(self.backend, self.device)
        self.data_transfer = CupyTransfer(self.backend, self.device)
        self._views: dict[int, GraphView] = {}

    def make_backend(self) -> Any:
        """The device backend kernels run on (nothing touches the GPU until a kernel is built)."""
        return CudaBackend(self.settings.device_id, self.settings.gpu_mem_limit)

    @classmethod
    def availability(cls) -> Availability:
        """Available when CuPy imports, CUDA reports a device and NVRTC loads; otherwise the reason
        is CuPy's own error, e.g. ``cudaErrorInsufficientDriver: ...`` or ``cudaErrorNoDevice: ...``."""
        result = probe()
        return Availability(result.available, result.reason)

    @classmethod
    def devices(cls) -> list[str]:
        """One line per CUDA device CuPy sees, or the reason it sees none."""
        result = probe()
        return list(result.devices) if result.available else [f"none: {result.reason}"]

    def view_of(self, node: Node) -> GraphView | None:
        """The partitioning view ``node`` was claimed in (static types and constants)."""
        return self._views.get(id(node))

    def get_capability(self, view: GraphView) -> list[Capability]:
        """Elementwise chains (compiled at session creation), then single nodes."""
        for node in view.nodes:
            self._views[id(node)] = view
        return super().get_capability(view)

    def fusable(self, node: Node, view: GraphView) -> bool:
        """Elementwise nodes the CUDA C generator computes exactly at their dtypes (not float16)."""
        return self.settings.fuse_elementwise and step_for(node, view.dtype_of) is not None

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        """One generated kernel for a claimed elementwise chain, compiled now."""
        from onnxplug_cupy.fusion import FusedElementwiseKernel

        return FusedElementwiseKernel(subgraph, context)
