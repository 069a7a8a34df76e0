"""ONNX backend node conformance data for onnxplug: case generation, caching, comparison."""

from onnxplug_conformance.backend_cases import (
    NodeCase,
    compare_outputs,
    compare_random_outputs,
    is_random_op_case,
    load_cases,
)

__all__ = ["NodeCase", "compare_outputs", "compare_random_outputs", "is_random_op_case", "load_cases"]
