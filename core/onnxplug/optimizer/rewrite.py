"""Helpers for rewriting a graph: who produces and reads each value, renaming uses, removing nodes.

Passes build one :class:`GraphIndex` per graph they rewrite and make every change through it, so
the producer/consumer maps stay right while a pass walks the graph. Reads from subgraphs (an If
branch reading an outer value) count as uses by the node holding the subgraph.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from onnx import AttributeProto

from onnxplug.ir import Attribute, Graph, Model, Node, ValueInfo, ValueType
from onnxplug.ir.types import Dim, elem_type_of


def model_graphs(model: Model) -> list[Graph]:
    """The main graph and all its subgraphs."""
    return list(model.graph.graphs())


class NameSource:
    """Fresh value and node names that collide with nothing in the model."""

    def __init__(self, model_or_graph: Model | Graph) -> None:
        graph = model_or_graph.graph if isinstance(model_or_graph, Model) else model_or_graph
        while graph.parent is not None:
            graph = graph.parent
        self._taken: set[str] = set()
        for g in graph.graphs():
            self._taken.update(vi.name for vi in g.inputs)
            self._taken.update(vi.name for vi in g.outputs)
            self._taken.update(g.initializers)
            for node in g.nodes:
                self._taken.update(node.outputs)
                self._taken.add(node.name)

    def fresh(self, base: str) -> str:
        """``base`` or ``base_<k>``, whichever is free; the name is then taken."""
        name, k = base, 1
        while name in self._taken:
            name = f"{base}_{k}"
            k += 1
        self._taken.add(name)
        return name


def make_attribute(value: Any) -> Attribute:
    """An :class:`Attribute` for a python value: int, float, str, list of ints/floats/strs, array."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, np.ndarray):
        return Attribute(value, AttributeProto.TENSOR)
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        return Attribute(int(value), AttributeProto.INT)
    if isinstance(value, (float, np.floating)):
        return Attribute(float(value), AttributeProto.FLOAT)
    if isinstance(value, str):
        return Attribute(value, AttributeProto.STRING)
    items = list(value)
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items) and items:
        return Attribute([int(v) for v in items], AttributeProto.INTS)
    if all(isinstance(v, str) for v in items) and items:
        return Attribute(items, AttributeProto.STRINGS)
    return Attribute([float(v) for v in items], AttributeProto.FLOATS)


class GraphIndex:
    """Producers and consumers of one graph's values, kept current by the edit methods."""

    def __init__(self, graph: Graph, names: NameSource | None = None) -> None:
        self.graph = graph
        self.names = names or NameSource(graph)
        self.producer: dict[str, Node] = {}
        self._consumers: dict[str, list[Node]] = defaultdict(list)
        for node in graph.nodes:
            self._link(node)
        self.graph_outputs = {vi.name for vi in graph.outputs}
        self.graph_inputs = {vi.name for vi in graph.inputs}

    # --- queries ------------------------------------------------------------------------------

    def consumers(self, name: str) -> list[Node]:
        """Nodes reading ``name`` (each once), including nodes whose subgraphs read it."""
        return list(self._consumers.get(name, ()))

    def is_graph_output(self, name: str) -> bool:
        """Whether ``name`` is an output of this graph."""
        return name in self.graph_outputs

    def is_used(self, name: str) -> bool:
        """Whether anything reads ``name`` or the graph returns it."""
        return bool(self._consumers.get(name)) or name in self.graph_outputs

    def only_consumer(self, name: str) -> Node | None:
        """The one node reading ``name``, when nothing else reads or returns it."""
        users = self._consumers.get(name, ())
        if len(users) != 1 or name in self.graph_outputs:
            return None
        return users[0]

    def private(self, name: str, reader: Node) -> bool:
        """Whether ``reader`` is the only reader of ``name`` and it is no graph output."""
        return self.only_consumer(name) is reader

    def producer_of(self, name: str, op_type: str | None = None, domain: str = "") -> Node | None:
        """The node computing ``name`` (optionally only if it has that op type and domain)."""
        node = self.producer.get(name)
        if node is None or (op_type is not None and (node.op_type != op_type or node.domain != domain)):
            return None
        return node

    def constant(self, name: str) -> np.ndarray | None:
        """The value of an initializer no feed can override (searched outward), else None."""
        if not name:
            return None
        g: Graph | None = self.graph
        while g is not None:
            is_input = any(vi.name == name for vi in g.inputs)
            if name in g.initializers:
                return None if is_input else g.initializers[name]
            if is_input:
                return None
            g = g.parent
        return None

    def type_of(self, name: str) -> ValueType | None:
        """The type of a value when known."""
        return self.graph.type_of(name)

    def shape_of(self, name: str) -> tuple[Dim, ...] | None:
        """The (possibly symbolic) shape of a tensor value, or None when its rank is unknown."""
        const = self.constant(name)
        if const is not None:
            return tuple(const.shape)
        t = self.type_of(name)
        if t is None or t.kind != "tensor":
            return None
        return t.shape

    def static_shape(self, name: str) -> tuple[int, ...] | None:
        """The shape when every dimension is a known integer."""
        shape = self.shape_of(name)
        if shape is None or not all(isinstance(d, int) for d in shape):
            return None
        return tuple(int(d) for d in shape)  # type: ignore[arg-type]

    def rank_of(self, name: str) -> int | None:
        """The rank when known."""
        shape = self.shape_of(name)
        return None if shape is None else len(shape)

    def dtype_of(self, name: str) -> np.dtype | None:
        """The numpy dtype of a tensor value when known."""
        const = self.constant(name)
        if const is not None:
            return const.dtype
        t = self.type_of(name)
        return t.dtype if t is not None else None

    # --- edits --------------------------------------------------------------------------------

    def _link(self, node: Node) -> None:
        for out in node.outputs:
            if out:
                self.producer[out] = node
        for name in _reads(node):
            self._consumers[name].append(node)

    def _unlink(self, node: Node) -> None:
        for out in node.outputs:
            if out and self.producer.get(out) is node:
                del self.producer[out]
        for name in _reads(node):
            users = self._consumers.get(name)
            if users and any(u is node for u in users):
                users[:] = [u for u in users if u is not node]

    def insert(self, node: Node, near: Node | None = None, after: bool = True) -> Node:
        """Add ``node`` after (or before) ``near``, or at the end; sets its opset."""
        if not node.opset:
            node.opset = self.graph.opsets.get(node.domain, 1)
        if not node.name:
            node.name = self.names.fresh(f"{node.op_type}_opt")
        if near is None:
            self.graph.nodes.append(node)
        else:
            position = next(i for i, n in enumerate(self.graph.nodes) if n is near)
            self.graph.nodes.insert(position + 1 if after else position, node)
        self._link(node)
        return node

    def remove(self, *nodes: Node) -> None:
        """Delete nodes from the graph (their outputs must be unused or already rerouted)."""
        gone = {id(n) for n in nodes}
        for node in nodes:
            self._unlink(node)
        self.graph.nodes[:] = [n for n in self.graph.nodes if id(n) not in gone]

    def set_input(self, node: Node, position: int, name: str) -> None:
        """Point one input of ``node`` at another value."""
        self._unlink(node)
        node.inputs[position] = name
        self._link(node)

    def set_inputs(self, node: Node, inputs: list[str]) -> None:
        """Replace the whole input list of ``node``."""
        self._unlink(node)
        node.inputs = list(inputs)
        self._link(node)

    def set_output(self, node: Node, position: int, name: str) -> None:
        """Make ``node`` compute ``name`` at output ``position`` (whose old value must be unused)."""
        self._unlink(node)
        node.outputs[position] = name
        self._link(node)

    def absorb(self, node: Node, removed: list[Node], result: str) -> None:
        """Replace the pattern ``removed`` by ``node``, which now computes ``result`` (same name)."""
        self.remove(*removed)
        if not any(n is node for n in self.graph.nodes):
            self.insert(node)
        self.set_output(node, 0, result)

    def replace_uses(self, old: str, new: str) -> None:
        """Make every reader of ``old`` read ``new`` (graph outputs are left alone)."""
        if old == new:
            return
        for node in self.consumers(old):
            self._unlink(node)
            node.inputs = [new if i == old else i for i in node.inputs]
            for sub in node.subgraphs:
                _rename_reads(sub, old, new)
            self._link(node)

    def rename_value(self, old: str, new: str) -> None:
        """Rename a value computed by a node of this graph (its producer and all readers)."""
        producer = self.producer[old]
        self._unlink(producer)
        producer.outputs = [new if o == old else o for o in producer.outputs]
        self._link(producer)
        self.replace_uses(old, new)
        vi = self.graph.value_info.pop(old, None)
        if vi is not None and new not in self.graph.value_info:
            self.graph.value_info[new] = ValueInfo(new, vi.type)

    def bypass(self, node: Node, source: str, result: str) -> bool:
        """Remove ``node`` whose output ``result`` equals ``source``: readers of ``result`` read ``source``.

        When ``result`` is a graph output, ``source`` is renamed to it instead, which needs
        ``source`` to be computed by a node of this graph and not returned itself. Returns False
        (and changes nothing) when neither is possible.
        """
        if result in self.graph_outputs:
            if (source in self.graph_outputs or source in self.graph_inputs
                    or self.producer.get(source) is None or self.producer[source] is node):
                return False
            self.remove(node)
            self.rename_value(source, result)
            return True
        self.remove(node)
        self.replace_uses(result, source)
        return True

    def add_initializer(self, base: str, value: np.ndarray) -> str:
        """Add a constant under a fresh name and return the name."""
        name = self.names.fresh(base)
        self.graph.initializers[name] = np.asarray(value)
        return name

    def set_type(self, name: str, dtype: np.dtype, shape: tuple[Dim, ...] | None) -> None:
        """Record the type of a new value, so later passes can reason about it."""
        if name in self.graph_outputs or name in self.graph_inputs:
            return
        self.graph.value_info[name] = ValueInfo(name, ValueType.tensor(elem_type_of(dtype), shape))

    def copy_type(self, source: str, target: str) -> None:
        """Give ``target`` the known type of ``source``."""
        t = self.type_of(source)
        if t is not None and target not in self.graph_outputs:
            self.graph.value_info[target] = ValueInfo(target, t)


def _reads(node: Node) -> dict[str, None]:
    """The distinct names a node reads, its subgraphs' outer-scope reads included."""
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attributes.values()):
        return dict.fromkeys(n for n in [*node.inputs, *node.implicit_inputs] if n)
    return dict.fromkeys(n for n in node.inputs if n)


def _rename_reads(graph: Graph, old: str, new: str) -> None:
    """Rename reads of an outer-scope value inside a subgraph (recursively)."""
    for node in graph.nodes:
        node.inputs = [new if i == old else i for i in node.inputs]
        for sub in node.subgraphs:
            _rename_reads(sub, old, new)
    for vi in graph.outputs:
        if vi.name == old:
            vi.name = new


def prune_value_info(model: Model) -> None:
    """Drop value infos of names no longer defined anywhere (stale after rewrites)."""
    for g in model_graphs(model):
        defined = g.defined_names()
        for name in [n for n in g.value_info if n not in defined]:
            del g.value_info[name]
