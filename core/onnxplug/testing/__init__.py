"""Test helpers for onnxplug: a suite of realistic ONNX models built without torch."""
