"""Why each node runs where it runs: the providers offered it first, and why each declined it.

Reads the groups an :class:`~onnxplug.engine.Engine` planned, for the main graph and for every
If/Loop/Scan body; the reasons are the :class:`~onnxplug.provider.Decline` the partitioner kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from onnxplug.engine import Engine
    from onnxplug.provider import Decline


class DeclinedNode(NamedTuple):
    """A node that did not run on the first provider offered it."""

    graph: str  #: ``""`` for the main graph, else the body's graph name
    node_name: str
    op_type: str
    provider: str  #: the provider that runs it
    declined: tuple[Decline, ...]


def declined_nodes(engine: Engine) -> list[DeclinedNode]:
    """Every node, of the main graph then of each body, that some provider declined, in plan order."""
    found = []
    graphs = [("", engine.groups)] + [(g.name or "<body>", groups) for g, groups in engine.subgraph_groups]
    for graph, groups in graphs:
        for group in groups:
            for node, declined in zip(group.nodes, group.declined):
                if declined:
                    found.append(DeclinedNode(graph, node.name, node.op_type, group.provider.name, declined))
    return found


def explain_lines(engine: Engine) -> list[str]:
    """``onnxplug run --explain``: one line per declined node, then one per reason."""
    found = declined_nodes(engine)
    if not found:
        return [f"every node runs on its first provider ({engine.providers[0].name})"]
    lines = [f"{len(found)} node(s) declined by a provider offered them first:"]
    for item in found:
        where = f" in body {item.graph!r}" if item.graph else ""
        lines.append(f"  {item.op_type} {item.node_name or '<unnamed>'!r}{where} -> runs on {item.provider}")
        lines += [f"      {d.provider} declined it: {d.kind}: {d.reason}" for d in item.declined]
    return lines
