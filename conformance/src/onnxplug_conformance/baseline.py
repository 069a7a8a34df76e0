"""Baseline: run every ONNX backend node case through onnx's ReferenceEvaluator and
onnxruntime (CPU) with this package's comparison, print pass counts, and write the
per-case outcomes as JSON.

    python -m onnxplug_conformance.baseline [--cache-dir DIR] [--output-dir DIR]
                                            [--engine reference|onnxruntime|both]

The ReferenceEvaluator outcomes (``reference_evaluator_onnx-<version>.json``) record
for each failing case the stage (``load``, ``run`` or ``compare``) and the reason.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnxplug_conformance.backend_cases import (
    NodeCase,
    compare_outputs,
    compare_random_outputs,
    is_random_op_case,
    load_cases,
)

# An engine turns a model path into a function from feeds to the list of outputs.
Engine = Callable[[str], Callable[[dict[str, Any]], list[Any]]]
_REASON_LIMIT = 2000


def reference_engine(model_path: str) -> Callable[[dict[str, Any]], list[Any]]:
    """onnx.reference.ReferenceEvaluator, the oracle the onnx backend tests target."""
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model_path)
    return lambda feeds: list(evaluator.run(None, feeds))


def onnxruntime_engine(model_path: str) -> Callable[[dict[str, Any]], list[Any]]:
    """onnxruntime's CPU execution provider (oracle only, one thread, quiet logging)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4  # failures are recorded per case, not logged
    session = onnxruntime.InferenceSession(
        model_path, options, providers=["CPUExecutionProvider"]
    )
    return lambda feeds: list(session.run(None, feeds))


ENGINES: dict[str, tuple[str, Engine]] = {
    "reference": ("onnx.reference.ReferenceEvaluator", reference_engine),
    "onnxruntime": ("onnxruntime CPUExecutionProvider", onnxruntime_engine),
}


def _reason(error: BaseException, case: NodeCase) -> str:
    text = f"{type(error).__name__}: {error}"
    # Keep the outcome files independent of where the cache lives.
    text = text.replace(str(case.model_path.parent.parent), "<cache>")
    return text if len(text) <= _REASON_LIMIT else text[:_REASON_LIMIT] + " ..."


def _matches_by_value(case: NodeCase, data_set: Any, actual: list[Any]) -> bool:
    """Whether a random case's outputs equal onnx's numpy draws (what the plain runner checks)."""
    try:
        compare_outputs(data_set.expected_outputs, actual, case.rtol, case.atol)
    except AssertionError:
        return False
    return True


def run_case(case: NodeCase, engine: Engine) -> dict[str, Any]:
    """Run one case on one engine; returns ``{"outcome", "stage", "reason", ...}``.

    Random-op cases pass on shape/dtype/value-range checks; ``value_match`` records
    whether they would also pass a value comparison, as in onnx's own runner.
    """
    random_case = is_random_op_case(case)
    value_match = True
    stage = "load"
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            run = engine(str(case.model_path))
            for data_set in case.data_sets:
                stage = "run"
                actual = run(dict(data_set.inputs))
                stage = "compare"
                if random_case:
                    value_match &= _matches_by_value(case, data_set, actual)
                    compare_random_outputs(case, data_set, actual)
                else:
                    compare_outputs(data_set.expected_outputs, actual, case.rtol, case.atol)
    except AssertionError as error:
        outcome = {"outcome": "fail", "stage": stage, "reason": _reason(error, case)}
    except Exception as error:  # noqa: BLE001 - any engine error is the case's outcome
        outcome = {"outcome": "error", "stage": stage, "reason": _reason(error, case)}
    else:
        outcome = {"outcome": "pass"}
    outcome["random"] = random_case
    if random_case:
        outcome["value_match"] = outcome["outcome"] == "pass" and value_match
    return outcome


def run_engine(cases: list[NodeCase], engine_key: str) -> dict[str, dict[str, Any]]:
    """Outcome of every case on one engine, keyed by case name."""
    _, engine = ENGINES[engine_key]
    return {case.name: run_case(case, engine) for case in cases}


def summarize(outcomes: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Counts: total, pass, fail (wrong output), error (load/run raised), by stage.

    ``pass_values_only`` counts passes when random-op cases are also compared by value
    (onnx runner semantics), the figure the onnx backend test suite itself reports.
    """
    counts = Counter(result["outcome"] for result in outcomes.values())
    by_value = sum(
        result["outcome"] == "pass" and result.get("value_match", True)
        for result in outcomes.values()
    )
    random_total = sum(result["random"] for result in outcomes.values())
    stages = Counter(
        f"{result['outcome']}_at_{result['stage']}"
        for result in outcomes.values()
        if result["outcome"] != "pass"
    )
    return {"total": len(outcomes), "pass": counts["pass"], "fail": counts["fail"],
            "error": counts["error"], **dict(sorted(stages.items())),
            "random_cases": random_total, "pass_values_only": by_value}


def write_outcomes(path: Path, engine_key: str, outcomes: dict[str, dict[str, Any]]) -> None:
    """Write one engine's per-case outcomes with versions and counts."""
    document: dict[str, Any] = {
        "engine": ENGINES[engine_key][0],
        "description": "outcome per ONNX backend node case; random-op cases are checked "
        "by shape, dtype and value range (value_match: also equal by value)",
        "onnx_version": onnx.__version__,
        "numpy_version": np.__version__,
        "counts": summarize(outcomes),
        "cases": dict(sorted(outcomes.items())),
    }
    if engine_key == "onnxruntime":
        import onnxruntime

        document["onnxruntime_version"] = onnxruntime.__version__
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_one_case_per_line(document))


def _one_case_per_line(document: dict[str, Any]) -> str:
    """JSON with one line per case, so diffs between runs read case by case."""
    cases = document.pop("cases")
    head = json.dumps(document, indent=1)[:-2]  # drop the closing "\n}"
    lines = [f"  {json.dumps(name)}: {json.dumps(result)}" for name, result in cases.items()]
    return head + ',\n "cases": {\n' + ",\n".join(lines) + "\n }\n}\n"


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--output-dir", type=Path, default=Path("."))
    parser.add_argument("--engine", choices=["reference", "onnxruntime", "both"], default="both")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    cases = load_cases(args.cache_dir)
    print(f"loaded {len(cases)} node cases (onnx {onnx.__version__}) "
          f"in {time.perf_counter() - started:.1f} s")
    keys = ["reference", "onnxruntime"] if args.engine == "both" else [args.engine]
    for key in keys:
        started = time.perf_counter()
        outcomes = run_engine(cases, key)
        counts = summarize(outcomes)
        file_name = {"reference": "reference_evaluator", "onnxruntime": "onnxruntime"}[key]
        path = args.output_dir / f"{file_name}_onnx-{onnx.__version__}.json"
        write_outcomes(path, key, outcomes)
        print(f"{ENGINES[key][0]}: {counts['pass']}/{counts['total']} pass "
              f"({counts['fail']} wrong output, {counts['error']} raised) "
              f"in {time.perf_counter() - started:.1f} s -> {path}")
        print(f"  comparing the {counts['random_cases']} random-op cases by value instead: "
              f"{counts['pass_values_only']}/{counts['total']} pass")
        print("  " + json.dumps(counts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
