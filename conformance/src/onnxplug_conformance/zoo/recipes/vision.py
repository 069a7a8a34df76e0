"""Zoo models from ``torchvision`` and ``timm``: CNN classifiers, a detector and a segmenter.

Every network is built with random weights (nothing downloaded) from a fixed seed; batch norms get
seeded affine terms and running statistics measured on seeded images, so none is the identity and
the input still shows in the output of deep networks. Classifiers take small images (64 x 64, Inception-v3 its minimum 75 x 75) with a dynamic
batch axis. The detector (Faster R-CNN, NonMaxSuppression and RoiAlign) is exported at batch 1 and
a fixed size; the segmenter (LRASPP, a Resize to the input's size) has dynamic batch, height and
width. Most models use the TorchScript exporter at opset 17; ``-dynamo`` and ``-opset13`` variants
export the same network with the dynamo exporter (opsets 18+) or at opset 13.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Callable

from onnxplug_conformance.zoo.spec import InputSpec, ZooModel

IMAGE = {"low": -1.0, "high": 1.0}


def randomise_norms(model: Any, seed: int, run: Callable[[], Any] | None = None) -> None:
    """Seeded statistics and affine terms for every batch norm (frozen ones too).

    With ``run``, the running statistics are measured: ``run()`` feeds seeded data through the
    model with its batch norms in training mode, and each keeps the exact averages it saw. Drawn
    statistics rescale deep networks layer after layer until the input no longer shows in the
    output; measured ones keep it visible. Without ``run``, mean and variance are drawn around 0 and 1.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    norms = [m for m in model.modules() if getattr(m, "running_var", None) is not None]
    measured = [m for m in norms if run is not None and hasattr(m, "reset_running_stats")]
    with torch.no_grad():
        for norm in norms:
            n = norm.running_var.shape
            if getattr(norm, "weight", None) is not None:
                norm.weight.copy_(torch.rand(n, generator=generator) + 0.5)
            if getattr(norm, "bias", None) is not None:
                norm.bias.copy_(torch.randn(n, generator=generator) * 0.1)
            if norm not in measured:
                norm.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                norm.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
        if measured:
            modes = [(m, m.training) for m in model.modules()]
            model.eval()
            for norm in measured:
                norm.reset_running_stats()
                norm.momentum = None  # a cumulative average: the statistics of all that run() feeds
                norm.train()  # only the norms: dropout and stochastic depth stay as at inference
            run()  # after the affine terms are drawn, so every norm sees the inputs it will get
            for module, training in modes:
                module.training = training


def calibration_images(shape: tuple[int, ...], seed: int, batch: int = 4) -> Any:
    """A seeded batch of images in [-1, 1] to measure batch-norm statistics with."""
    import torch

    return torch.rand((batch, *shape[1:]), generator=torch.Generator().manual_seed(seed + 7)) * 2 - 1


def _torchvision_model(name: str, **kwargs: Any) -> Any:
    """``torchvision.models[.detection|.segmentation].<name>(weights=None, **kwargs)``."""
    from onnxplug_conformance.zoo.recipes._torchvision_ops import import_torchvision

    models = import_torchvision().models
    for namespace in (models, models.detection, models.segmentation):
        if hasattr(namespace, name):
            return getattr(namespace, name)(weights=None, **kwargs)
    raise AttributeError(f"torchvision has no model {name!r}")


def _timm_model(name: str, **kwargs: Any) -> Any:
    from onnxplug_conformance.zoo.recipes._torchvision_ops import import_torchvision

    import_torchvision()  # timm imports torchvision
    import timm

    return timm.create_model(name, pretrained=False, **kwargs)


def _vgg11() -> Any:
    """VGG-11's convolutions with a global pool and a narrow classifier (its 4096-wide one is 500 MB)."""
    import torch

    model = _torchvision_model("vgg11")
    model.avgpool = torch.nn.AdaptiveAvgPool2d(1)
    model.classifier = torch.nn.Sequential(
        torch.nn.Linear(512, 256), torch.nn.ReLU(True), torch.nn.Dropout(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(True), torch.nn.Dropout(), torch.nn.Linear(256, 1000))
    return model


def _build(path: Path, make: Callable[[], Any], shape: tuple[int, ...], seed: int, exporter: str, opset: int,
           output_names: tuple[str, ...] = ("logits",), spatial: bool = False, wrap: Any = None) -> None:
    import torch

    from onnxplug_conformance.zoo.recipes._torch import export, seeded

    seeded(seed)
    model = make().eval()
    images = calibration_images(shape, seed)
    randomise_norms(model, seed, run=lambda: model(images))
    if wrap is not None:
        model = wrap(model)
    axes = {0: "batch", 2: "height", 3: "width"} if spatial else {0: "batch"}
    dynamic = {"pixel_values": axes, **{name: {0: "batch"} for name in output_names}}
    if spatial:
        dynamic[output_names[0]] = axes
    example = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 2 - 1
    export(model, (example,), path, input_names=["pixel_values"], output_names=output_names,
           dynamic_axes=dynamic, opset=opset, exporter=exporter)


def _classifier(name: str, package: str, recipe: str, make: Callable[[], Any], size: int = 64, *,
                exporter: str = "torchscript", opset: int = 17, tier: str = "full", notes: str = "",
                seed: int = 0) -> ZooModel:
    shapes = ((1, 3, size, size), (2, 3, size, size))
    return ZooModel(
        name=name, family="vision", source_package=package, recipe=recipe, exporter=exporter, opset=opset,
        inputs=[InputSpec("pixel_values", "float32", shapes, "uniform", IMAGE)],
        build=partial(_build, make=make, shape=shapes[0], seed=seed, exporter=exporter, opset=opset),
        tier=tier, notes=notes, seed=seed)


# --- detection and segmentation ---------------------------------------------------------------

DETECTION_SIZE = 160


def _faster_rcnn() -> Any:
    # three classes, so random scores are not all tiny; a score threshold of 0.3 keeps fewer than the
    # 100 detections an image may have, so no cut falls between two near-equal scores
    return _torchvision_model("fasterrcnn_mobilenet_v3_large_320_fpn", weights_backbone=None, num_classes=3,
                              min_size=DETECTION_SIZE, max_size=DETECTION_SIZE, box_score_thresh=0.3)


def _detector_adapter(model: Any) -> Any:
    import torch

    class Detector(torch.nn.Module):
        """A batch of one image as a tensor -> (boxes, scores, labels) of that image."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, images: Any) -> Any:
            out = self.model(list(images.unbind(0)))[0]
            return out["boxes"], out["scores"], out["labels"]

    return Detector(model)


def _spread_scores(model: Any, seed: int) -> None:
    """Weights for the RPN and box-predictor outputs scaled to the random features: objectness and
    class logits of a few units, so scores lie far apart (not at 1.0, not within rounding of each
    other), and box deltas of about 0.1, so boxes stay near their anchors instead of collapsing."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    layers = ((model.rpn.head.cls_logits, 2e-3), (model.rpn.head.bbox_pred, 3e-5),
              (model.roi_heads.box_predictor.cls_score, 2e-3), (model.roi_heads.box_predictor.bbox_pred, 1e-5))
    with torch.no_grad():
        for layer, std in layers:
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=generator) * std)


def _build_detector(path: Path, seed: int, exporter: str, opset: int) -> None:
    import torch

    from onnxplug_conformance.zoo.recipes._torch import export, seeded

    seeded(seed)
    model = _faster_rcnn().eval()
    images = calibration_images((1, 3, DETECTION_SIZE, DETECTION_SIZE), seed)
    randomise_norms(model, seed, run=lambda: model.backbone(images))
    _spread_scores(model, seed)
    example = torch.rand((1, 3, DETECTION_SIZE, DETECTION_SIZE), generator=torch.Generator().manual_seed(seed))
    export(_detector_adapter(model), (example,), path, input_names=["images"],
           output_names=["boxes", "scores", "labels"],
           dynamic_axes={"boxes": {0: "detections"}, "scores": {0: "detections"}, "labels": {0: "detections"}},
           opset=opset, exporter=exporter)


def _lraspp() -> Any:
    return _torchvision_model("lraspp_mobilenet_v3_large", weights_backbone=None, num_classes=21)


def _segmenter_adapter(model: Any) -> Any:
    import torch

    class Segmenter(torch.nn.Module):
        """Images -> per-pixel class logits at the input's size."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, images: Any) -> Any:
            return self.model(images)["out"]

    return Segmenter(model)


def _segmenter(name: str, exporter: str = "torchscript", opset: int = 17, seed: int = 0,
               tier: str = "full") -> ZooModel:
    shapes = ((1, 3, 96, 96), (2, 3, 128, 160))
    return ZooModel(
        name=name, family="segmentation", source_package="torchvision",
        recipe="torchvision lraspp_mobilenet_v3_large(weights=None, num_classes=21), images -> out",
        exporter=exporter, opset=opset,
        inputs=[InputSpec("pixel_values", "float32", shapes, "uniform", IMAGE)],
        build=partial(_build, make=_lraspp, shape=shapes[0], seed=seed, exporter=exporter, opset=opset,
                      output_names=("out",), spatial=True, wrap=_segmenter_adapter),
        notes="dynamic batch, height and width; the head's upsampling to the input size is a Resize",
        seed=seed, tier=tier)


MODELS: list[ZooModel] = [
    _classifier("squeezenet-1.1", "torchvision", "torchvision squeezenet1_1(weights=None), 64x64",
                partial(_torchvision_model, "squeezenet1_1"), tier="ci"),
    _classifier("efficientnet-b0", "torchvision", "torchvision efficientnet_b0(weights=None), 64x64",
                partial(_torchvision_model, "efficientnet_b0")),
    _classifier("mobilenetv3-small", "torchvision", "torchvision mobilenet_v3_small(weights=None), 64x64 (hard-swish)",
                partial(_torchvision_model, "mobilenet_v3_small")),
    _classifier("regnety-002", "timm", "timm regnety_002 (the smallest RegNet, with squeeze-excitation), 64x64",
                partial(_timm_model, "regnety_002")),
    _classifier("densenet-121", "torchvision", "torchvision densenet121(weights=None), 64x64",
                partial(_torchvision_model, "densenet121")),
    _classifier("inception-v3", "torchvision",
                "torchvision inception_v3(weights=None, aux_logits=False, init_weights=False), 75x75",
                partial(_torchvision_model, "inception_v3", aux_logits=False, init_weights=False), size=75),
    _classifier("shufflenetv2-x0.5", "torchvision", "torchvision shufflenet_v2_x0_5(weights=None), 64x64",
                partial(_torchvision_model, "shufflenet_v2_x0_5")),
    _classifier("resnext-26ts", "timm", "timm resnext26ts (the smallest ResNeXt), 64x64",
                partial(_timm_model, "resnext26ts")),
    _classifier("vgg-11", "torchvision",
                "torchvision vgg11(weights=None) with a global average pool and a 256-wide classifier, 64x64",
                _vgg11, notes="classifier narrowed from 4096 to 256 units (and pooled to 1x1) to keep the file small"),
    ZooModel(
        name="fasterrcnn-mobilenetv3", family="detection", source_package="torchvision",
        recipe=f"torchvision fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, num_classes=3, "
               f"min_size=max_size={DETECTION_SIZE}, box_score_thresh=0.3), one image -> boxes, scores, labels",
        exporter="torchscript", opset=17,
        inputs=[InputSpec("images", "float32", ((1, 3, DETECTION_SIZE, DETECTION_SIZE),) * 2, "uniform")],
        build=partial(_build_detector, seed=0, exporter="torchscript", opset=17),
        notes="exported at batch 1 and a fixed image size, so the two shape sets differ only in content; "
              "the output layers are scaled so scores lie well apart and boxes keep their size, but a "
              "detection whose score or overlap sits within rounding of a threshold may still legitimately differ"),
    _segmenter("lraspp-mobilenetv3", tier="ci"),
    # the same networks from the dynamo exporter, and from TorchScript at opset 13
    _classifier("resnext-26ts-dynamo", "timm", "timm resnext26ts, 64x64, dynamo exporter",
                partial(_timm_model, "resnext26ts"), exporter="dynamo", opset=18),
    _classifier("mobilenetv3-small-dynamo", "torchvision", "torchvision mobilenet_v3_small(weights=None), 64x64, "
                "dynamo exporter", partial(_torchvision_model, "mobilenet_v3_small"), exporter="dynamo", opset=20),
    _classifier("efficientnet-b0-dynamo", "torchvision", "torchvision efficientnet_b0(weights=None), 64x64, "
                "dynamo exporter", partial(_torchvision_model, "efficientnet_b0"), exporter="dynamo", opset=21),
    _segmenter("lraspp-mobilenetv3-dynamo", exporter="dynamo", opset=18),
    _classifier("mobilenetv3-small-opset13", "torchvision", "torchvision mobilenet_v3_small(weights=None), 64x64, "
                "opset 13 (hard-swish as HardSigmoid and Mul)", partial(_torchvision_model, "mobilenet_v3_small"),
                opset=13),
    _classifier("shufflenetv2-x0.5-opset13", "torchvision", "torchvision shufflenet_v2_x0_5(weights=None), 64x64, "
                "opset 13", partial(_torchvision_model, "shufflenet_v2_x0_5"), opset=13),
]
