"""Where the time goes over the zoo: time per op type, per provider, per model, from the session profiler.

    export ONNXPLUG_ZOO_DIR=/tmp/zoo-bench
    python benchmarks/bench_zoo_profile.py --provider numba [--only a,b | --family vision] [--runs 5]
    python benchmarks/bench_zoo_profile.py --markdown | --write docs/benchmarks.md

Each built model runs at both shape sets with ``enable_profiling`` (onnxruntime with its own profiler,
``--provider onnxruntime``), 2 intra-op threads, the first run of each shape set left out. A step's
time is its self time: steps of If/Loop/Scan bodies count under their own op types and are taken out
of their parent's; fused steps count under the fused op type. Profiled runs time every step, so read
shares, not absolute times. Summary per provider: per op type its mean share of a model's time, the
milliseconds per run summed over the models, and how many models it leads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from harness import markdown_table

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "zoo_profile.json"
BEGIN, END = "<!-- bench_zoo_profile: begin -->", "<!-- bench_zoo_profile: end -->"


def _session(path: str, provider: str, prefix: str):
    if provider == "onnxruntime":
        import onnxruntime as rt

        so = rt.SessionOptions()
        so.inter_op_num_threads = 1
        providers = ["CPUExecutionProvider"]
    else:
        import onnxplug as rt

        providers = [provider]
        so = rt.SessionOptions()
    so.intra_op_num_threads, so.log_severity_level = 2, 3
    so.enable_profiling, so.profile_file_prefix = True, prefix
    return rt.InferenceSession(path, so, providers=providers)


def op_times(events: list[dict[str, Any]]) -> dict[str, float]:
    """Self time in microseconds per op type from Chrome trace events (node steps only)."""
    nodes = [e for e in events if e.get("cat") == "Node" and "op_name" in e.get("args", {})]
    children: dict[str, float] = defaultdict(float)
    for e in nodes:
        if e["args"].get("parent"):
            children[e["args"]["parent"]] += e["dur"]
    totals: dict[str, float] = defaultdict(float)
    body_parents = set(children)
    for e in nodes:
        name = e["name"].removesuffix("_kernel_time")  # parents are named by node, events by step
        own = e["dur"] - (children[name] if name in body_parents else 0.0)
        totals[e["args"]["op_name"]] += max(own, 0.0)
    return dict(totals)


def profile_model(model, path: Path, provider: str, runs: int) -> dict[str, Any]:
    from onnxplug_conformance.zoo.inputs import feeds as model_feeds

    with tempfile.TemporaryDirectory() as d:
        try:
            sess = _session(str(path), provider, os.path.join(d, "p"))
            start_ns = sess.get_profiling_start_time_ns()
            windows = []  # (from, to) in trace microseconds: each run after a shape set's first
            for shape_set in (0, 1):
                feeds = model_feeds(model, shape_set)
                with np.errstate(all="ignore"):
                    sess.run(None, dict(feeds))
                    for _ in range(runs):
                        t0 = (time.time_ns() - start_ns) / 1e3
                        sess.run(None, dict(feeds))
                        windows.append((shape_set, t0, (time.time_ns() - start_ns) / 1e3))
            with open(sess.end_profiling(), encoding="utf-8") as f:
                events = json.load(f)
        except Exception as e:  # noqa: BLE001 - recorded, the profile goes on
            return {"family": model.family, "error": _error(e)}
    # Per op type the median over the runs of each shape set (a busy machine preempts single runs), summed.
    per_run = [(k, op_times([e for e in events if a <= e.get("ts", -1) <= b])) for k, a, b in windows]
    ops = {op for _, t in per_run for op in t}
    ms = {op: sum(float(np.median([t.get(op, 0.0) for k, t in per_run if k == s])) for s in (0, 1)) / 1e3 for op in ops}
    return {"family": model.family, "ms_per_run": {k: round(v, 4) for k, v in ms.items()}}


def summary_rows(models: dict[str, Any], top: int) -> list[list[object]]:
    shares: dict[str, list[float]] = defaultdict(list)
    total_ms: dict[str, float] = defaultdict(float)
    leads: dict[str, int] = defaultdict(int)
    usable = [m["ms_per_run"] for m in models.values() if m.get("ms_per_run")]
    for ops in usable:
        whole = sum(ops.values()) or 1.0
        for op, ms in ops.items():
            shares[op].append(ms / whole)
            total_ms[op] += ms
        leads[max(ops, key=ops.get)] += 1
    rows = sorted(shares, key=lambda op: -sum(shares[op]) / len(usable))
    return [[op, f"{100 * sum(shares[op]) / len(usable):.1f}", f"{total_ms[op]:.2f}", len(shares[op]), leads[op]]
            for op in rows[:top]]


def render(data: dict[str, Any], top: int) -> str:
    out = []
    for provider in sorted(data.get("providers", {}), key=lambda p: (p != "onnxruntime", p)):
        models = data["providers"][provider]["models"]
        out += [f"#### `{provider}`: op types by mean share of a model's time", "",
                f"{len([m for m in models.values() if m.get('ms_per_run')])} models; "
                f"{data['providers'][provider].get('command', '')}", "",
                markdown_table(["op type", "mean share %", "ms per run, summed over models", "models with it",
                                "models it leads"], summary_rows(models, top)), ""]
        rows = []
        for name in sorted(models, key=lambda n: (models[n]["family"], n)):
            ops = models[name].get("ms_per_run")
            if not ops:
                rows.append([name, "-", models[name].get("error", "")])
                continue
            whole = sum(ops.values()) or 1.0
            lead = sorted(ops, key=lambda op: -ops[op])[:3]
            rows.append([name, f"{whole:.2f}", ", ".join(f"{op} {100 * ops[op] / whole:.0f}%" for op in lead)])
        out += ["<details><summary>per model: profiled ms per run (both shape sets) and the three leading op types"
                "</summary>", "", markdown_table(["model", "ms", "leading op types"], rows), "", "</details>", ""]
    return "\n".join(out).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=["onnxruntime", "numba", "numpy", "opencl", "cupy"])
    parser.add_argument("--only")
    parser.add_argument("--family")
    parser.add_argument("--skip", default="")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    if args.provider:
        from onnxplug_conformance.zoo import manifest
        from onnxplug_conformance.zoo.registry import select

        folder = manifest.zoo_dir()
        built = manifest.load(folder)
        families = {f for f in (args.family or "").split(",") if f}
        skip = {s for s in args.skip.split(",") if s}
        slot = {"models": {}, "command": "`python benchmarks/bench_zoo_profile.py " + " ".join(sys.argv[1:]) + "`"}
        for model in select(args.only):
            path = manifest.model_file(folder, model.name)
            if (families and model.family not in families) or model.name in skip \
                    or built.get(model.name, {}).get("status") != manifest.BUILT or not path.exists():
                continue
            slot["models"][model.name] = profile_model(model, path, args.provider, args.runs)
            print(model.name, slot["models"][model.name].get("error", ""), file=sys.stderr, flush=True)
            _save(args.json, args.provider, slot)
    data = json.loads(args.json.read_text()) if args.json.exists() else {"providers": {}}
    text = render(data, args.top)
    if args.markdown:
        print(text)
    if args.write:
        content = args.write.read_text(encoding="utf-8")
        if BEGIN not in content:
            raise SystemExit(f"{args.write}: no {BEGIN} marker")
        args.write.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}",
                                     content, flags=re.S), encoding="utf-8")
    return 0


def _error(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def _save(path: Path, provider: str, slot: dict[str, Any]) -> None:
    """Write ``provider``'s slot into the file as it is now (other providers' runs may have written it)."""
    current = json.loads(path.read_text()) if path.exists() else {"providers": {}}
    current["providers"][provider] = slot
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)  # atomic: runs of other providers read the file meanwhile


if __name__ == "__main__":
    sys.exit(main())
