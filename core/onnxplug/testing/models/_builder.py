"""Shared helpers that spell ONNX graphs the way `torch.onnx.export` does (unoptimised).

Node names follow the exporter's scope style ("/layer1/layer1.0/conv1/Conv") and node outputs
are named "<node name>_output_<i>", so the models look like real exported files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
BATCH_DIM = "batch"

# torch.nn.BatchNorm2d defaults, written out as the exporter does.
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9
# Random inference-mode BN does not renormalise, so layers track the RMS of what flows in and
# scale their weights to it (see GraphBuilder.conv). Second-moment gain of a random BN:
# E[scale^2] * E[1/running_var] for scale, var ~ U(0.5, 1.5).
BN_VARIANCE_GAIN = float((1.5**3 - 0.5**3) / 3.0 * np.log(3.0))
# RMS of ReLU(z) for z ~ N(0, 1): the input He initialisation is derived for.
RELU_OF_UNIT_RMS = float(np.sqrt(0.5))


class GraphBuilder:
    """Accumulates nodes and initializers of one graph or subgraph.

    Subgraph builders share the parent's random generator and name registry so every value name
    in the model stays unique (ONNX forbids a subgraph shadowing an outer name), and put their
    weights into the outer graph, so control-flow bodies read them as outer-scope values.
    """

    def __init__(
        self,
        rng: np.random.Generator,
        names: set[str] | None = None,
        weight_owner: GraphBuilder | None = None,
    ) -> None:
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: set[str] = names if names is not None else set()
        self._weight_owner = weight_owner

    def subgraph_builder(self) -> GraphBuilder:
        """A builder for a control-flow body; its initializers land in the outermost graph."""
        return GraphBuilder(self.rng, self._names, self._weight_owner or self)

    def reserve(self, name: str) -> str:
        """Return `name` (or `name_<k>` if taken) and mark it as used."""
        candidate, suffix = name, 1
        while candidate in self._names:
            candidate = f"{name}_{suffix}"
            suffix += 1
        self._names.add(candidate)
        return candidate

    # --- values -------------------------------------------------------------------------------
    def initializer(self, name: str, array: np.ndarray) -> str:
        """Add an initializer (to the outermost graph) and return its unique name."""
        if self._weight_owner is not None:
            return self._weight_owner.initializer(name, array)
        unique = self.reserve(name)
        # np.ascontiguousarray would turn 0-d scalars into shape (1,).
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), unique))
        return unique

    def constant(self, scope: str, array: np.ndarray | float | int | bool) -> str:
        """Add a Constant node (the exporter's spelling for small literals)."""
        value = numpy_helper.from_array(np.asarray(array))
        return self.node("Constant", [], scope, value=value)

    def int64s(self, scope: str, values: Sequence[int]) -> str:
        """A 1-D int64 Constant (shapes, axes, perms)."""
        return self.constant(scope, np.asarray(values, dtype=np.int64))

    def scalar(self, scope: str, value: float) -> str:
        """A 0-D float32 Constant."""
        return self.constant(scope, np.asarray(value, dtype=np.float32))

    # --- nodes --------------------------------------------------------------------------------
    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        scope: str,
        *,
        output: str | None = None,
        **attrs: Any,
    ) -> str:
        """Add a single-output node named "<scope>/<op_type>" and return its output name."""
        return self.node_outputs(
            op_type, inputs, scope, outputs=[output] if output else None, **attrs
        )[0]

    def node_outputs(
        self,
        op_type: str,
        inputs: Sequence[str],
        scope: str,
        *,
        num_outputs: int = 1,
        outputs: Sequence[str] | None = None,
        **attrs: Any,
    ) -> list[str]:
        """Add a node with several outputs; explicit `outputs` win over generated names."""
        name = self.reserve(f"{scope}/{op_type}")
        if outputs is None:
            outputs = [self.reserve(f"{name}_output_{i}") for i in range(num_outputs)]
        else:
            outputs = [self.reserve(o) if o else "" for o in outputs]
        node = helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs)
        self.nodes.append(node)
        return list(outputs)

    # --- random weights -----------------------------------------------------------------------
    def normal(self, shape: Sequence[int], std: float) -> np.ndarray:
        """Zero-mean normal float32 weights."""
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        """Uniform float32 weights in [low, high)."""
        return self.rng.uniform(low, high, size=shape).astype(np.float32)

    # --- composite layers ---------------------------------------------------------------------
    def conv(
        self,
        x: str,
        scope: str,
        param_prefix: str,
        in_channels: int,
        out_channels: int,
        kernel: int,
        *,
        stride: int = 1,
        group: int = 1,
        bias: bool = False,
        input_rms: float = RELU_OF_UNIT_RMS,
    ) -> str:
        """Conv as exported from nn.Conv2d: all attributes explicit, no bias input if bias=False.

        Weights are N(0, 1 / (fan_in * input_rms^2)) so the output has unit variance; for the
        default input (ReLU of a unit-variance tensor) that is exactly He-normal init.
        """
        fan_in = in_channels // group * kernel * kernel
        std = 1.0 / (np.sqrt(fan_in) * input_rms)
        weight = self.initializer(
            f"{param_prefix}.weight",
            self.normal((out_channels, in_channels // group, kernel, kernel), std),
        )
        inputs = [x, weight]
        if bias:
            conv_bias = self.normal((out_channels,), 0.1)
            inputs.append(self.initializer(f"{param_prefix}.bias", conv_bias))
        pad = kernel // 2
        return self.node(
            "Conv",
            inputs,
            scope,
            dilations=[1, 1],
            group=group,
            kernel_shape=[kernel, kernel],
            pads=[pad, pad, pad, pad],
            strides=[stride, stride],
        )

    def batch_norm(self, x: str, scope: str, param_prefix: str, channels: int) -> str:
        """Inference BatchNormalization with randomised statistics (as exported, not folded).

        The statistics are far enough from the identity that a runtime ignoring one of them
        gives visibly wrong numbers.
        """
        scale = self.uniform((channels,), 0.5, 1.5)
        bias = self.normal((channels,), 0.1)
        mean = self.normal((channels,), 0.1)
        var = self.uniform((channels,), 0.5, 1.5)
        inputs = [
            x,
            self.initializer(f"{param_prefix}.weight", scale),
            self.initializer(f"{param_prefix}.bias", bias),
            self.initializer(f"{param_prefix}.running_mean", mean),
            self.initializer(f"{param_prefix}.running_var", var),
        ]
        return self.node(
            "BatchNormalization", inputs, scope, epsilon=BN_EPSILON, momentum=BN_MOMENTUM
        )

    def gemm_classifier(
        self,
        x: str,
        scope: str,
        param_prefix: str,
        in_features: int,
        out_features: int,
        output: str = "output",
    ) -> str:
        """nn.Linear on a 2-D input: Gemm with transB=1 and torch's default uniform init."""
        bound = 1.0 / np.sqrt(in_features)
        weight = self.initializer(
            f"{param_prefix}.weight", self.uniform((out_features, in_features), -bound, bound)
        )
        bias = self.initializer(
            f"{param_prefix}.bias", self.uniform((out_features,), -bound, bound)
        )
        return self.node(
            "Gemm", [x, weight, bias], scope, output=output, alpha=1.0, beta=1.0, transB=1
        )

    def shape_dim(self, x: str, scope: str, axis: int) -> str:
        """Shape -> Gather(axis) -> Unsqueeze: a 1-element int64 tensor holding x.shape[axis]."""
        shape = self.node("Shape", [x], scope)
        index = self.constant(scope, np.asarray(axis, dtype=np.int64))
        dim = self.node("Gather", [shape, index], scope, axis=0)
        axes = self.int64s(scope, [0])
        return self.node("Unsqueeze", [dim, axes], scope)

    # --- finishing ----------------------------------------------------------------------------
    def make_graph(
        self,
        name: str,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.GraphProto:
        """Wrap the accumulated nodes/initializers into a GraphProto."""
        return helper.make_graph(
            self.nodes, name, list(inputs), list(outputs), initializer=self.initializers
        )

    def make_model(
        self,
        name: str,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
    ) -> onnx.ModelProto:
        """Wrap the graph into an opset-17, IR-8 model."""
        model = helper.make_model(
            self.make_graph(name, inputs, outputs),
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="onnxplug.testing.model_suite",
        )
        return model


def float_input(name: str, shape: Sequence[int | str | None]) -> onnx.ValueInfoProto:
    """A float32 graph input/output value info (str dims are symbolic)."""
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))
