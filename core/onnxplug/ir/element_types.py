"""Element types that onnx shape inference leaves unknown: it stops at onnxruntime's contrib ops
(``com.microsoft``, no schema in onnx) and types few outputs of ``ai.onnx.ml`` ops, so values after
a SkipLayerNormalization, a MatMulNBits or a classifier's scores are untyped and providers that
check element types decline the rest of the model.

In graph order, a contrib op's outputs take the element type its definition gives them (that of
an input, or a fixed one); a standard or ``ai.onnx.ml`` op's outputs take the element type its
schema binds: a type parameter shared with a typed input, or one allowed type. ``ai.onnx.ml``
outputs whose type an attribute chooses (a classifier's label, LabelEncoder's output, ...) follow
the ONNX-ML spec (:mod:`onnxplug.ir.ml_types`); a standard op whose output type an attribute
chooses, or any op with subgraphs, is left alone. Only element types are filled, not ranks.
"""

from __future__ import annotations

from onnx import TensorProto, defs

from onnxplug.ir.graph import Graph, Node, ValueInfo
from onnxplug.ir.ml_types import ML_DOMAIN, ml_output_types
from onnxplug.ir.types import ValueType

#: com.microsoft ops: output index -> the input index whose element type it has, or a fixed type.
_CONTRIB: dict[str, dict[int, int | tuple[int]]] = {
    "SkipLayerNormalization": {0: 0, 3: 0},
    "SkipSimplifiedLayerNormalization": {0: 0, 3: 0},
    "SimplifiedLayerNormalization": {0: 0},
    "LayerNormalization": {0: 0},
    "EmbedLayerNormalization": {0: 2, 1: (TensorProto.INT32,), 2: 2},
    "Attention": {0: 0, 1: 0},
    "MultiHeadAttention": {0: 0, 1: 0, 2: 0},
    "GroupQueryAttention": {0: 0, 1: 0, 2: 0},
    "RotaryEmbedding": {0: 0},
    "BiasGelu": {0: 0},
    "FastGelu": {0: 0},
    "Gelu": {0: 0},
    "QuickGelu": {0: 0},
    "BiasAdd": {0: 0},
    "BiasSplitGelu": {0: 0},
    "MatMulNBits": {0: 0},
    "FusedMatMul": {0: 0},
    "FusedGemm": {0: 0},
    "FusedConv": {0: 0},
    "QEmbedLayerNormalization": {0: (TensorProto.FLOAT,), 1: (TensorProto.INT32,)},
    "QAttention": {0: 2, 1: 2},
    "MatMulIntegerToFloat": {0: 2},
    "DynamicQuantizeMatMul": {0: 0},
    "QGemm": {0: 8},
    "QLinearAdd": {0: 0},
    "QLinearMul": {0: 0},
    "QLinearGlobalAveragePool": {0: 0},
    "QLinearAveragePool": {0: 0},
    "QLinearLeakyRelu": {0: 0},
    "QLinearSigmoid": {0: 0},
}
_CONTRIB_DOMAIN = "com.microsoft"
#: Attributes that choose an output's element type: such ops are left to shape inference.
_TYPE_ATTRIBUTES = frozenset({"to", "dtype", "output_dtype", "value", "saturate"})


def fill_element_types(graph: Graph) -> int:
    """Give untyped tensor outputs of ``graph``'s nodes (in order) the element type their op
    determines; returns how many values were typed."""
    typed = 0
    outputs = {vi.name for vi in graph.outputs}
    for node in graph.nodes:
        if node.subgraphs or all(not o or _elem(graph, o) for o in node.outputs):
            continue
        for index, elem in _output_types(graph, node).items():
            name = node.outputs[index] if index < len(node.outputs) else ""
            if name and name not in outputs and not _elem(graph, name):
                graph.value_info[name] = ValueInfo(name, ValueType("tensor", elem, None))
                typed += 1
    return typed


def _elem(graph: Graph, name: str) -> int:
    t = graph.type_of(name)
    return t.elem_type if t is not None and t.kind == "tensor" else 0


def _output_types(graph: Graph, node: Node) -> dict[int, int]:
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    if domain == ML_DOMAIN:
        chosen = ml_output_types(node, lambda name: graph.type_of(name) if name else None)
        return {**_schema_types(graph, node, domain), **chosen}
    if domain == _CONTRIB_DOMAIN:
        found = {}
        for out, source in _CONTRIB.get(node.op_type, {}).items():
            if isinstance(source, tuple):
                found[out] = source[0]
            elif source < len(node.inputs) and node.inputs[source] and _elem(graph, node.inputs[source]):
                found[out] = _elem(graph, node.inputs[source])
        return found
    if domain or _TYPE_ATTRIBUTES & set(node.attributes):
        return {}
    return _schema_types(graph, node, domain)


def _schema_types(graph: Graph, node: Node, domain: str) -> dict[int, int]:
    """Output element types ``node``'s schema binds: shared with a typed input, or the one allowed."""
    try:
        schema = defs.get_schema(node.op_type, node.opset or 1, domain)
    except defs.SchemaError:
        return {}
    bound: dict[str, int] = {}
    for i, name in enumerate(node.inputs):
        if not name or not schema.inputs:
            continue
        formal = schema.inputs[min(i, len(schema.inputs) - 1)]
        if i >= len(schema.inputs) and formal.option != defs.OpSchema.FormalParameterOption.Variadic:
            continue
        elem = _elem(graph, name)
        if elem:
            bound.setdefault(formal.type_str, elem)
    allowed = {c.type_param_str: list(c.allowed_type_strs) for c in schema.type_constraints}
    found = {}
    for i in range(len(node.outputs)):
        if not schema.outputs:
            break
        formal = schema.outputs[min(i, len(schema.outputs) - 1)]
        type_str = formal.type_str
        if type_str in bound:
            found[i] = bound[type_str]
            continue
        choices = allowed.get(type_str, [type_str])
        if len(choices) == 1 and choices[0].startswith("tensor(") and choices[0].endswith(")"):
            elem = _TENSOR_TYPES.get(choices[0][len("tensor("):-1])
            if elem:
                found[i] = elem
    return found


_TENSOR_TYPES = {
    "float": TensorProto.FLOAT, "double": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "int64": TensorProto.INT64, "int32": TensorProto.INT32,
    "int16": TensorProto.INT16, "int8": TensorProto.INT8, "uint64": TensorProto.UINT64,
    "uint32": TensorProto.UINT32, "uint16": TensorProto.UINT16, "uint8": TensorProto.UINT8,
    "bool": TensorProto.BOOL, "string": TensorProto.STRING,
}
