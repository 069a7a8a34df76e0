"""Latency of an onnxplug provider against onnxruntime (CPU) over the model zoo.

    export ONNXPLUG_ZOO_DIR=/tmp/zoo-bench; python -m onnxplug_conformance.zoo.build
    python benchmarks/bench_zoo.py --provider numba [--only a,b | --family vision] [--blocks 3]
    python benchmarks/bench_zoo.py --markdown            # tables of every provider in the JSON
    python benchmarks/bench_zoo.py --write docs/benchmarks.md --plot docs/benchmarks-zoo.png

The method and its summaries are described in docs/benchmarks.md ("The model zoo against
onnxruntime"). Results accumulate per provider in a JSON file (``--json``); a new measurement of a
model replaces the old one, so providers and parts of the zoo can be measured separately. Models
that failed to build are skipped; a model onnxplug cannot run is recorded with its error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
from harness import PAUSE_S, geomean, interleaved, machine_description, markdown_table

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "zoo.json"
SMALL_MS = 1.0
BEGIN, END = "<!-- bench_zoo: begin -->", "<!-- bench_zoo: end -->"


def ort_runner(path: str, threads: int) -> Callable[[Mapping[str, np.ndarray]], object]:
    import onnxruntime

    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads, so.log_severity_level = threads, 1, 3
    sess = onnxruntime.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda feeds: sess.run(None, dict(feeds))


def plug_runner(path: str, provider: str, threads: int) -> Callable[[Mapping[str, np.ndarray]], object]:
    import onnxplug

    so = onnxplug.SessionOptions()
    so.intra_op_num_threads, so.log_severity_level = threads, 3
    sess = onnxplug.InferenceSession(path, so, providers=[provider])
    return lambda feeds: sess.run(None, dict(feeds))


def _block_runs(run: Callable, feeds: Mapping[str, np.ndarray], target_s: float) -> int:
    """Runs per block so that a block of the slower engine takes about ``target_s``; also the warm-up."""
    run(feeds)  # compiles, plans
    t0 = time.perf_counter()
    run(feeds)
    return int(min(20, max(1, target_s / max(time.perf_counter() - t0, 1e-6))))


def measure_model(model, path: Path, provider: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both shape sets of one model; one onnxplug session for both, as a user would."""
    from onnxplug_conformance.zoo.inputs import feeds as model_feeds

    entry: dict[str, Any] = {"family": model.family, "cases": []}
    try:
        ours = plug_runner(str(path), provider, args.threads)
        ort = ort_runner(str(path), args.threads)
    except Exception as e:  # noqa: BLE001 - recorded, the benchmark goes on
        entry["error"] = f"session: {_error(e)}"
        return entry
    for shape_set in (0, 1):
        feeds = model_feeds(model, shape_set)
        try:
            with np.errstate(all="ignore"):
                runs = max(_block_runs(ours, feeds, args.block_s), _block_runs(ort, feeds, args.block_s))
                t = interleaved({"onnxruntime": ort, provider: ours}, feeds, blocks=args.blocks,
                                block_runs=min(runs, args.max_block_runs), warmup=0)
        except Exception as e:  # noqa: BLE001
            entry["error"] = f"shape set {shape_set}: {_error(e)}"
            continue
        o, p = t["onnxruntime"].median_ms, t[provider].median_ms
        entry["cases"].append({"shape_set": shape_set, "onnxruntime_ms": round(o, 4), "onnxplug_ms": round(p, 4),
                               "ratio": round(p / o, 3), "runs": t[provider].runs})
    return entry


def fixed_cost(provider: str, threads: int) -> dict[str, dict[str, float]]:
    """Median microseconds of ``run`` on one-node models (Identity, Add) on a 1-element tensor,
    both runtimes interleaved: what a run costs beyond its kernels."""
    import tempfile

    import onnx
    from onnx import TensorProto, helper

    out = {}
    for op, inputs in (("Identity", ["x"]), ("Add", ["x", "x"])):
        graph = helper.make_graph([helper.make_node(op, inputs, ["y"])], op.lower(),
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        with tempfile.TemporaryDirectory() as d:
            path = str(Path(d) / "one.onnx")
            onnx.save(model, path)
            engines = {"onnxruntime": ort_runner(path, threads), provider: plug_runner(path, provider, threads)}
            t = interleaved(engines, {"x": np.ones(1, np.float32)}, blocks=6, block_runs=2000, warmup=50)
        o, p = t["onnxruntime"].median_ms * 1e3, t[provider].median_ms * 1e3
        out[op] = {"onnxruntime_us": round(o, 2), "onnxplug_us": round(p, 2), "ratio": round(p / o, 2)}
    return out


def summarize(models: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The geomean over every case, the worst model, and the small-model group's geomean."""
    cases = [c for m in models.values() for c in m.get("cases", [])]
    small = [c for c in cases if c["onnxruntime_ms"] < SMALL_MS]
    per_model = {n: geomean([c["ratio"] for c in m["cases"]]) for n, m in models.items() if m.get("cases")}
    worst = max(per_model, key=lambda n: max(c["ratio"] for c in models[n]["cases"]), default=None)
    return {"cases": len(cases), "models": len(per_model),
            "geomean": round(geomean([c["ratio"] for c in cases]), 3) if cases else None,
            "worst": worst, "worst_ratio": max(c["ratio"] for c in models[worst]["cases"]) if worst else None,
            "small_cases": len(small),
            "small_geomean": round(geomean([c["ratio"] for c in small]), 3) if small else None,
            "failed": sorted(n for n, m in models.items() if m.get("error") and not m.get("cases"))}


def render(data: Mapping[str, Any], plot: str | None = None) -> str:
    """Markdown: a summary table, the fixed cost, then one table per provider."""
    providers = sorted(data.get("providers", {}))
    out = [f"Machine: {data.get('machine', '?')}.", ""]
    rows = []
    for p in providers:
        s = summarize(data["providers"][p]["models"])
        rows.append([f"`{p}`", s["models"], s["cases"], f"{s['geomean']:.2f}" if s["geomean"] else "-",
                     f"{s['worst']} ({s['worst_ratio']:.2f})" if s["worst"] else "-",
                     f"{s['small_geomean']:.2f} ({s['small_cases']} cases)" if s["small_geomean"] else "-",
                     ", ".join(s["failed"]) or "none"])
    out.append(markdown_table(["provider", "models", "cases", "geomean ratio", "worst model (its worst case)",
                               "small cases (onnxruntime < 1 ms)", "not run (error)"], rows))
    families = sorted({m["family"] for p in providers for m in data["providers"][p]["models"].values()})
    by_family = []
    for fam in families:
        row = [fam]
        for p in providers:
            rs = [c["ratio"] for m in data["providers"][p]["models"].values() if m["family"] == fam
                  for c in m.get("cases", [])]
            row.append(f"{geomean(rs):.2f} ({len(rs) // 2})" if rs else "-")
        by_family.append(row)
    out += ["", "Geomean ratio by family (models measured):", "",
            markdown_table(["family"] + [f"`{p}`" for p in providers], by_family)]
    fixed = [[f"`{p}`", op, f"{f['onnxruntime_us']:.1f}", f"{f['onnxplug_us']:.1f}", f"{f['ratio']:.1f}"]
             for p in providers for op, f in data["providers"][p].get("fixed_cost", {}).items()]
    if fixed:
        out += ["", "Fixed cost of one `run` (a one-node model on a 1-element tensor), medians:", "",
                markdown_table(["provider", "model", "onnxruntime us", "onnxplug us", "ratio"], fixed)]
    if plot:
        out += ["", f"![per-model ratios by provider]({plot})"]
    for p in providers:
        models = data["providers"][p]["models"]
        rows = []
        for name in sorted(models, key=lambda n: (models[n]["family"], n)):
            m = models[name]
            cs = {c["shape_set"]: c for c in m.get("cases", [])}
            cell = [f"{cs[s]['onnxruntime_ms']:.2f} / {cs[s]['onnxplug_ms']:.2f} = **{cs[s]['ratio']:.2f}**"
                    if s in cs else "-" for s in (0, 1)]
            ratio = f"{geomean([c['ratio'] for c in cs.values()]):.2f}" if cs else "-"
            rows.append([name, m["family"], *cell, ratio, m.get("error", "").replace("|", "\\|")])
        out += ["", f"#### `{p}`", "", f"{data['providers'][p].get('command', '')}", "",
                markdown_table(["model", "family", "shape set 0: onnxruntime / ours ms = ratio", "shape set 1",
                                "model ratio", "error"], rows)]
    return "\n".join(out)


def plot_ratios(data: Mapping[str, Any], path: Path) -> None:
    """Per-model ratios (log scale), one marker per provider."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    providers = sorted(data["providers"])
    names = sorted({n for p in providers for n, m in data["providers"][p]["models"].items() if m.get("cases")})
    fig, ax = plt.subplots(figsize=(8, 0.16 * len(names) + 1.5))
    for k, p in enumerate(providers):
        models = data["providers"][p]["models"]
        ys, xs = [], []
        for i, n in enumerate(names):
            if models.get(n, {}).get("cases"):
                ys.append(i + (k - (len(providers) - 1) / 2) * 0.2)
                xs.append(geomean([c["ratio"] for c in models[n]["cases"]]))
        ax.scatter(xs, ys, s=12, label=p)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=0.8)
    for x, style in ((1.5, "--"), (3.0, ":")):  # issue 37's numba geomean and per-model bounds
        ax.axvline(x, color="grey", lw=0.8, ls=style)
    ax.set_yticks(range(len(names)), names, fontsize=6)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("onnxplug / onnxruntime median latency (2 threads each; geomean of two shape sets)")
    ax.legend(loc="lower right", fontsize=7)
    ax.grid(axis="x", which="both", lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_doc(doc: Path, text: str) -> None:
    """Replace the block between the bench_zoo markers of ``doc``."""
    content = doc.read_text(encoding="utf-8")
    if BEGIN not in content:
        raise SystemExit(f"{doc}: no {BEGIN} marker")
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}", content, flags=re.S)
    doc.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=["numba", "numpy", "opencl", "cupy"])
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--family", help="comma-separated families")
    parser.add_argument("--skip", default="", help="comma-separated model names to leave out")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--block-s", type=float, default=0.2, help="target seconds of one block")
    parser.add_argument("--max-block-runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--markdown", action="store_true", help="print the tables of the JSON")
    parser.add_argument("--write", type=Path, help="replace the bench_zoo block of this Markdown file")
    parser.add_argument("--plot", type=Path, help="write the per-model plot here (PNG or SVG)")
    args = parser.parse_args(argv)
    data: dict[str, Any] = _load(args.json)
    if args.provider:
        measure(args, data)
        save(args.json, data, args.provider)
    if args.plot:
        plot_ratios(data, args.plot)
    link = None
    if args.plot and args.write:
        link = str(args.plot.resolve().relative_to(args.write.resolve().parent))
    text = render(data, link)
    if args.markdown:
        print(text)
    if args.write:
        write_doc(args.write, text)
    return 0


def _load(path: Path) -> dict[str, Any]:
    for _ in range(20):  # another run may be writing it
        try:
            return json.loads(path.read_text()) if path.exists() else {"providers": {}}
        except json.JSONDecodeError:
            time.sleep(0.5)
    return json.loads(path.read_text())


def _error(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def save(path: Path, data: dict[str, Any], provider: str) -> None:
    """Write ``provider``'s slot into the file as it is now (runs of other providers may have written it)."""
    current = _load(path)
    current["machine"] = data["machine"]
    current["providers"][provider] = data["providers"][provider]
    data["providers"] = current["providers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)  # atomic: runs of other providers read the file meanwhile


def measure(args: argparse.Namespace, data: dict[str, Any]) -> None:
    from onnxplug_conformance.zoo import manifest
    from onnxplug_conformance.zoo.registry import select

    folder = manifest.zoo_dir()
    built = manifest.load(folder)
    families = {f.strip() for f in (args.family or "").split(",") if f.strip()}
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    data["machine"] = f"{machine_description()}; onnxruntime {_version('onnxruntime')}, numba {_version('numba')}"
    slot = data["providers"].setdefault(args.provider, {"models": {}})
    command = "`python benchmarks/bench_zoo.py " + " ".join(sys.argv[1:]) + "`"
    partial = args.only or args.family or args.skip
    # a run over part of the zoo adds to the models measured before
    slot["command"] = f"{slot['command']}, then {command}" if partial and slot.get("command") else command
    slot["fixed_cost"] = fixed_cost(args.provider, args.threads)
    print(f"fixed cost: {slot['fixed_cost']}", file=sys.stderr, flush=True)
    for model in select(args.only):
        if (families and model.family not in families) or model.name in skip:
            continue
        if built.get(model.name, {}).get("status") != manifest.BUILT:
            continue
        path = manifest.model_file(folder, model.name)
        if not path.exists():
            continue
        entry = measure_model(model, path, args.provider, args)
        slot["models"][model.name] = entry
        print(f"{model.name}: {[c['ratio'] for c in entry['cases']]} {entry.get('error', '')}", file=sys.stderr,
              flush=True)
        save(args.json, data, args.provider)
        time.sleep(PAUSE_S)
    s = summarize(slot["models"])
    print(f"{args.provider}: geomean {s['geomean']}, worst {s['worst']} {s['worst_ratio']}, "
          f"small {s['small_geomean']} ({s['small_cases']} cases)", file=sys.stderr)


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
