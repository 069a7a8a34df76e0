"""``CompilingProvider``: claims convex chains of fusable nodes as fused subgraphs it compiles itself."""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np

from onnxplug.ir import Node
from onnxplug.kernel import Kernel, KernelContext
from onnxplug.provider import Capability, Decline, FusedSubgraph, GraphView

from onnxplug_sdk.fusion import find_fusable_groups
from onnxplug_sdk.helpers import ShapeError, broadcast_shapes
from onnxplug_sdk.registry_provider import KernelRegistryProvider

#: ai.onnx ops that compute each output element from the same-position (broadcast) input elements.
FUSABLE_ELEMENTWISE: frozenset[str] = frozenset({
    # unary
    "Abs", "Neg", "Reciprocal", "Sqrt", "Exp", "Log", "Floor", "Ceil", "Round", "Sign", "Erf",
    "Sin", "Cos", "Tan", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "Relu", "LeakyRelu", "Elu", "Selu",
    "Celu", "ThresholdedRelu", "Softplus", "Softsign", "Mish", "Gelu", "Identity",
    # binary and variadic, with multidirectional broadcasting
    "Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Max", "Min", "Sum", "Mean",
})

#: Element types the default ``fusable`` accepts.
FLOAT_DTYPES: frozenset[np.dtype] = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


class CompilingProvider(KernelRegistryProvider):
    """Base for providers that compile several nodes into one kernel (and may also have single kernels).

    ``get_capability`` first claims maximal connected chains of at least two nodes for which
    ``fusable(node, view)`` holds, as ``Capability(nodes, fused=True, name=...)``; the chains are
    convex by construction (no path leaves a chain and re-enters it, other chains contracted).
    Values a chain produces and something outside reads become outputs of the fused subgraph.
    Then the remaining nodes are claimed one by one through the kernel registry. Subclasses
    implement ``compile(subgraph, context)``.
    """

    _sdk_base: ClassVar[bool] = True
    #: The smallest chain worth compiling.
    min_fused_nodes: ClassVar[int] = 2

    def fusable(self, node: Node, view: GraphView) -> bool:
        """Whether ``node`` may join a fused chain. The default accepts ai.onnx ops of
        :data:`FUSABLE_ELEMENTWISE` with one output, whose inputs and output all have the same
        known float dtype and whose known input shapes broadcast."""
        if node.domain not in ("", "ai.onnx") or node.op_type not in FUSABLE_ELEMENTWISE:
            return False
        if len(node.outputs) != 1 or not node.inputs or "" in node.inputs or node.subgraphs:
            return False
        dtypes = {view.dtype_of(name) for name in [*node.inputs, node.outputs[0]]}
        if len(dtypes) != 1 or next(iter(dtypes)) not in FLOAT_DTYPES:
            return False
        shapes = [t.shape for t in (view.type_of(name) for name in node.inputs)]
        if all(s is not None for s in shapes):
            try:
                broadcast_shapes(*shapes)  # type: ignore[arg-type]
            except ShapeError:
                return False
        return True

    def get_capability(self, view: GraphView, *, fixed_groups: Sequence[Sequence[Node]] = ()) -> list[Capability]:
        """Fused chains first, then single nodes with a registered kernel that supports them.

        A subclass that claims groups of its own first (and passes the remaining nodes in ``view``)
        hands them over as ``fixed_groups``, so no chain forms a cycle with them.
        """
        chains = find_fusable_groups(view, lambda n: self.fusable(n, view), self.min_fused_nodes, fixed_groups)
        claims = [Capability(tuple(chain), fused=True, name=f"{self.name}_fused_{chain[0].name}")
                  for chain in chains]
        in_chain = {id(n) for chain in chains for n in chain}
        for node in view.nodes:
            if id(node) in in_chain:
                continue
            kernel = self.resolve_kernel(node)
            if kernel is not None and kernel.supports(node, view):
                claims.append(Capability((node,)))
        return claims

    def explain(self, node: Node, view: GraphView) -> Decline:
        """A node only a chain could compute says the chain did not form; else the kernel's reason."""
        if self.resolve_kernel(node) is None and self.fusable(node, view):
            return Decline("fusion", f"it can only run fused, and no chain of at least {self.min_fused_nodes} "
                                     "fusable node(s) without a cycle holds it")
        return super().explain(node, view)

    def compile(self, subgraph: FusedSubgraph, context: KernelContext) -> Kernel:
        """Build one kernel computing ``subgraph.outputs`` (in order) from ``subgraph.inputs``."""
        raise NotImplementedError(f"{type(self).__name__}.compile: a CompilingProvider must build "
                                  f"kernels for the chains it claims (here {subgraph.name!r})")
