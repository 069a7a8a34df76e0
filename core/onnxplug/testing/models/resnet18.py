"""torchvision ResNet-18, spelled as unoptimised torch.onnx export (Conv and BN kept apart)."""

from __future__ import annotations

import numpy as np
import onnx

from onnxplug.testing.models._builder import (
    BATCH_DIM,
    BN_VARIANCE_GAIN,
    RELU_OF_UNIT_RMS,
    GraphBuilder,
    float_input,
)

NUM_CLASSES = 1000
IMAGE_SHAPE = (3, 224, 224)
# (out channels, stride of the first block) of layer1..layer4; each stage has 2 BasicBlocks.
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))
BLOCKS_PER_STAGE = 2
# A 3x3 max over ReLU(N(0,1)) values has RMS ~1.58 against ~0.71 for one value.
MAXPOOL_RMS_GAIN = 2.2
# RMS of ReLU(conv -> BN) with a unit-variance conv output.
BRANCH_RELU_RMS = RELU_OF_UNIT_RMS * float(np.sqrt(BN_VARIANCE_GAIN))


def _param(block_scope: str, module: str) -> str:
    """("/layer1/layer1.0", "conv1") -> "layer1.0.conv1" (the state_dict key)."""
    owner = block_scope.rsplit("/", 1)[-1]
    return f"{owner}.{module}" if owner else module


def _conv_bn(
    b: GraphBuilder,
    x: str,
    scope: str,
    names: tuple[str, str],
    channels: tuple[int, int],
    kernel: int,
    stride: int,
    input_rms: float,
    submodule: str = "",
) -> str:
    """Conv (no bias) then a separate BatchNormalization, named as torchvision's modules.

    `scope` is the block scope ("/layer2/layer2.0"); `submodule` a container inside it
    ("downsample") that appears in node scopes only, as torch.onnx names them.
    """
    conv, bn = names
    cin, cout = channels
    node_scope = f"{scope}/{submodule}" if submodule else scope
    y = b.conv(
        x, f"{node_scope}/{conv}", _param(scope, conv), cin, cout, kernel,
        stride=stride, input_rms=input_rms,
    )
    return b.batch_norm(y, f"{node_scope}/{bn}", _param(scope, bn), cout)


def _basic_block(
    b: GraphBuilder, x: str, scope: str, cin: int, cout: int, stride: int, input_rms: float
) -> tuple[str, float]:
    """BasicBlock: conv3x3-bn-relu-conv3x3-bn, + identity (or 1x1/stride downsample), relu.

    Returns the output and its estimated RMS.
    """
    y = _conv_bn(b, x, scope, ("conv1", "bn1"), (cin, cout), 3, stride, input_rms)
    y = b.node("Relu", [y], f"{scope}/relu")
    y = _conv_bn(b, y, scope, ("conv2", "bn2"), (cout, cout), 3, 1, BRANCH_RELU_RMS)
    identity, identity_mean_square = x, input_rms**2
    if stride != 1 or cin != cout:
        identity = _conv_bn(
            b, x, scope, ("downsample.0", "downsample.1"), (cin, cout), 1, stride, input_rms,
            submodule="downsample",
        )
        identity_mean_square = BN_VARIANCE_GAIN / 2.0
    y = b.node("Add", [y, identity], scope)
    # ReLU keeps about half of the (symmetric) branch and most of a non-negative identity.
    output_rms = float(np.sqrt(identity_mean_square + BN_VARIANCE_GAIN / 2.0))
    return b.node("Relu", [y], f"{scope}/relu_1"), output_rms


def build(seed: int = 0) -> onnx.ModelProto:
    """Build ResNet-18 with unit-variance (He-style) convs and randomised BN statistics."""
    b = GraphBuilder(np.random.default_rng(seed))
    x = b.conv("input", "/conv1", "conv1", 3, 64, 7, stride=2, input_rms=1.0)
    x = b.batch_norm(x, "/bn1", "bn1", 64)
    x = b.node("Relu", [x], "/relu")
    x = b.node(
        "MaxPool", [x], "/maxpool", ceil_mode=0, dilations=[1, 1], kernel_shape=[3, 3],
        pads=[1, 1, 1, 1], strides=[2, 2],
    )
    rms, cin = BRANCH_RELU_RMS * MAXPOOL_RMS_GAIN, 64
    for stage_index, (cout, first_stride) in enumerate(STAGES, start=1):
        layer = f"layer{stage_index}"
        for block_index in range(BLOCKS_PER_STAGE):
            stride = first_stride if block_index == 0 else 1
            scope = f"/{layer}/{layer}.{block_index}"
            x, rms = _basic_block(b, x, scope, cin, cout, stride, rms)
            cin = cout
    x = b.node("GlobalAveragePool", [x], "/avgpool")
    x = b.node("Flatten", [x], "", axis=1)
    b.gemm_classifier(x, "/fc", "fc", 512, NUM_CLASSES)
    return b.make_model(
        "resnet18",
        [float_input("input", [BATCH_DIM, *IMAGE_SHAPE])],
        [float_input("output", [BATCH_DIM, NUM_CLASSES])],
    )


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal images, like ImageNet-normalised pixels."""
    rng = np.random.default_rng(seed)
    return {"input": rng.standard_normal((batch, *IMAGE_SHAPE)).astype(np.float32)}
