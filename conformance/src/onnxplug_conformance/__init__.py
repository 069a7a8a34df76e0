"""onnxplug-conformance: the evidence that a provider computes what the ONNX spec says.

Three layers, run on one provider by ``onnxplug conformance NAME`` or
``pytest --pyargs onnxplug_conformance --provider NAME``: contract tests of the interfaces every
provider implements (:mod:`.contract`); the ONNX backend node tests, regenerated from the installed
onnx and cached (:mod:`.backend_cases`), run with CPU fallback disabled (:mod:`.node_runner`); and
the project's model suite compared with onnxruntime (:mod:`.model_runner`). Expected failures are
data (:mod:`.deviations`); each run prints a table and writes a JSON report (:mod:`.reporting`);
:mod:`.report_all` regenerates ``docs/conformance.md``. The pytest plugin (:mod:`.plugin`) is inert
unless a provider is asked for.
"""

from onnxplug_conformance.backend_cases import (
    NodeCase,
    compare_outputs,
    compare_random_outputs,
    is_random_op_case,
    load_cases,
)

__all__ = ["NodeCase", "compare_outputs", "compare_random_outputs", "is_random_op_case", "load_cases"]
