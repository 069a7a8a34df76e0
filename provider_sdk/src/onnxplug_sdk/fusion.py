"""Finding fusable groups: connected sets of nodes that stay convex when each is contracted to one step.

Nodes are visited in topological order. Each fusable node joins the groups of its fusable producers,
one group at a time, only if the merge leaves the graph of groups acyclic: no path may leave the merged
set (through other nodes or other groups) and come back into it. That is what the partitioner needs to
run every group as one step, and it is why a value read outside a group may still be produced inside it
(the group then exports it) but never be routed back into the same group.
"""

from __future__ import annotations

from typing import Callable, Sequence

from onnxplug.ir import Node
from onnxplug.provider import GraphView


class _Groups:
    def __init__(self, view: GraphView, fixed_groups: Sequence[Sequence[Node]]) -> None:
        self.view = view
        self.nodes = view.graph.nodes
        self.position = {id(n): i for i, n in enumerate(self.nodes)}
        self.group_of: dict[int, int] = {}
        self.members: list[list[Node]] = []
        self.fixed: set[int] = set()
        for group in fixed_groups:  # contracted for the cycle check, never merged
            self.fixed.add(len(self.members))
            for n in group:
                self.group_of[id(n)] = len(self.members)
            self.members.append(list(group))

    def successors(self, node: Node) -> list[Node]:
        found: dict[int, Node] = {}
        for out in node.outputs:
            if out:
                for consumer in self.view.consumers(out):
                    found.setdefault(id(consumer), consumer)
        return list(found.values())

    def stays_acyclic(self, merged: list[Node]) -> bool:
        """True if contracting ``merged`` (other groups contracted too) creates no cycle."""
        inside = {id(n) for n in merged}
        last = max(self.position[id(n)] for n in merged)
        seen: set[int] = set()
        stack = [s for n in merged for s in self.successors(n) if id(s) not in inside]
        while stack:
            node = stack.pop()
            group = self.group_of.get(id(node))
            if id(node) in seen or (self.position.get(id(node), last + 1) > last and group not in self.fixed):
                continue  # nodes after the last member lead back only through a fixed group's earlier members
            seen.add(id(node))
            expand = self.members[group] if group is not None else [node]
            for member in expand:
                seen.add(id(member))
                for succ in self.successors(member):
                    if id(succ) in inside:
                        return False
                    if id(succ) not in seen:
                        stack.append(succ)
        return True

    def add(self, node: Node, producer_groups: list[int]) -> None:
        merged = [node]
        taken = []
        for g in producer_groups:
            trial = merged + self.members[g]
            if self.stays_acyclic(trial):
                merged = trial
                taken.append(g)
        for g in taken:
            self.members[g] = []
        index = len(self.members)
        self.members.append(merged)
        for n in merged:
            self.group_of[id(n)] = index


def find_fusable_groups(view: GraphView, fusable: Callable[[Node], bool], min_size: int = 2,
                        fixed_groups: Sequence[Sequence[Node]] = ()) -> list[list[Node]]:
    """Maximal-by-greedy connected convex groups of ``view.nodes`` for which ``fusable`` holds.

    Groups are returned in topological order of their first node, members in graph order; groups
    smaller than ``min_size`` are left out. Only nodes still offered in ``view`` take part; paths
    through nodes claimed earlier (by other providers) still count for convexity. ``fixed_groups``
    are groups claimed already (say, a provider's own conv groups): they run as one step too, so a
    path through any of their members counts as a path through all of them.
    """
    offered = {id(n) for n in view.nodes}
    groups = _Groups(view, fixed_groups)
    candidates = {id(n) for n in view.nodes if fusable(n)}
    for node in groups.nodes:
        if id(node) not in candidates or id(node) not in offered:
            continue
        producer_groups: list[int] = []
        for name in node.inputs:
            producer = view.producer(name) if name else None
            if producer is not None and id(producer) in groups.group_of:
                g = groups.group_of[id(producer)]
                if g not in groups.fixed and g not in producer_groups:
                    producer_groups.append(g)
        groups.add(node, producer_groups)
    result = [sorted(m, key=lambda n: groups.position[id(n)]) for g, m in enumerate(groups.members)
              if len(m) >= min_size and g not in groups.fixed]
    return sorted(result, key=lambda m: groups.position[id(m[0])])
