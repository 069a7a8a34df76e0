"""Loading models from a path, bytes or a ModelProto into the IR, with the onnx package doing the protobuf work."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable, Union

import numpy as np
import onnx
import onnx.inliner
from google.protobuf.message import DecodeError
from onnx import AttributeProto, external_data_helper, numpy_helper, shape_inference

from onnxplug.errors import (
    ExternalDataError,
    ModelFileError,
    ModelLoadError,
    ModelProtobufError,
    ModelValidationError,
)
from onnxplug.ir.declared_types import (
    check_inputs,
    clear_invalid_dims,
    declared_dim_names,
    merge_output,
    untyped_outputs,
)
from onnxplug.ir.element_types import fill_element_types
from onnxplug.ir.graph import Attribute, Graph, Model, Node, ValueInfo
from onnxplug.ir.validate import check_known_op, check_versions, is_ort_default_domain_op, sort_and_check

ModelSource = Union[str, os.PathLike, bytes, onnx.ModelProto]

_TWO_GB = 2**31 - 1


#: ``computes(domain, op_type, version)``: whether the runtime has a kernel for an op
OpComputed = Callable[[str, str, int], bool]


def load_model(source: ModelSource, computes: OpComputed | None = None) -> Model:
    """Read, validate and convert a model. Raises a subclass of ``OnnxplugError`` on bad input.

    Model-local functions of the project's domain whose op ``computes`` says the runtime has stay
    calls; every other function (all, without ``computes``) is inlined."""
    proto, base_dir, label = _read_proto(source)
    check_versions(label, proto.ir_version, _opsets(proto))
    check_inputs(proto.graph, label)
    clear_invalid_dims(proto)
    _load_external_data(proto, base_dir, label)
    kept = {(f.domain, f.name) for f in _kept_functions(proto, computes)}
    if any((f.domain, f.name) not in kept for f in proto.functions):
        proto = (onnx.inliner.inline_selected_functions(proto, sorted(kept), exclude=True) if kept
                 else onnx.inliner.inline_local_functions(proto))
    model = _convert_model(proto, label)
    model.functions = [f for f in proto.functions if (f.domain, f.name) in kept]
    for node in model.graph.walk():
        check_known_op(label, node)
    file_order = {id(n): i for i, n in enumerate(model.graph.nodes)}
    sort_and_check(label, model.graph)
    order = [file_order[id(n)] for n in model.graph.nodes]
    if order != sorted(order):  # the checker wants the proto sorted too
        nodes = [proto.graph.node[i] for i in order]
        del proto.graph.node[:]
        proto.graph.node.extend(nodes)
    size = proto.ByteSize()  # walks the whole message: once, for both steps below
    serialized = _run_checker(proto, label, size)
    _infer_types(proto, model.graph, size, serialized)
    fill_element_types(model.graph)
    return model


#: The project's own domain: calls to its functions stay nodes when the runtime has a kernel.
_OWN_DOMAIN = "com.onnxplug"


def _kept_functions(proto: onnx.ModelProto, computes: OpComputed | None) -> list[onnx.FunctionProto]:
    """Model-local functions of the project's domain whose op the runtime computes.

    They are kept as calls (saved optimized models carry fused ops with a body for other
    runtimes); every other function is inlined.
    """
    own = [f for f in proto.functions if f.domain.startswith(_OWN_DOMAIN)]
    if not own or computes is None:
        return []
    version = {o.domain: o.version for o in proto.opset_import}
    return [f for f in own if computes(f.domain, f.name, version.get(f.domain, 1))]


def _read_proto(source: ModelSource) -> tuple[onnx.ModelProto, Path | None, str]:
    if isinstance(source, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(source)
        _check_fields(copy, "<ModelProto>", "model")
        return copy, None, "<ModelProto>"
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse(bytes(source), "<bytes>"), None, "<bytes>"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModelFileError(f"model {str(path)!r}: cannot read file: {e.strerror or e}") from None
        return _parse(data, repr(str(path))), path.resolve().parent, repr(str(path))
    raise ModelLoadError(f"a model must be a path, bytes or onnx.ModelProto, not {type(source).__name__}")


def _parse(data: bytes, label: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as e:
        raise ModelProtobufError(f"model {label}: not a valid ONNX protobuf (truncated or corrupt): {e}") from None
    if not proto.HasField("graph"):
        raise ModelProtobufError(f"model {label}: the protobuf holds no graph (empty or not an ONNX model)")
    _check_fields(proto, label, "model")
    return proto


#: Fields holding a TensorProto.DataType; a value outside the enum fails deep in onnx's helpers.
_DTYPE_FIELDS = frozenset({"elem_type", "data_type"})
_DTYPES = frozenset(onnx.TensorProto.DataType.values())


def _check_fields(msg, label: str, path: str) -> None:
    """Refuse a string field that is not UTF-8 (protobuf, upb, hands it back as bytes, which would
    fail far away as UnicodeDecodeError or TypeError) and an element type outside the enum.
    Only message, string and element-type fields are read: tensor data is never copied."""
    for field, repeated in _checked_fields(msg.DESCRIPTOR):
        name = field.name
        if field.type == field.TYPE_MESSAGE:
            if repeated:
                for i, item in enumerate(getattr(msg, name)):
                    _check_fields(item, label, f"{path}.{name}[{i}]")
            elif msg.HasField(name):
                _check_fields(getattr(msg, name), label, f"{path}.{name}")
        elif field.type == field.TYPE_STRING:
            value = getattr(msg, name)
            for item in value if repeated else [value]:
                if not isinstance(item, str):
                    raise ModelProtobufError(f"model {label}: {path}.{name} = {bytes(item)!r} is not valid UTF-8")
        elif getattr(msg, name) not in _DTYPES:
            raise ModelValidationError(f"model {label}: {path}.{name} = {getattr(msg, name)} is not an ONNX "
                                       "element type")


@functools.cache
def _checked_fields(descriptor) -> tuple:
    """(field, repeated) of a message type's message, string and element-type fields."""
    return tuple((f, f.is_repeated if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED)
                 for f in descriptor.fields
                 if f.type in (f.TYPE_MESSAGE, f.TYPE_STRING) or f.name in _DTYPE_FIELDS)


def _opsets(proto: onnx.ModelProto) -> dict[str, int]:
    return {("" if o.domain == "ai.onnx" else o.domain): o.version for o in proto.opset_import}


def _load_external_data(proto: onnx.ModelProto, base_dir: Path | None, label: str) -> None:
    tensors = [t for t in external_data_helper._get_all_tensors(proto)
               if external_data_helper.uses_external_data(t)]
    if not tensors:
        return
    if base_dir is None:
        raise ExternalDataError(f"model {label}: tensor {tensors[0].name!r} keeps its data in an external "
                                "file; load the model from its path so the file can be found")
    root = base_dir.resolve()
    for t in tensors:
        try:
            info = external_data_helper.ExternalDataInfo(t)
        except ValueError as e:  # offset or length not a non-negative integer
            raise ExternalDataError(f"model {label}: tensor {t.name!r}: {e}") from None
        location = info.location
        if not location or os.path.isabs(location) or Path(location).is_absolute():
            raise ExternalDataError(f"model {label}: tensor {t.name!r}: external data location "
                                    f"{location!r} must be a path relative to the model's folder")
        target = (root / location).resolve()
        if root != target and root not in target.parents:
            raise ExternalDataError(f"model {label}: tensor {t.name!r}: external data location "
                                    f"{location!r} escapes the model's folder {str(root)!r}")
        if not target.is_file():  # also refuses device files and folders
            raise ExternalDataError(f"model {label}: tensor {t.name!r}: external data file "
                                    f"{location!r} does not exist in {str(root)!r}")
        _check_extent(t.name, location, info.offset or 0, info.length, target.stat().st_size, label)
    try:
        external_data_helper.load_external_data_for_model(proto, str(root))
    except (OSError, ValueError) as e:
        raise ExternalDataError(f"model {label}: cannot read external data: {e}") from None


def _check_extent(name: str, location: str, offset: int, length: int | None, size: int, label: str) -> None:
    """Refuse, before reading, a tensor whose bytes would lie past the end of its file."""
    end = offset + (length if length is not None else 0)
    if offset > size or end > size:
        raise ExternalDataError(f"model {label}: tensor {name!r}: external data at offset {offset}"
                                f"{'' if length is None else f', length {length}'} lies past the end of "
                                f"{location!r} ({size} bytes)")


def _convert_model(proto: onnx.ModelProto, label: str) -> Model:
    opsets = _opsets(proto)
    graph = _convert_graph(proto.graph, opsets, None, label)
    return Model(
        graph=graph, ir_version=proto.ir_version, opsets=opsets,
        producer_name=proto.producer_name, producer_version=proto.producer_version,
        domain=proto.domain, model_version=proto.model_version, doc_string=proto.doc_string,
        metadata_props={p.key: p.value for p in proto.metadata_props}, source=label,
    )


def _convert_graph(gp: onnx.GraphProto, opsets: dict[str, int], parent: Graph | None, label: str) -> Graph:
    initializers = {}
    for t in gp.initializer:
        initializers[t.name] = _to_array(t, label)
    for st in gp.sparse_initializer:
        dense = numpy_helper.to_array(st.values)
        initializers[st.values.name] = _sparse_to_dense(st, dense)
    graph = Graph(
        name=gp.name, nodes=[], opsets=opsets, doc_string=gp.doc_string, parent=parent,
        inputs=[ValueInfo.from_proto(v) for v in gp.input],
        outputs=[ValueInfo.from_proto(v) for v in gp.output],
        initializers=initializers,
        value_info={v.name: ValueInfo.from_proto(v) for v in gp.value_info},
    )
    for i, np_ in enumerate(gp.node):
        graph.nodes.append(_convert_node(np_, opsets, graph, label, i))
    return graph


def _convert_node(np_: onnx.NodeProto, opsets: dict[str, int], graph: Graph, label: str, index: int) -> Node:
    domain = "" if np_.domain == "ai.onnx" else np_.domain
    attrs: dict[str, Attribute] = {}
    for ap in np_.attribute:
        if ap.type == AttributeProto.GRAPH:
            attrs[ap.name] = Attribute(_convert_graph(ap.g, opsets, graph, label), ap.type)
        elif ap.type == AttributeProto.GRAPHS:
            attrs[ap.name] = Attribute([_convert_graph(g, opsets, graph, label) for g in ap.graphs], ap.type)
        elif ap.type == AttributeProto.TENSOR:
            attrs[ap.name] = Attribute(_to_array(ap.t, label), ap.type)
        elif ap.type == AttributeProto.TENSORS:
            attrs[ap.name] = Attribute([_to_array(t, label) for t in ap.tensors], ap.type)
        elif ap.type in (AttributeProto.SPARSE_TENSOR, AttributeProto.TYPE_PROTO):
            attrs[ap.name] = Attribute(onnx.helper.get_attribute_value(ap), ap.type)
        else:
            attrs[ap.name] = Attribute(onnx.helper.get_attribute_value(ap), ap.type)
            try:  # string attributes are protobuf bytes: decoded here, refused by name when not UTF-8
                if ap.type == AttributeProto.STRING:
                    attrs[ap.name].value = attrs[ap.name].value.decode("utf-8")
                elif ap.type == AttributeProto.STRINGS:
                    attrs[ap.name].value = [s.decode("utf-8") for s in attrs[ap.name].value]
            except UnicodeDecodeError:
                raise ModelValidationError(f"model {label}: node {np_.name or f'{np_.op_type}_{index}'!r} "
                                           f"({np_.op_type}): string "
                                           f"attribute {ap.name!r} is not valid UTF-8") from None
    if domain not in opsets:
        raise ModelValidationError(f"model {label}: node {np_.name or index!r} ({np_.op_type}) uses domain "
                                   f"{domain!r}, which the model does not import")
    return Node(op_type=np_.op_type, inputs=list(np_.input), outputs=list(np_.output),
                name=np_.name or f"{np_.op_type}_{index}", domain=domain, attributes=attrs,
                doc_string=np_.doc_string, opset=opsets[domain], overload=np_.overload)


def _to_array(t: onnx.TensorProto, label: str) -> np.ndarray:
    try:
        return numpy_helper.to_array(t)
    except (ValueError, TypeError, KeyError) as e:
        raise ModelValidationError(f"model {label}: tensor {t.name!r} cannot be read: {e}") from None


def _sparse_to_dense(st: onnx.SparseTensorProto, values: np.ndarray) -> np.ndarray:
    dense = np.zeros(tuple(st.dims), dtype=values.dtype)
    idx = numpy_helper.to_array(st.indices)
    if idx.ndim == 1:
        dense.reshape(-1)[idx] = values
    else:
        dense[tuple(idx.T)] = values
    return dense


#: onnxruntime's contrib domain, under which the checker sees its default-domain ops.
ORT_DOMAIN = "com.microsoft"


def _run_checker(proto: onnx.ModelProto, label: str, size: int) -> bytes | None:
    """The onnx checker catches what the structural checks do not (attribute types, arity).

    Returns the serialized model the checker read when it is also the model as loaded, so shape
    inference need not serialize it again (None otherwise)."""
    if size > _TWO_GB:
        return None
    # An input or output of unknown rank is valid at run time (onnxruntime accepts it), but the
    # checker insists on a shape field: give it an empty one for the check only.
    unranked = [vi.type.tensor_type for vi in [*proto.graph.input, *proto.graph.output]
                if vi.type.HasField("tensor_type") and not vi.type.tensor_type.HasField("shape")]
    for t in unranked:
        t.shape.SetInParent()
    # an output without a type takes the inferred one (as in onnxruntime): a placeholder for the check
    untyped = untyped_outputs(proto.graph)
    for vi in untyped:
        vi.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        vi.type.tensor_type.shape.SetInParent()
    # onnxruntime's own default-domain ops have no onnx schema: the checker sees them in its domain
    default_opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    ort_nodes = [(n, n.domain) for n in proto.graph.node
                 if is_ort_default_domain_op(n.domain, n.op_type, default_opset)]
    added_import = None
    if ort_nodes:
        for n, _ in ort_nodes:
            n.domain = ORT_DOMAIN
        if ORT_DOMAIN not in {o.domain for o in proto.opset_import}:
            added_import = proto.opset_import.add(domain=ORT_DOMAIN, version=1)
    serialized = proto.SerializeToString()
    try:
        onnx.checker.check_model(serialized)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "invalid model"
        raise ModelValidationError(f"model {label}: onnx checker: {first}") from None
    finally:
        for t in unranked:
            t.ClearField("shape")
        for vi in untyped:
            vi.ClearField("type")
        for n, domain in ort_nodes:
            n.domain = domain
        if added_import is not None:
            proto.opset_import.remove(added_import)
    return None if unranked or ort_nodes or untyped else serialized


def _infer_types(proto: onnx.ModelProto, graph: Graph, size: int, serialized: bytes | None = None) -> None:
    """Fill value infos from onnx shape inference; a model it cannot infer still runs.

    ``size`` is ``proto.ByteSize()``; ``serialized``, when given, is ``proto`` serialized."""
    if size > _TWO_GB:
        return
    try:
        inferred = shape_inference.infer_shapes(proto if serialized is None else serialized, check_type=False,
                                                strict_mode=False, data_prop=_small_inputs(proto))
    except Exception:  # onnx raises several types; inference is an optimisation here
        return
    _merge_types(inferred.graph, graph, declared_dim_names(proto))


#: onnx's data propagation takes time linear in a declared input's size (Size of a [2^40] input
#: never ends), so it is only asked for when every static input shape is at most this many elements.
_DATA_PROP_MAX_ELEMENTS = 2**20


def _small_inputs(proto: onnx.ModelProto) -> bool:
    for vi in proto.graph.input:
        count = 1
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                count *= max(d.dim_value, 1)
        if count > _DATA_PROP_MAX_ELEMENTS:
            return False
    return True


def _merge_types(inferred: onnx.GraphProto, graph: Graph, names: frozenset[str]) -> None:
    """Copy inferred value infos into ``graph`` and, node by node, into its subgraphs (so the
    optimizer sees the shapes inside If branches and Loop/Scan bodies too); outputs merge the two
    as onnxruntime does (``names``: the dimension names the model declares)."""
    known = {vi.name for vi in graph.inputs} | {vi.name for vi in graph.outputs}
    for vp in inferred.value_info:
        if vp.name not in known:
            graph.value_info[vp.name] = ValueInfo.from_proto(vp)
    for vp, vi in zip(inferred.output, graph.outputs):
        vi.type = merge_output(vi.type, ValueInfo.from_proto(vp).type, names)
    holders = {tuple(n.outputs): n for n in graph.nodes if n.subgraphs}
    for np_ in inferred.node:
        node = holders.get(tuple(np_.output))
        if node is None:
            continue
        for ap in np_.attribute:
            attr = node.attributes.get(ap.name)
            if attr is None:
                continue
            if ap.type == AttributeProto.GRAPH and attr.type == AttributeProto.GRAPH:
                _merge_types(ap.g, attr.value, names)
            elif ap.type == AttributeProto.GRAPHS and attr.type == AttributeProto.GRAPHS:
                for gp, sub in zip(ap.graphs, attr.value):
                    _merge_types(gp, sub, names)
