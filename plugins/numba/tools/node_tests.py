"""Run the ONNX backend node tests on the numba provider alone (CPU fallback disabled).

A test is *claimed* when the provider takes every node of its model; claimed tests must pass.
A quick way to iterate on one op family; ``onnxplug conformance numba`` is the official run.

    python plugins/numba/tools/node_tests.py [--filter SUBSTRING] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
import warnings

import onnxplug as ort
from onnxplug.errors import FallbackDisabledError, NotImplementedOpError
from onnxplug_conformance import compare_outputs, is_random_op_case, load_cases


def run(filter_: str = "", verbose: bool = False) -> dict:
    """Results by case name: 'unclaimed', 'pass' or 'fail: <reason>'."""
    results: dict[str, str] = {}
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # as the conformance suite
    for case in load_cases():
        if filter_ and filter_ not in case.name:
            continue
        if is_random_op_case(case):
            results[case.name] = "unclaimed"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                session = ort.InferenceSession(str(case.model_path), options, providers=["numba"])
        except (FallbackDisabledError, NotImplementedOpError):
            results[case.name] = "unclaimed"
            continue
        except Exception as e:  # a claimed model whose session cannot be built fails
            results[case.name] = f"fail: session: {type(e).__name__}: {e}"[:400]
            continue
        try:
            for data in case.data_sets:
                got = session.run(None, data.inputs)
                compare_outputs(data.expected_outputs, got, case.rtol, case.atol)
            results[case.name] = "pass"
        except Exception as e:
            results[case.name] = f"fail: {type(e).__name__}: {e}"[:400]
            if verbose:
                traceback.print_exc()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run(args.filter, args.verbose)
    claimed = {k: v for k, v in results.items() if v != "unclaimed"}
    failed = {k: v for k, v in claimed.items() if v != "pass"}
    for name, why in sorted(failed.items()):
        print(f"FAIL {name}: {why}")
    print(f"{len(results)} cases, {len(claimed)} claimed, {len(claimed) - len(failed)} pass, "
          f"{len(failed)} fail ({time.perf_counter() - started:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
