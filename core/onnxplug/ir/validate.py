"""Structural validation of a graph: every failure is a typed error naming its culprit."""

from __future__ import annotations

import heapq

import onnx.defs

from onnxplug.errors import (
    DuplicateDefinitionError,
    GraphCycleError,
    UndefinedValueError,
    UnknownOpError,
    UnsupportedIRVersionError,
    UnsupportedOpsetError,
)
from onnxplug.ir.graph import Graph, Node

MIN_IR_VERSION = 3
MAX_IR_VERSION = onnx.IR_VERSION
#: Domains whose ops onnx defines: {domain: (lowest, highest) opset version}.
KNOWN_DOMAINS: dict[str, tuple[int, int]] = dict(onnx.defs.C.schema_version_map())
#: Ops onnxruntime runs in the default domain without an onnx schema, accepted there like custom-domain
#: ops up to the opset given (None: any): those its transformer optimizer writes into models of any
#: opset, and the experimental ops of onnx before opset 10 (ImageScaler in old model-zoo CNNs, ...).
ORT_DEFAULT_DOMAIN_OPS: dict[str, int | None] = {
    "LayerNormalization": None, "SimplifiedLayerNormalization": None,
    **dict.fromkeys(("Affine", "Crop", "DynamicSlice", "ImageScaler", "ParametricSoftplus", "Scale", "ScaledTanh"), 9),
}


def check_versions(source: str, ir_version: int, opsets: dict[str, int]) -> None:
    """Refuse IR versions and opset imports outside what this runtime knows."""
    if not MIN_IR_VERSION <= ir_version <= MAX_IR_VERSION:
        raise UnsupportedIRVersionError(
            f"model {source}: IR version {ir_version} is not supported "
            f"(supported: {MIN_IR_VERSION}..{MAX_IR_VERSION})")
    # No default-domain import is required: a model may use only ai.onnx.ml (or another domain).
    for domain, version in opsets.items():
        bounds = KNOWN_DOMAINS.get(domain)
        if bounds is not None and not bounds[0] <= version <= bounds[1]:
            raise UnsupportedOpsetError(
                f"model {source}: opset {version} of domain {domain or 'ai.onnx'!r} is not supported "
                f"(supported: {bounds[0]}..{bounds[1]})")


def is_ort_default_domain_op(domain: str, op_type: str, opset: int) -> bool:
    """Whether a default-domain node is one of ORT_DEFAULT_DOMAIN_OPS at an opset it is accepted at."""
    if domain not in ("", "ai.onnx") or op_type not in ORT_DEFAULT_DOMAIN_OPS:
        return False
    highest = ORT_DEFAULT_DOMAIN_OPS[op_type]
    return highest is None or opset <= highest


def check_known_op(source: str, node: Node) -> None:
    """Refuse an op that its (onnx-defined) domain does not have at the imported version."""
    if node.domain not in KNOWN_DOMAINS or is_ort_default_domain_op(node.domain, node.op_type, node.opset):
        return  # custom domains: a provider may claim them; the partitioner reports it otherwise
    try:
        onnx.defs.get_schema(node.op_type, node.opset, node.domain)
    except (onnx.defs.SchemaError, TypeError):  # TypeError: an op type that is not a str
        raise UnknownOpError(f"model {source}: {node.describe()}: unknown op "
                             f"{node.op_type!r} in domain {node.domain or 'ai.onnx'!r} "
                             f"at opset {node.opset}") from None


def sort_and_check(source: str, graph: Graph, outer: frozenset[str] = frozenset()) -> None:
    """Check single assignment and defined reads, then sort ``graph.nodes`` topologically in place.

    ``outer`` holds the names visible from enclosing graphs. Subgraphs are checked recursively.
    """
    where = f"model {source}, graph {graph.name!r}"
    defined: dict[str, str] = {}
    for vi in graph.inputs:
        defined[vi.name] = "graph input"
    for name in graph.initializers:
        defined.setdefault(name, "initializer")
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for out in node.outputs:
            if not out:
                continue
            if out in defined:
                raise DuplicateDefinitionError(
                    f"{where}: {node.describe()} defines output {out!r}, already defined by {defined[out]}")
            defined[out] = node.describe()
            producer[out] = i

    visible = outer | frozenset(defined)
    deps: list[set[int]] = []
    for node in graph.nodes:
        for g in node.subgraphs:
            sort_and_check(source, g, visible)
        needs: set[int] = set()
        for name in [*node.inputs, *node.implicit_inputs]:
            if not name:
                continue
            if name not in visible:
                raise UndefinedValueError(f"{where}: {node.describe()} reads undefined value {name!r}")
            if name in producer:
                needs.add(producer[name])
        deps.append(needs)
    for vi in graph.outputs:
        if vi.name not in visible:
            raise UndefinedValueError(f"{where}: graph output {vi.name!r} is never defined")

    graph.nodes = [graph.nodes[i] for i in _topological_order(where, graph.nodes, deps)]


def _topological_order(where: str, nodes: list[Node], deps: list[set[int]]) -> list[int]:
    """Kahn's algorithm, keeping the file order among ready nodes (stable)."""
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(nodes):
        stuck = [nodes[i].describe() for i, w in enumerate(waiting) if w > 0]
        raise GraphCycleError(f"{where}: the graph has a cycle through {', '.join(stuck[:6])}"
                              + (" ..." if len(stuck) > 6 else ""))
    return order
