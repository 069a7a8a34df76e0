"""The in-memory graph: models, graphs, nodes and value infos, with conversion to and from protobuf."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import onnx
from onnx import AttributeProto, helper, numpy_helper

from onnxplug.ir.types import ValueType, elem_type_of

_GRAPH_ATTRS = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


@dataclass
class ValueInfo:
    """A named value with its type, when known."""

    name: str
    type: ValueType | None = None
    doc_string: str = ""

    def to_proto(self) -> onnx.ValueInfoProto:
        """Convert to a ValueInfoProto."""
        vi = onnx.ValueInfoProto(name=self.name, doc_string=self.doc_string)
        if self.type is not None:
            vi.type.CopyFrom(self.type.to_proto())
        return vi

    @classmethod
    def from_proto(cls, vi: onnx.ValueInfoProto) -> ValueInfo:
        """Convert from a ValueInfoProto."""
        return cls(vi.name, ValueType.from_proto(vi.type), vi.doc_string)


@dataclass
class Attribute:
    """One node attribute: its python value and ONNX attribute type.

    Tensors are numpy arrays; graphs are :class:`Graph` objects.
    """

    value: Any
    type: int

    def to_proto(self, name: str) -> AttributeProto:
        """Convert to an AttributeProto."""
        if self.type == AttributeProto.TENSOR:
            value: Any = numpy_helper.from_array(self.value)
        elif self.type == AttributeProto.TENSORS:
            value = [numpy_helper.from_array(v) for v in self.value]
        elif self.type == AttributeProto.GRAPH:
            value = self.value.to_proto()
        elif self.type == AttributeProto.GRAPHS:
            value = [g.to_proto() for g in self.value]
        else:
            value = self.value
        return helper.make_attribute(name, value, attr_type=self.type)


@dataclass
class Node:
    """One operator call. ``inputs`` holds ``''`` for an omitted optional input."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    name: str = ""
    domain: str = ""
    attributes: dict[str, Attribute] = field(default_factory=dict)
    doc_string: str = ""
    #: The version of ``domain`` the model imports; set when the node joins a graph.
    opset: int = 0
    #: Which overload of a model-local function the node calls (IR >= 10); usually empty.
    overload: str = ""

    def attr(self, name: str, default: Any = None) -> Any:
        """The python value of an attribute, or ``default`` when it is absent."""
        a = self.attributes.get(name)
        return default if a is None else a.value

    @property
    def subgraphs(self) -> list[Graph]:
        """The graphs held in this node's attributes (If branches, Loop and Scan bodies)."""
        found: list[Graph] = []
        for a in self.attributes.values():
            if a.type == AttributeProto.GRAPH:
                found.append(a.value)
            elif a.type == AttributeProto.GRAPHS:
                found.extend(a.value)
        return found

    @property
    def implicit_inputs(self) -> list[str]:
        """Outer-scope values read inside this node's subgraphs, in first-use order."""
        seen: dict[str, None] = {}
        for g in self.subgraphs:
            for name in g.outer_scope_reads():
                seen.setdefault(name, None)
        return list(seen)

    def describe(self) -> str:
        """A short description naming the node for error messages."""
        domain = self.domain or "ai.onnx"
        return f"node {self.name or '<unnamed>'!r} ({domain}::{self.op_type}, opset {self.opset})"

    def to_proto(self) -> onnx.NodeProto:
        """Convert to a NodeProto."""
        node = helper.make_node(self.op_type, self.inputs, self.outputs, name=self.name or None,
                                domain=self.domain or None, doc_string=self.doc_string or None)
        node.attribute.extend(a.to_proto(n) for n, a in self.attributes.items())
        if self.overload:
            node.overload = self.overload
        return node


@dataclass
class Graph:
    """A graph: nodes in topological order, inputs, outputs, initializers and value infos.

    Subgraphs (If/Loop/Scan bodies) are ``Graph`` objects whose ``parent`` is the enclosing graph;
    names they read but do not define come from the outer scope.
    """

    name: str
    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    initializers: dict[str, np.ndarray] = field(default_factory=dict)
    value_info: dict[str, ValueInfo] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    doc_string: str = ""
    parent: Graph | None = field(default=None, repr=False)

    def walk(self) -> Iterator[Node]:
        """Every node of this graph and its subgraphs, depth first."""
        for node in self.nodes:
            yield node
            for g in node.subgraphs:
                yield from g.walk()

    def graphs(self) -> Iterator[Graph]:
        """This graph and every subgraph inside it, outermost first."""
        yield self
        for node in list(self.nodes):
            for sub in node.subgraphs:
                yield from sub.graphs()

    def type_of(self, name: str) -> ValueType | None:
        """The type of a value of this graph or an enclosing one, when known."""
        g: Graph | None = self
        while g is not None:
            for vi in g.inputs:
                if vi.name == name:
                    return vi.type
            for vi in g.outputs:
                if vi.name == name and vi.type is not None:
                    return vi.type
            vi = g.value_info.get(name)
            if vi is not None:
                return vi.type
            if name in g.initializers:
                arr = g.initializers[name]
                return ValueType.tensor(elem_type_of(arr.dtype), tuple(arr.shape))
            g = g.parent
        return None

    def defined_names(self) -> set[str]:
        """Names defined in this graph itself: inputs, initializers and node outputs."""
        names = {vi.name for vi in self.inputs} | set(self.initializers)
        for node in self.nodes:
            names.update(o for o in node.outputs if o)
        return names

    def outer_scope_reads(self) -> list[str]:
        """Names read in this graph or its subgraphs that none of them define."""
        defined = self.defined_names()
        reads: dict[str, None] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name and name not in defined:
                    reads.setdefault(name, None)
            for name in node.implicit_inputs:
                if name not in defined:
                    reads.setdefault(name, None)
        for vi in self.outputs:
            if vi.name not in defined:
                reads.setdefault(vi.name, None)
        return list(reads)

    def to_proto(self) -> onnx.GraphProto:
        """Convert to a GraphProto."""
        return helper.make_graph(
            [n.to_proto() for n in self.nodes], self.name,
            [vi.to_proto() for vi in self.inputs], [vi.to_proto() for vi in self.outputs],
            initializer=[numpy_helper.from_array(a, n) for n, a in self.initializers.items()],
            doc_string=self.doc_string or None,
            value_info=[vi.to_proto() for vi in self.value_info.values()],
        )


@dataclass
class Model:
    """A loaded model: its main graph plus the metadata onnxruntime exposes."""

    graph: Graph
    ir_version: int
    opsets: dict[str, int]
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc_string: str = ""
    metadata_props: dict[str, str] = field(default_factory=dict)
    #: Where the model was loaded from, for messages; ``<bytes>`` or ``<ModelProto>`` otherwise.
    source: str = "<model>"
    #: Model-local functions kept as calls (e.g. com.onnxplug fused ops), saved with the model.
    functions: list[onnx.FunctionProto] = field(default_factory=list)

    def to_proto(self) -> onnx.ModelProto:
        """Convert to a ModelProto that onnx and onnxruntime load."""
        model = helper.make_model(
            self.graph.to_proto(),
            opset_imports=[helper.make_opsetid(d, v) for d, v in self.opsets.items()],
            producer_name=self.producer_name, producer_version=self.producer_version,
            domain=self.domain, model_version=self.model_version, doc_string=self.doc_string,
            functions=self.functions,
        )
        model.ir_version = self.ir_version
        helper.set_model_props(model, self.metadata_props)
        return model
