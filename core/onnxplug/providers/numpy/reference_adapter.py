"""Kernels wrapping ``onnx.reference`` implementations, for rare ops without a native kernel.

:func:`reference_kernel` is the numpy provider's last resort: it returns a :class:`Kernel`
subclass that instantiates onnx's reference op once per node (from ``node.to_proto()``, with the
``run_params`` :class:`onnx.reference.ReferenceEvaluator` builds) and calls its ``run`` in
``compute``. Which ops are served this way is listed in ``docs/numpy-provider-ops.md``
(``python -m onnxplug.providers.numpy.op_table``).

Ops onnx defines only by a function body are run through that body with the reference
evaluator; ops whose body depends on input types (context-dependent functions) build it on the
first call for each input-type signature. Nodes of ops where onnx.reference departs from the spec
and onnxruntime are rewritten first (:data:`_PROTO_FIXES`).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import numpy as np
import onnx

from onnxplug.ir import Node
from onnxplug.kernel import Kernel, KernelContext
from onnxplug.providers.numpy.ops._base import NumpyKernel

#: Domains whose ops onnx.reference implements, with the module holding their ``load_op``.
_DOMAIN_LOADERS = {
    "": "onnx.reference.ops",
    "ai.onnx.ml": "onnx.reference.ops.aionnxml",
    "ai.onnx.preview": "onnx.reference.ops.aionnx_preview",
    "ai.onnx.preview.training": "onnx.reference.ops.aionnx_preview_training",
    "experimental": "onnx.reference.ops.experimental",
}

#: How the reference serves an op: a class of its own, a function body, or a body built per input types.
IMPLEMENTED, FUNCTION, CONTEXT_FUNCTION = "implementation", "function body", "context-dependent function"


def _registered_ops(domain: str) -> dict[str, dict[Any, type]]:
    import importlib

    module = importlib.import_module(_DOMAIN_LOADERS[domain] + "._op_list")
    if module._registered_operators is None:  # filled on first load_op call
        module._registered_operators = module._build_registered_operators()
    return module._registered_operators


def reference_support(domain: str, op_type: str, opset: int) -> str | None:
    """How onnx.reference implements ``op_type`` at ``opset``: :data:`IMPLEMENTED`,
    :data:`FUNCTION`, :data:`CONTEXT_FUNCTION`, or None when it does not."""
    domain = "" if domain == "ai.onnx" else domain
    if domain not in _DOMAIN_LOADERS:
        return None
    impls = _registered_ops(domain).get(op_type)
    if impls:
        versions = [v for v in impls if v is not None]
        if None in impls and (not versions or len(impls) == 1 or min(versions) <= opset):
            return IMPLEMENTED
    if domain != "":
        return None
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None
    if schema.has_function:
        return FUNCTION
    if schema.has_context_dependent_function:
        return CONTEXT_FUNCTION
    return None


def _tfidf_weights_by_column(proto: onnx.NodeProto) -> onnx.NodeProto:
    """TfIdfVectorizer: the spec and onnxruntime give ``weights[g]`` (n-gram g's weight) to output
    column ``ngram_indexes[g]``; onnx.reference scales column i by ``weights[i]``. The node is
    rewritten with the weights scattered to their columns, so the two agree."""
    attrs = {a.name: a for a in proto.attribute}
    if "weights" not in attrs or "ngram_indexes" not in attrs:
        return proto
    index = np.asarray(attrs["ngram_indexes"].ints, dtype=np.int64)
    weights = np.asarray(attrs["weights"].floats, dtype=np.float32)
    if weights.size != index.size:
        raise ValueError(f"TfIdfVectorizer: {weights.size} weights for {index.size} ngram_indexes (must be equal)")
    if index.size == 0 or index.min() < 0:
        return proto
    by_column = np.zeros(int(index.max()) + 1, dtype=np.float32)
    by_column[index] = weights
    fixed = onnx.NodeProto()
    fixed.CopyFrom(proto)
    for attr in fixed.attribute:
        if attr.name == "weights":
            del attr.floats[:]
            attr.floats.extend(by_column.tolist())
    return fixed


#: Node rewrites for ops where onnx.reference and onnxruntime disagree, by (domain, op_type).
_PROTO_FIXES: dict[tuple[str, str], Callable[[onnx.NodeProto], onnx.NodeProto]] = {
    ("", "TfIdfVectorizer"): _tfidf_weights_by_column,
}


def _opsets(node: Node) -> dict[str, int]:
    """The opset imports the reference op (and evaluators of its subgraphs) must see."""
    for graph in node.subgraphs:
        return dict(graph.opsets)
    opsets = {"": onnx.defs.onnx_opset_version(), node.domain: node.opset}
    return opsets


def _run_params(node: Node) -> dict[str, Any]:
    from onnx.reference import ReferenceEvaluator

    return {"log": lambda pattern, *args: None, "opsets": _opsets(node), "verbose": 0,
            "new_ops": {}, "existing_functions": {}, "evaluator_cls": ReferenceEvaluator}


def _load_class(node: Node, proto: onnx.NodeProto, input_types: list[onnx.TypeProto] | None = None) -> Callable:
    import importlib

    from onnx.reference import ReferenceEvaluator

    load_op = importlib.import_module(_DOMAIN_LOADERS[node.domain]).load_op
    if node.domain == "":
        return load_op("", node.op_type, node.opset, node=proto, input_types=input_types,
                       evaluator_cls=ReferenceEvaluator)
    return load_op(node.domain, node.op_type, node.opset)


def _type_of_value(value: Any) -> onnx.TypeProto:
    """The ONNX type of a runtime value, for building context-dependent function bodies."""
    from onnx import helper

    from onnxplug.ir.types import elem_type_of

    if value is None:
        return onnx.TypeProto()
    if isinstance(value, list):
        inner = _type_of_value(value[0]) if value else helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None)
        return helper.make_sequence_type_proto(inner)
    arr = np.asarray(value)
    return helper.make_tensor_type_proto(elem_type_of(arr.dtype), arr.shape)


def _signature(value: Any) -> Any:
    if isinstance(value, list):
        return ("seq", _signature(value[0]) if value else None)
    if value is None:
        return None
    arr = np.asarray(value)
    return (arr.dtype.str, arr.ndim)


class ReferenceKernel(NumpyKernel):
    """Runs onnx.reference's implementation of the node's op (instantiated once per node)."""

    #: How onnx.reference implements the op (see :func:`reference_support`).
    support = IMPLEMENTED

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        proto = node.to_proto()
        fix = _PROTO_FIXES.get(("" if node.domain == "ai.onnx" else node.domain, node.op_type))
        self._proto = fix(proto) if fix else proto
        self._params = _run_params(node)
        self._impl: Any = None
        # Context-dependent bodies depend on input types: built per type signature, under a lock.
        self._by_signature: dict[Any, Any] = {}
        self._lock = threading.Lock()
        if self.support != CONTEXT_FUNCTION:
            self._impl = _load_class(node, self._proto)(self._proto, self._params)

    def _impl_for(self, inputs: tuple[Any, ...]) -> Any:
        if self._impl is not None:
            return self._impl
        key = tuple(_signature(v) for v in inputs)
        with self._lock:  # a cache of immutable op instances; results do not depend on it
            impl = self._by_signature.get(key)
            if impl is None:
                types = [_type_of_value(v) for v in inputs]
                impl = _load_class(self.node, self._proto, types)(self._proto, self._params)
                self._by_signature[key] = impl
        return impl

    def compute(self, *inputs: Any, scope: dict[str, Any] | None = None) -> Any:
        impl = self._impl_for(inputs)
        if impl.need_context():  # subgraph ops read outer-scope values through ``context``
            results = impl.run(*inputs, context=dict(scope or {}))
        else:
            results = impl.run(*inputs)
        return tuple(_fix_output(r) for r in results)


class ReferenceKernelWithScope(ReferenceKernel):
    """A reference kernel for nodes with subgraphs: their outer-scope reads come in ``scope``."""

    wants_scope = True


def _fix_output(value: Any) -> Any:
    """Reference ops sometimes return numpy scalars or fixed-width string arrays; onnxplug's values
    are arrays (strings as object arrays of str), lists, dicts or None."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "US":
        return value.astype(str).astype(object)
    if isinstance(value, list):
        return [_fix_output(v) for v in value]
    return value


@functools.lru_cache(maxsize=None)
def _kernel_class(domain: str, op_type: str, support: str, with_scope: bool) -> type[Kernel]:
    base = ReferenceKernelWithScope if with_scope else ReferenceKernel
    name = f"Reference{op_type}"
    return type(name, (base,), {"support": support, "__doc__": f"{domain or 'ai.onnx'}::{op_type} "
                                f"computed by onnx.reference ({support})."})


def reference_kernel(node: Node) -> type[Kernel] | None:
    """A kernel class computing ``node`` with onnx.reference, or None when onnx.reference cannot."""
    support = reference_support(node.domain, node.op_type, node.opset)
    if support is None:
        return None
    domain = "" if node.domain == "ai.onnx" else node.domain
    return _kernel_class(domain, node.op_type, support, bool(node.subgraphs))
