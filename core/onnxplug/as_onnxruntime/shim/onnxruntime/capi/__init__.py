"""``onnxruntime.capi`` under onnxplug: see ``onnxplug.capi``."""

from onnxplug.capi import *  # noqa: F403
