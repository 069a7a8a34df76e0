"""Which provider would run a node, and whether it can run a fused replacement.

A fusion is applied only when one provider would claim every node of the pattern (each node goes
to the first provider, in the session's order, that claims it) and that provider can also run the
fused node. So a fusion never moves work from one provider to another, and an op no provider has
is never created. Providers are asked through their ordinary interface: ``get_capability`` on a
one-node view.
"""

from __future__ import annotations

from typing import Sequence

from onnxplug.ir import Graph, Node
from onnxplug.logs import get_logger
from onnxplug.provider import ExecutionProvider, GraphView

logger = get_logger("onnxplug.optimizer")


class ProviderSupport:
    """Answers "who runs this node" for the session's providers, in priority order."""

    def __init__(self, providers: Sequence[ExecutionProvider]) -> None:
        self.providers = list(providers)
        # id(node) -> (node, claimant); the node is kept so its id cannot be reused meanwhile.
        self._claimants: dict[int, tuple[Node, ExecutionProvider | None]] = {}

    def can_run(self, provider: ExecutionProvider, graph: Graph, node: Node) -> bool:
        """Whether ``provider`` claims ``node`` as if it stood in ``graph`` (types come from it)."""
        if not node.opset:
            node.opset = graph.opsets.get(node.domain, 1)
        # A scratch graph holding only the candidate; its parent supplies types and constants.
        scratch = Graph(name=f"{graph.name}/candidate", nodes=[node], inputs=[], outputs=[],
                        opsets=graph.opsets, parent=graph)
        try:
            claims = provider.get_capability(GraphView(scratch, [node]))
        except Exception as e:  # a provider failing on a candidate must not break optimization
            logger.debug("provider %s failed on candidate %s: %s", provider.name, node.describe(), e)
            return False
        return any(n is node for c in claims for n in c.nodes)

    def claimant(self, graph: Graph, node: Node) -> ExecutionProvider | None:
        """The first provider that would claim ``node``."""
        cached = self._claimants.get(id(node))
        if cached is not None and cached[0] is node:
            return cached[1]
        found = next((p for p in self.providers if self.can_run(p, graph, node)), None)
        self._claimants[id(node)] = (node, found)
        return found

    def allows(self, graph: Graph, pattern: Node | Sequence[Node], fused: Node) -> bool:
        """Whether one provider would run every node of ``pattern`` and can also run ``fused``."""
        nodes = [pattern] if isinstance(pattern, Node) else list(pattern)
        claimants = {id(self.claimant(graph, n)) for n in nodes}
        provider = self.claimant(graph, nodes[0])
        return provider is not None and len(claimants) == 1 and self.can_run(provider, graph, fused)
