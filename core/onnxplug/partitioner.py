"""The partitioner: gives every node to a provider, in the user's order, the default provider last.

Each provider is offered the nodes still unclaimed; for each offered node it leaves, the partitioner
asks ``provider.explain`` why and keeps the :class:`~onnxplug.provider.Decline` on the node's group,
so every node that did not go to the first provider says why each earlier one declined it.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace
from typing import Sequence

from onnxplug.errors import FallbackDisabledError, NotImplementedOpError, PartitionError
from onnxplug.ir import Graph, Node
from onnxplug.provider import Capability, Decline, ExecutionProvider, FusedSubgraph, GraphView


@dataclass
class Group:
    """Nodes that run as one step on one provider: a single node, or a fused subgraph."""

    provider: ExecutionProvider
    nodes: list[Node]
    fused: bool
    name: str
    inputs: list[str]
    outputs: list[str]
    #: One entry per node of ``nodes``: the declines of the providers offered it before ``provider``.
    declined: list[tuple[Decline, ...]] = field(default_factory=list)


def partition(graph: Graph, providers: Sequence[ExecutionProvider], *, fallback_disabled: bool,
              source: str) -> list[Group]:
    """Assign every node of ``graph`` and return the groups in a valid execution order.

    ``providers`` are tried in order; each claims among the nodes still unclaimed.
    With ``fallback_disabled``, the caller leaves the default provider out unless the user asked
    for it, and unclaimed nodes raise :class:`FallbackDisabledError` listing all of them.
    """
    owner: dict[int, int] = {}  # id(node) -> index into claims
    claims: list[tuple[ExecutionProvider, Capability]] = []
    declined: dict[int, list[Decline]] = {}
    for provider in providers:
        view = GraphView(graph, [n for n in graph.nodes if id(n) not in owner])
        if not view.nodes:
            break
        allowed = {id(n) for n in view.nodes}
        for cap in provider.get_capability(view):
            if not cap.nodes:
                continue
            taken = [n for n in cap.nodes if id(n) not in allowed or id(n) in owner]
            if taken:
                raise PartitionError(f"model {source}: provider {provider.name!r} claimed "
                                     f"{taken[0].describe()}, which was not offered to it or is claimed twice")
            for n in cap.nodes:
                owner[id(n)] = len(claims)
            claims.append((provider, cap))
        for n in view.nodes:
            if id(n) not in owner:
                declined.setdefault(id(n), []).append(_explain(provider, n, view))

    missing = [n for n in graph.nodes if id(n) not in owner]
    if missing:
        listing = "; ".join(f"{n.describe()} ({'; '.join(f'{d.provider}: {d}' for d in declined.get(id(n), []))})"
                            for n in missing)
        names = ", ".join(repr(p.name) for p in providers)
        if fallback_disabled:
            raise FallbackDisabledError(
                f"model {source}: session.disable_cpu_ep_fallback is set and providers [{names}] "
                f"did not claim {len(missing)} node(s): {listing}")
        raise NotImplementedOpError(f"model {source}: no provider of [{names}] can run "
                                    f"{len(missing)} node(s): {listing}")
    return _order_groups(graph, claims, owner, source, declined)


def _explain(provider: ExecutionProvider, node: Node, view: GraphView) -> Decline:
    try:
        decline = provider.explain(node, view)
    except Exception as exc:  # an explanation must never fail partitioning
        decline = Decline("other", f"explain failed: {type(exc).__name__}: {exc}")
    if not isinstance(decline, Decline):
        decline = Decline("other", str(decline) or "no reason given")
    return replace(decline, provider=provider.name)


def _order_groups(graph: Graph, claims: list[tuple[ExecutionProvider, Capability]],
                  owner: dict[int, int], source: str, declined: dict[int, list[Decline]]) -> list[Group]:
    producer_group: dict[str, int] = {}
    for node in graph.nodes:
        for out in node.outputs:
            if out:
                producer_group[out] = owner[id(node)]
    outputs = {vi.name for vi in graph.outputs}
    groups: list[Group] = []
    deps: list[set[int]] = []
    first_index: list[int] = []
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    for gi, (provider, cap) in enumerate(claims):
        nodes = sorted(cap.nodes, key=lambda n: position[id(n)])
        inside = {o for n in nodes for o in n.outputs if o}
        reads: dict[str, None] = {}
        for n in nodes:
            for name in [*n.inputs, *n.implicit_inputs]:
                if name and name not in inside:
                    reads.setdefault(name)
        if cap.fused:
            member = {id(n) for n in nodes}
            used_outside = {name for n in graph.nodes if id(n) not in member
                            for name in [*n.inputs, *n.implicit_inputs]}
            outs = [o for n in nodes for o in n.outputs if o and (o in outputs or o in used_outside)]
        else:
            outs = list(nodes[0].outputs)
        name = cap.name or (f"{provider.name}_fused_{gi}" if cap.fused else nodes[0].name)
        groups.append(Group(provider, nodes, cap.fused, name, list(reads), outs,
                            [tuple(declined.get(id(n), ())) for n in nodes]))
        deps.append({producer_group[r] for r in reads if r in producer_group and producer_group[r] != gi})
        first_index.append(position[id(nodes[0])])

    users: list[list[int]] = [[] for _ in groups]
    waiting = [len(d) for d in deps]
    for gi, d in enumerate(deps):
        for j in d:
            users[j].append(gi)
    ready = [(first_index[gi], gi) for gi, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[Group] = []
    while ready:
        _, gi = heapq.heappop(ready)
        order.append(groups[gi])
        for u in users[gi]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, (first_index[u], u))
    if len(order) < len(groups):
        bad = [groups[gi] for gi, w in enumerate(waiting) if w > 0 and groups[gi].fused]
        culprit = f"fused subgraph {bad[0].name!r} of provider {bad[0].provider.name!r}" if bad else "a claim"
        raise PartitionError(f"model {source}: {culprit} is not convex: a path leaves it and re-enters, "
                             "so it cannot run as one step")
    return order


def fused_subgraph(group: Group, graph: Graph) -> FusedSubgraph:
    """The description a compiling provider receives for one fused group."""
    return FusedSubgraph(group.name, group.nodes, group.inputs, group.outputs, GraphView(graph, group.nodes))
