"""onnxruntime's ``onnxruntime.capi.onnxruntime_inference_collection``: its Python classes, onnxplug's."""

from __future__ import annotations

from typing import Any

from onnxplug import InferenceSession, IOBinding, OrtValue

#: onnxruntime's base class of ``InferenceSession``; ``isinstance(sess, Session)`` holds here too.
Session = InferenceSession


def __getattr__(name: str) -> Any:
    from onnxplug.ort_api_table import refused_stand_in

    return refused_stand_in(name, __name__)


__all__ = ["IOBinding", "InferenceSession", "OrtValue", "Session"]
