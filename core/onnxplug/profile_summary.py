"""``onnxplug profile TRACE.json``: a profile (onnxplug's or onnxruntime's) summarised as tables.

Node time is exclusive: a step's time less that of the body steps run inside it (events with the
same ``tid`` nested in its interval), so an If or Loop is not counted twice with its body.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Sequence

from onnxplug.errors import OnnxplugError

COPY_OPS = ("MemcpyFromHost", "MemcpyToHost")


def load_trace(path: str) -> list[dict[str, Any]]:
    """The events of a Chrome trace JSON file (a list, or an object with ``traceEvents``)."""
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise OnnxplugError(f"{path}: not JSON: {e}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list) or not all(isinstance(e, dict) and "name" in e for e in events):
        raise OnnxplugError(f"{path}: not a Chrome trace (a JSON list of events)")
    return events


def _exclusive(nodes: list[dict[str, Any]]) -> list[float]:
    """Each node event's duration less the events nested directly inside it."""
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].get("tid", 0), nodes[i]["ts"], -nodes[i]["dur"]))
    own = [float(n["dur"]) for n in nodes]
    stack: list[int] = []
    for i in order:
        e = nodes[i]
        while stack and (nodes[stack[-1]].get("tid", 0) != e.get("tid", 0)
                         or nodes[stack[-1]]["ts"] + nodes[stack[-1]]["dur"] < e["ts"] + e["dur"] - 1e-3):
            stack.pop()
        if stack:
            own[stack[-1]] -= float(e["dur"])
        stack.append(i)
    return [max(t, 0.0) for t in own]


def _table(title: str, rows: Sequence[tuple[str, int, float]], total: float) -> list[str]:
    width = max([len(title)] + [len(r[0]) for r in rows])
    lines = [f"{title:<{width}}  {'count':>6}  {'ms':>10}  {'share':>6}"]
    for name, count, us in rows:
        share = 100 * us / total if total else 0.0
        lines.append(f"{name:<{width}}  {count:>6}  {us / 1e3:>10.3f}  {share:>5.1f}%")
    return lines


def summarise(events: list[dict[str, Any]], top: int = 10) -> list[str]:
    """The summary's lines: runs, time by op type, by provider, the top nodes, copies, compilation."""
    nodes = [e for e in events if e.get("cat") == "Node" and e.get("ph", "X") == "X"]
    sessions = [e for e in events if e.get("cat") == "Session"]
    runs = [e for e in sessions if e["name"] == "model_run"]
    own = _exclusive(nodes)
    total = sum(own)
    by_op: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    by_provider: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    by_node: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e, us in zip(nodes, own):
        args = e.get("args", {})
        for table, key in ((by_op, args.get("op_name", "?")), (by_provider, args.get("provider", "?")),
                           (by_node, f"{e['name'].removesuffix('_kernel_time')} ({args.get('op_name', '?')})")):
            table[key][0] += 1
            table[key][1] += us

    def rows(table: dict[str, list[float]], n: int | None = None) -> list[tuple[str, int, float]]:
        ordered = sorted(table.items(), key=lambda kv: -kv[1][1])[:n]
        return [(k, int(v[0]), v[1]) for k, v in ordered]

    run_ms = [e["dur"] / 1e3 for e in runs]
    lines = [f"runs: {len(runs)}" + (f", model_run median {sorted(run_ms)[len(run_ms) // 2]:.3f} ms" if runs else ""),
             f"node events: {len(nodes)}, {total / 1e3:.3f} ms of node time (exclusive)", ""]
    lines += _table("by op type", rows(by_op), total) + [""]
    lines += _table("by provider", rows(by_provider), total) + [""]
    lines += _table(f"top nodes ({min(top, len(by_node))})", rows(by_node, top), total) + [""]
    copies = [(e, us) for e, us in zip(nodes, own) if e.get("args", {}).get("op_name") in COPY_OPS]
    lines.append(f"copies: {len(copies)} event(s), {sum(us for _, us in copies) / 1e3:.3f} ms")
    compiles = [e for e in sessions if e["name"] == "kernel_compilation"]
    lines.append(f"kernel compilation: {len(compiles)} event(s), {sum(e['dur'] for e in compiles) / 1e3:.3f} ms")
    return lines
