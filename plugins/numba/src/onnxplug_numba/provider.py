"""The ``numba`` execution provider: compiled CPU kernels plus fused subgraphs compiled per session."""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

from onnxplug_sdk import (
    Availability,
    Capability,
    CompilingProvider,
    FusedSubgraph,
    GraphView,
    HardwareDevice,
    Kernel,
    KernelContext,
    Node,
    host_cpu,
)

from onnxplug_numba.threads import ThreadControl, max_threads

__version__ = "0.1.0"


class NumbaProvider(CompilingProvider):
    """CPU kernels compiled with numba (BLAS for matrix products).

    Besides single-node kernels it claims three kinds of fused subgraph, each compiled once at
    session creation: chains of elementwise ops (one generated loop), Conv followed by
    BatchNormalization, a residual Add and an activation (weights folded, epilogue fused), and
    MatMul followed by the Add of a constant bias vector.
    """

    name: ClassVar[str] = "numba"
    aliases: ClassVar[tuple[str, ...]] = ("NumbaExecutionProvider",)
    version: ClassVar[str] = __version__
    ops_package: ClassVar[str] = "onnxplug_numba.ops"
    default_options: ClassVar[Mapping[str, Any]] = {"fuse_elementwise": True, "fuse_conv": True,
                                                    "fuse_matmul_bias": True, "compile_helper": True}

    def __init__(self, options: Mapping[str, Any] | None = None, *, intra_op_num_threads: int = 0) -> None:
        super().__init__(options, intra_op_num_threads=intra_op_num_threads)
        self.threads = ThreadControl(intra_op_num_threads)

    @classmethod
    def availability(cls) -> Availability:
        """Available wherever numba imports (it compiles for the host CPU)."""
        try:
            import numba  # noqa: F401
        except ImportError as e:  # pragma: no cover - numba is a dependency
            return Availability(False, f"numba cannot be imported: {e}")
        return Availability(True)

    @classmethod
    def devices(cls) -> list[str]:
        """The host CPU and the default thread count."""
        return [f"cpu (host memory, {max_threads()} threads by default)"]

    @classmethod
    def hardware_devices(cls) -> list[HardwareDevice]:
        """The host CPU."""
        return [host_cpu()]

    def fusable(self, node: Node, view: GraphView) -> bool:
        """Elementwise nodes the code generator computes exactly at their dtypes."""
        from onnxplug_numba.fusion.ops import step_for

        return bool(self.options["fuse_elementwise"]) and step_for(node, view.dtype_of) is not None \
            and elementwise_opset_ok(node) and (node.op_type not in _PER_TENSOR or _scalar_params(node, view))

    def get_capability(self, view: GraphView) -> list[Capability]:
        """Conv groups first, then MatMul + bias and BatchNormalization + activation pairs, then
        elementwise chains, then single nodes."""
        claims: list[Capability] = []
        if self.options["fuse_conv"]:
            from onnxplug_numba.fusion.conv_groups import find_conv_groups

            for group in find_conv_groups(view, self):
                claims.append(Capability(tuple(group), fused=True, name=f"numba_conv_{group[0].name}"))
        if self.options["fuse_matmul_bias"]:
            from onnxplug_numba.fusion.matmul_bias import find_matmul_bias

            taken = {id(n) for c in claims for n in c.nodes}
            free = GraphView(view.graph, [n for n in view.nodes if id(n) not in taken]) if taken else view
            for pair in find_matmul_bias(free):
                claims.append(Capability(tuple(pair), fused=True, name=f"numba_matmul_bias_{pair[0].name}"))
        if self.options["fuse_elementwise"]:
            from onnxplug_numba.fusion.bn_activation import find_bn_activation

            taken = {id(n) for c in claims for n in c.nodes}
            free = GraphView(view.graph, [n for n in view.nodes if id(n) not in taken]) if taken else view
            for pair in find_bn_activation(free):
                claims.append(Capability(tuple(pair), fused=True, name=f"numba_bn_act_{pair[0].name}"))
        taken = {id(n) for c in claims for n in c.nodes}
        rest = GraphView(view.graph, [n for n in view.nodes if id(n) not in taken]) if taken else view
        if view.graph.parent is not None:  # a subgraph: add the element types its values lack
            from onnxplug_numba.subgraph_types import TypedView

            rest = TypedView(rest)
        # the groups above are passed on, so that no chain forms a cycle through one of them
        others = super().get_capability(rest, fixed_groups=[c.nodes for c in claims])
        return claims + [c for claim in others for c in self._without_dead_chain(claim, rest)]

    def _without_dead_chain(self, claim: Capability, view: GraphView) -> list[Capability]:
        """A chain none of whose values is read (dead code the graph still holds) as single nodes:
        a fused step must have an output."""
        if not claim.fused:
            return [claim]
        inside = {id(n) for n in claim.nodes}
        for node in claim.nodes:
            for out in node.outputs:
                if out and (out in view.graph_outputs or any(id(r) not in inside for r in view.consumers(out))):
                    return [claim]
        singles = []
        for node in claim.nodes:
            kernel = self.resolve_kernel(node)
            if kernel is None or not kernel.supports(node, view):
                return [claim]
            singles.append(Capability((node,)))
        return singles

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        """One kernel for a claimed group: a fused conv, or a generated elementwise loop."""
        if subgraph.nodes[0].op_type in ("Conv", "FusedConv"):
            from onnxplug_numba.fusion.conv_groups import FusedConvKernel

            return FusedConvKernel(subgraph, context)
        if subgraph.nodes[0].op_type == "MatMul":
            from onnxplug_numba.fusion.matmul_bias import MatMulBiasKernel

            return MatMulBiasKernel(subgraph, context)
        if subgraph.nodes[0].op_type == "BatchNormalization":
            from onnxplug_numba.fusion.bn_activation import BatchNormActivationKernel

            return BatchNormActivationKernel(subgraph, context)
        from onnxplug_numba.fusion.chain import ChainKernel

        return ChainKernel(subgraph, context)


#: Ops whose parameters (scale, zero point) broadcast in a chain only when each is one value.
_PER_TENSOR = ("QuantizeLinear", "DequantizeLinear")


def _scalar_params(node: Node, view: GraphView) -> bool:
    """Whether every input after the first is known to hold one element of rank 0 or 1."""
    for name in node.inputs[1:]:
        t = view.type_of(name) if name else None
        if t is None or t.shape is None or len(t.shape) > 1 or any(d != 1 for d in t.shape):
            return False
    return True


def elementwise_opset_ok(node: Node) -> bool:
    """Binary ops broadcast ONNX-style only from opset 7 (earlier ones had a ``broadcast`` attribute)."""
    if node.domain not in ("", "ai.onnx"):
        return True
    return len(node.inputs) < 2 or node.opset >= 7 or node.op_type in ("Where",)
