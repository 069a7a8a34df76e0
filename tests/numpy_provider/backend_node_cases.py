"""Run the ONNX backend node test cases of given op types with the numpy provider.

Cases come from onnxplug_conformance.backend_cases (regenerated from the installed onnx, cached on
disk); the expected outputs are onnx's, compared with onnx's backend runner semantics.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import onnx

try:
    from onnxplug_conformance.backend_cases import NodeCase, compare_outputs, load_cases
except ImportError:  # not installed: use the source tree next to the tests
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance" / "src"))
    from onnxplug_conformance.backend_cases import NodeCase, compare_outputs, load_cases

import onnxplug
from tests.numpy_provider.single_node_oracle import kernels_only


@functools.lru_cache(maxsize=1)
def _all_cases() -> tuple[tuple[NodeCase, frozenset[str]], ...]:
    found = []
    for case in load_cases():
        graph = onnx.load(str(case.model_path), load_external_data=False).graph
        found.append((case, frozenset(n.op_type for n in graph.node)))
    return tuple(found)


def cases_for(op_type: str, runnable: frozenset[str]) -> list[NodeCase]:
    """Cases whose graph uses ``op_type`` and only ops from ``runnable`` (e.g. expanded functions)."""
    return [case for case, ops in _all_cases() if op_type in ops and ops <= runnable]


def failures(cases: list[NodeCase]) -> dict[str, str]:
    """Run each case with providers=["numpy"], optimizations off; case name -> failure (empty: all pass)."""
    failed: dict[str, str] = {}
    for case in cases:
        try:
            with warnings.catch_warnings():
                # numpy's overflow / invalid-value warnings raised in a kernel count as failures
                warnings.filterwarnings("error", category=RuntimeWarning, module=r"onnxplug\.providers\.numpy")
                session = onnxplug.InferenceSession(case.load_model().SerializeToString(), kernels_only(),
                                                    providers=["numpy"])
                for data in case.data_sets:
                    outputs = session.run(None, data.inputs)
                    compare_outputs(data.expected_outputs, outputs, case.rtol, case.atol)
        except Exception as error:  # noqa: BLE001 - every failure is reported by case name
            failed[case.name] = f"{type(error).__name__}: {str(error)[:400]}"
    return failed
