"""Which nodes the numpy provider wants channels-last (``NumpyProvider.preferred_layout``).

Depthwise convolutions are much cheaper channels-last in numpy (see kernels/conv/channels_last.py), a
1x1 convolution costs the same either way, and a dense one on a few channels (a stem) less. So the
provider asks NHWC for the depthwise convolutions, and for the 1x1 and few-channel convolutions and
global average pools connected to one through elementwise ops or other such nodes: MobileNet-style
networks then run channels-last from their stem to their pooling, with one Transpose at each end
(the one before the stem moves its few-channel input). Networks without depthwise
layers (ResNets) stay NCHW, where im2col serves their dense kernels best.
"""

from __future__ import annotations

from onnxplug.fused_schemas import NHWC_DOMAIN, OWN_DOMAIN
from onnxplug.ir import Graph, Node
from onnxplug.optimizer.passes.transpose_optimization import BINARY, UNARY
from onnxplug.providers.numpy.kernels.conv.channels_last import DENSE_MAX_CHANNELS, FAST_DTYPES

#: Ops a channels-last region may pass through: the elementwise ops TransposeOptimization pushes
#: Transposes through, so none is left inside a region.
ELEMENTWISE = UNARY | BINARY
_CONVS = {("", "Conv"), (OWN_DOMAIN, "FusedConv"), (NHWC_DOMAIN, "Conv"), (NHWC_DOMAIN, "FusedConv")}
_POOLS = {("", "GlobalAveragePool"), (NHWC_DOMAIN, "GlobalAveragePool")}


def _conv_kind(graph: Graph, node: Node) -> str | None:
    """"depthwise", "pointwise" (1x1, one group), "dense" (one group, at most DENSE_MAX_CHANNELS
    input channels) or None for a 2-D convolution of known shapes."""
    if (node.domain, node.op_type) not in _CONVS or len(node.inputs) < 2:
        return None
    x, w = graph.type_of(node.inputs[0]), graph.type_of(node.inputs[1])
    if x is None or w is None or x.shape is None or w.shape is None or len(x.shape) != 4 or len(w.shape) != 4:
        return None
    if x.dtype not in FAST_DTYPES:  # others run the NCHW kernel between transposes: no gain
        return None
    channels = x.shape[3] if node.domain == NHWC_DOMAIN else x.shape[1]
    group = int(node.attr("group", 1))
    if not isinstance(channels, int):
        return None
    if group == channels and w.shape[0] == channels and w.shape[1] == 1 and group > 1:
        return "depthwise"
    if group == 1 and tuple(w.shape[2:]) == (1, 1):
        return "pointwise"
    if group == 1 and channels <= DENSE_MAX_CHANNELS:
        return "dense"
    return None


def _member(graph: Graph, node: Node) -> str | None:
    """The node's part in a channels-last region: a conv kind, "pool", "elementwise" or None."""
    if (node.domain, node.op_type) in _POOLS:
        return "pool"
    if node.domain == "" and node.op_type in ELEMENTWISE:
        return "elementwise"
    return _conv_kind(graph, node)


def _data_inputs(node: Node, role: str) -> list[str]:
    """The inputs that carry the region's tensors: all of an elementwise op's; the data and
    FusedConv's residual Z of a convolution or pool (not weights)."""
    if role == "elementwise":
        return [name for name in node.inputs if name]
    names = node.inputs[:1]
    if node.op_type == "FusedConv" and len(node.inputs) > 3:
        names = names + node.inputs[3:4]
    return [name for name in names if name]


def channels_last_nodes(graph: Graph) -> set[int]:
    """ids of the layout-sensitive nodes of ``graph`` the provider wants channels-last."""
    roles = {id(n): _member(graph, n) for n in graph.nodes}
    producers: dict[str, Node] = {}
    consumers: dict[str, list[Node]] = {}
    for node in graph.nodes:
        role = roles[id(node)]
        if role is None:
            continue
        for name in node.outputs:
            producers[name] = node
        for name in _data_inputs(node, role):
            consumers.setdefault(name, []).append(node)
    wanted: set[int] = set()
    seen: set[int] = set()
    for start in graph.nodes:
        if id(start) in seen or roles[id(start)] in (None, "elementwise"):
            continue
        region, stack = [], [start]  # nodes connected through data (not weight) edges
        seen.add(id(start))
        while stack:
            node = stack.pop()
            region.append(node)
            neighbours = [producers.get(name) for name in _data_inputs(node, roles[id(node)])]
            for name in node.outputs:
                neighbours.extend(consumers.get(name, []))
            for other in neighbours:
                if other is not None and id(other) not in seen:
                    seen.add(id(other))
                    stack.append(other)
        if any(roles[id(n)] == "depthwise" for n in region):
            wanted.update(id(n) for n in region if roles[id(n)] != "elementwise")
    return wanted
