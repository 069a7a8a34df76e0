"""Graph passes the numpy provider brings to the optimizer, registered through the
``onnxplug_register_passes`` hook (:mod:`onnxplug.providers.numpy.plugin`): the channels-last
layout rewrite and the fusion of its inverted bottlenecks."""

from onnxplug.providers.numpy.passes.inverted_bottleneck_fusion import InvertedBottleneckFusion
from onnxplug.providers.numpy.passes.layout_transform import LayoutTransform

PASSES = [LayoutTransform, InvertedBottleneckFusion]

__all__ = ["PASSES", "InvertedBottleneckFusion", "LayoutTransform"]
