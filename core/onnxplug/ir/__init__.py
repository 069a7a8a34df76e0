"""The graph IR: models loaded with the onnx package into plain, mutable Python objects."""

from onnxplug.ir.graph import Attribute, Graph, Model, Node, ValueInfo
from onnxplug.ir.loader import ModelSource, load_model
from onnxplug.ir.types import Dim, ValueType, elem_type_name, elem_type_of, numpy_dtype
from onnxplug.ir.validate import ORT_DEFAULT_DOMAIN_OPS

__all__ = ["ORT_DEFAULT_DOMAIN_OPS", "Attribute", "Dim", "Graph", "Model", "ModelSource", "Node", "ValueInfo",
           "ValueType", "elem_type_name", "elem_type_of", "load_model", "numpy_dtype"]
