"""The ``opencl`` execution provider."""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from onnxplug_sdk import (
    Availability,
    Capability,
    CompilingProvider,
    Decline,
    FusedSubgraph,
    GraphView,
    HardwareDevice,
    Kernel,
    KernelContext,
    Node,
    host_cpu,
)

from onnxplug_opencl import __version__
from onnxplug_opencl.engine.dtypes import FLOATS, device_supports
from onnxplug_opencl.engine.expressions import expression, operand_inputs
from onnxplug_opencl.ops._base import CLAIMING_DEVICE
from onnxplug_opencl.runtime.context import ClRuntime
from onnxplug_opencl.runtime.devices import DEVICE_ENV, discover, select_device
from onnxplug_opencl.runtime.memory import OpenCLAllocator, OpenCLTransfer


class OpenCLProvider(CompilingProvider):
    """Runs ONNX nodes on an OpenCL device: tiled GEMM, im2col convolution, generated and fused
    elementwise kernels, reductions, normalisations, pooling and data movement, all in ``.cl`` files.

    Options: ``device`` selects the device (``"P:D"`` platform and device index, a flat index, or
    a name substring; default: ONNXPLUG_OPENCL_DEVICE, else the first GPU, else the first device).
    ``fuse`` (default True) compiles chains of elementwise nodes, Conv followed by
    BatchNormalization, Add and Relu/Clip, and MatMul followed by Add and Relu/Clip, into single
    kernels at session creation.
    """

    name: ClassVar[str] = "opencl"
    aliases: ClassVar[tuple[str, ...]] = ("OpenCLExecutionProvider",)
    version: ClassVar[str] = __version__
    ops_package: ClassVar[str] = "onnxplug_opencl.ops"
    default_options: ClassVar[Mapping[str, Any]] = {"device": "", "fuse": True}

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.entry = select_device(str(self.options["device"] or "") or None)
        self.runtime = ClRuntime.for_entry(self.entry)
        self.device = self.runtime.device
        self.allocator = OpenCLAllocator(self.runtime)
        self.data_transfer = OpenCLTransfer(self.runtime)
        self._views: dict[int, GraphView] = {}

    @classmethod
    def availability(cls) -> Availability:
        """Available when an OpenCL device is found (the one the env selector names, if set) and it
        builds and runs a test kernel."""
        devices, reason = discover()
        if not devices:
            return Availability(False, reason)
        try:
            entry = select_device(None)
        except Exception as e:  # a bad ONNXPLUG_OPENCL_DEVICE makes the provider unusable as configured
            return Availability(False, f"{DEVICE_ENV}: {e}")
        problem = ClRuntime.for_entry(entry).compile_problem()
        return Availability(False, problem) if problem else Availability(True)

    @classmethod
    def devices(cls) -> list[str]:
        """Every OpenCL device seen, or the reason none is."""
        devices, reason = discover()
        return [d.describe() for d in devices] if devices else [f"none: {reason}"]

    @classmethod
    def hardware_devices(cls) -> list[HardwareDevice]:
        """Every OpenCL device seen, typed by its OpenCL kind (a CPU device is the host's CPU), with
        the ``device`` option (its flat index) that selects it."""
        devices, _ = discover()
        kinds = {"gpu": "GPU", "cpu": "CPU", "accelerator": "NPU"}
        found = []
        for d in devices:
            kind = kinds.get(d.kind, "GPU")
            host = host_cpu() if kind == "CPU" else None
            found.append(HardwareDevice(kind, host.vendor if host else "", host.vendor_id if host else 0, d.index,
                                        (("name", d.name), ("platform", d.platform_name)),
                                        (("device", str(d.index)),)))
        return found

    def view_of(self, node: Node) -> GraphView | None:
        """The partitioning view the node was claimed in (static types and constants)."""
        return self._views.get(id(node))

    # --- claiming ---------------------------------------------------------------------------------

    def get_capability(self, view: GraphView) -> list[Capability]:
        """Conv and MatMul epilogue groups, then elementwise chains, then single nodes."""
        from onnxplug_opencl.fusion.conv_chain import conv_chains
        from onnxplug_opencl.fusion.matmul_chain import matmul_chains

        for node in view.nodes:
            self._views[id(node)] = view
        token = CLAIMING_DEVICE.set(self.entry)
        try:
            claims: list[Capability] = []
            if self.options["fuse"]:
                claims = conv_chains(self, view)
                offered = {id(n) for n in view.nodes} - {id(n) for c in claims for n in c.nodes}
                claims += matmul_chains(self, view, offered)
            taken = {id(n) for c in claims for n in c.nodes}
            rest = GraphView(view.graph, [n for n in view.nodes if id(n) not in taken]) if taken else view
            return claims + super().get_capability(rest)
        finally:
            CLAIMING_DEVICE.reset(token)

    def explain(self, node: Node, view: GraphView) -> Decline:
        """The kernel's reason, asked under this provider's device as ``get_capability`` asks."""
        token = CLAIMING_DEVICE.set(self.entry)
        try:
            return super().explain(node, view)
        finally:
            CLAIMING_DEVICE.reset(token)

    def fusable(self, node: Node, view: GraphView) -> bool:
        """Elementwise nodes over float inputs whose expression the generator knows."""
        if not self.options["fuse"] or len(node.outputs) != 1 or node.subgraphs:
            return False
        # Every input must be an elementwise operand: CastLike's type donor would widen the space.
        if not node.inputs or "" in node.inputs or operand_inputs(node) != list(node.inputs):
            return False
        if node.op_type == "Identity":
            return False
        in_types = [view.dtype_of(n) for n in node.inputs]
        out_type = view.dtype_of(node.outputs[0])
        if any(t not in FLOATS or not device_supports(self.entry, t) for t in in_types):
            return False
        if out_type is None or not device_supports(self.entry, out_type):
            return False
        args = [f"x{i}" for i in range(len(node.inputs))]
        return expression(node, args, in_types, out_type) is not None

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        """Build the kernel of a claimed group: a conv/gemm epilogue group or an elementwise chain."""
        from onnxplug_opencl.fusion.conv_chain import ConvChainKernel, is_conv_chain
        from onnxplug_opencl.fusion.elementwise_chain import FusedElementwiseKernel
        from onnxplug_opencl.fusion.matmul_chain import MatMulChainKernel, is_matmul_chain

        if is_conv_chain(subgraph):
            return ConvChainKernel(subgraph, context)
        if is_matmul_chain(subgraph):
            return MatMulChainKernel(subgraph, context)
        return FusedElementwiseKernel(subgraph, context)
