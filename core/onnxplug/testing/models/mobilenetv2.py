"""torchvision MobileNetV2 (width 1.0), spelled as unoptimised torch.onnx export.

ReLU6 is Clip with min/max given as inputs (opset >= 11 spelling); Conv and BN stay separate.
"""

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
STEM_CHANNELS = 32
LAST_CHANNELS = 1280
# torchvision's inverted_residual_setting: expansion t, output channels c, repeats n, stride s.
INVERTED_RESIDUAL_SETTING = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)
# RMS of ReLU6(conv -> BN) with a unit-variance conv output (clipping at 6 is negligible).
ACTIVATION_RMS = RELU_OF_UNIT_RMS * float(np.sqrt(BN_VARIANCE_GAIN))


class _MobileNetBuilder:
    """Holds the graph builder and the shared ReLU6 bounds while the network is spelled."""

    def __init__(self, seed: int) -> None:
        self.b = GraphBuilder(np.random.default_rng(seed))
        self.clip_min = self.b.initializer("onnx::Clip_min", np.asarray(0.0, dtype=np.float32))
        self.clip_max = self.b.initializer("onnx::Clip_max", np.asarray(6.0, dtype=np.float32))

    def conv_bn(
        self,
        x: str,
        scope: str,
        param: str,
        channels: tuple[int, int],
        kernel: int,
        *,
        stride: int = 1,
        group: int = 1,
        input_rms: float = ACTIVATION_RMS,
        relu6: bool = True,
    ) -> str:
        """Conv2dNormActivation (conv ".0", bn ".1", ReLU6 ".2") or a bare conv+bn pair.

        With relu6=True, `scope`/`param` name the container ("/features/features.0",
        "features.0"); otherwise they name the conv and the BN is "<scope>+1".
        """
        cin, cout = channels
        if relu6:
            conv_scope, conv_param = f"{scope}/{_leaf(scope)}.0", f"{param}.0"
            bn_scope, bn_param = f"{scope}/{_leaf(scope)}.1", f"{param}.1"
        else:
            conv_scope, conv_param = scope, param
            bn_scope, bn_param = _bump(scope), _bump(param)
        y = self.b.conv(
            x, conv_scope, conv_param, cin, cout, kernel,
            stride=stride, group=group, input_rms=input_rms,
        )
        y = self.b.batch_norm(y, bn_scope, bn_param, cout)
        if relu6:
            y = self.b.node("Clip", [y, self.clip_min, self.clip_max], f"{scope}/{_leaf(scope)}.2")
        return y

    def inverted_residual(
        self, x: str, index: int, cin: int, cout: int, stride: int, expand: int, input_rms: float
    ) -> tuple[str, float]:
        """InvertedResidual: [1x1 expand] -> 3x3 depthwise -> 1x1 linear project (+ skip).

        Returns the output and its estimated RMS.
        """
        scope, param = f"/features/features.{index}/conv", f"features.{index}.conv"
        hidden = cin * expand
        y, layer, rms = x, 0, input_rms
        if expand != 1:
            y = self.conv_bn(
                y, f"{scope}/conv.{layer}", f"{param}.{layer}", (cin, hidden), 1, input_rms=rms
            )
            layer, rms = layer + 1, ACTIVATION_RMS
        y = self.conv_bn(
            y, f"{scope}/conv.{layer}", f"{param}.{layer}", (hidden, hidden), 3,
            stride=stride, group=hidden, input_rms=rms,
        )
        layer += 1
        y = self.conv_bn(
            y, f"{scope}/conv.{layer}", f"{param}.{layer}", (hidden, cout), 1, relu6=False
        )
        if stride == 1 and cin == cout:
            y = self.b.node("Add", [x, y], f"/features/features.{index}")
            return y, float(np.sqrt(input_rms**2 + BN_VARIANCE_GAIN))
        return y, float(np.sqrt(BN_VARIANCE_GAIN))


def _leaf(scope: str) -> str:
    """Last path element of a scope: "/features/features.0" -> "features.0"."""
    return scope.rsplit("/", 1)[-1]


def _bump(name: str) -> str:
    """Next sibling module: "conv.2" -> "conv.3" (the BN after a bare conv)."""
    head, _, tail = name.rpartition(".")
    return f"{head}.{int(tail) + 1}"


def build(seed: int = 0) -> onnx.ModelProto:
    """Build MobileNetV2 with unit-variance (He-style) convs and randomised BN statistics."""
    m = _MobileNetBuilder(seed)
    x = m.conv_bn(
        "input", "/features/features.0", "features.0", (3, STEM_CHANNELS), 3,
        stride=2, input_rms=1.0,
    )
    cin, rms, index = STEM_CHANNELS, ACTIVATION_RMS, 1
    for expand, cout, repeats, first_stride in INVERTED_RESIDUAL_SETTING:
        for repeat in range(repeats):
            stride = first_stride if repeat == 0 else 1
            x, rms = m.inverted_residual(x, index, cin, cout, stride, expand, rms)
            cin, index = cout, index + 1
    x = m.conv_bn(
        x, f"/features/features.{index}", f"features.{index}", (cin, LAST_CHANNELS), 1,
        input_rms=rms,
    )
    x = m.b.node("GlobalAveragePool", [x], "")
    x = m.b.node("Flatten", [x], "", axis=1)
    m.b.gemm_classifier(x, "/classifier/classifier.1", "classifier.1", LAST_CHANNELS, NUM_CLASSES)
    return m.b.make_model(
        "mobilenetv2",
        [float_input("input", [BATCH_DIM, *IMAGE_SHAPE])],
        [float_input("output", [BATCH_DIM, NUM_CLASSES])],
    )


def sample_inputs(batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal images, like ImageNet-normalised pixels."""
    rng = np.random.default_rng(seed)
    return {"input": rng.standard_normal((batch, *IMAGE_SHAPE)).astype(np.float32)}
