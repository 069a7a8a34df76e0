"""Why each zoo model's nodes run off a provider: ``onnxplug run --explain`` over the built zoo.

For each built model and provider, a session is made as a user would (``providers=[P]``, the
default provider as fallback, default optimisation) and every node of the main graph and of each
If/Loop/Scan body that P left is listed with P's :class:`~onnxplug.provider.Decline`. A reason is
specific when its kind names a cause (op, dtype, attribute, shape, device, fusion) and its sentence
does not stand ``None`` in for the cause; a missing decline, one of kind ``other`` or a model that
does not load makes the check fail (exit status 1).

``python -m onnxplug_conformance.zoo.explain [--tier ci] [--only a,b] [--json OUT] numba opencl``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from onnxplug_conformance.zoo import manifest, registry

#: Kinds that name a cause; ``other`` does not.
SPECIFIC_KINDS = ("op", "dtype", "attribute", "shape", "device", "fusion")


@dataclass
class Unclaimed:
    """A node the provider left, with the reason it gave."""

    graph: str  #: "" for the main graph, else the body's name
    node: str
    op_type: str
    runs_on: str
    kind: str  #: "" when the provider gave no reason
    reason: str

    @property
    def specific(self) -> bool:
        # a bare None in the sentence is a Python repr standing in for the unknown cause
        return self.kind in SPECIFIC_KINDS and bool(self.reason) and not re.search(r"\bNone\b", self.reason)


@dataclass
class ModelExplain:
    """One model on one provider."""

    model: str
    provider: str
    nodes: int = 0
    unclaimed: list[Unclaimed] = field(default_factory=list)
    error: str = ""
    cpu_s: float = 0.0

    @property
    def vague(self) -> list[Unclaimed]:
        return [u for u in self.unclaimed if not u.specific]


def explain_engine(engine: Any, provider: str) -> tuple[int, list[Unclaimed]]:
    """Every node of ``engine``'s plan (bodies included) that ``provider`` does not run, with its
    reason, and the number of nodes in all."""
    graphs = [("", engine.groups)] + [(g.name or "<body>", groups) for g, groups in engine.subgraph_groups]
    found, total = [], 0
    for graph, groups in graphs:
        for group in groups:
            for node, declined in zip(group.nodes, group.declined):
                total += 1
                if group.provider.name == provider:
                    continue
                own = [d for d in declined if d.provider == provider]
                kind, reason = (own[0].kind, own[0].reason) if own else ("", "")
                found.append(Unclaimed(graph, node.name, node.op_type, group.provider.name, kind, reason))
    return total, found


def explain_model(path: str, provider: str) -> ModelExplain:
    """Make a session of the model at ``path`` on ``provider`` and list what it left."""
    import onnxplug as ort

    name = path.rsplit("/", 1)[-1].removesuffix(".onnx")
    result = ModelExplain(name, provider)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 2
    t0 = time.process_time()
    try:
        sess = ort.InferenceSession(path, options, providers=[provider])
        result.nodes, result.unclaimed = explain_engine(sess.engine, provider)
    except Exception as exc:  # noqa: BLE001 - a model that does not load is reported, not fatal
        lines = str(exc).strip().splitlines()
        result.error = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    result.cpu_s = time.process_time() - t0
    return result


def report_lines(results: Sequence[ModelExplain]) -> list[str]:
    """Per provider: models, nodes left, reasons by kind, and every vague one."""
    lines = []
    for provider in dict.fromkeys(r.provider for r in results):
        mine = [r for r in results if r.provider == provider]
        left = [u for r in mine for u in r.unclaimed]
        kinds = Counter(u.kind or "(none)" for u in left)
        ops = Counter(f"{u.op_type}: {u.kind}" for u in left)
        lines.append(f"{provider}: {len(mine)} model(s), {sum(r.nodes for r in mine)} node(s), "
                     f"{len(left)} left to another provider in {sum(1 for r in mine if r.unclaimed)} model(s); "
                     f"reasons by kind: {', '.join(f'{k}={n}' for k, n in kinds.most_common()) or 'none'}")
        for op, n in sorted(ops.items()):
            lines.append(f"    {op} x{n}")
        for r in mine:
            if r.error:
                lines.append(f"  {r.model}: did not load: {r.error}")
            for u in r.vague:
                lines.append(f"  VAGUE {r.model}: {u.op_type} {u.node!r}"
                             f"{' in ' + u.graph if u.graph else ''}: {u.kind or '(no reason)'}: {u.reason}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onnxplug_conformance.zoo.explain", description=__doc__)
    parser.add_argument("providers", nargs="+")
    parser.add_argument("--tier", choices=["ci", "full"], help="only models of this tier")
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--skip", default="", help="comma-separated model names to leave out")
    parser.add_argument("--json", metavar="OUT", help="write every unclaimed node and its reason as JSON")
    args = parser.parse_args(argv)
    folder = manifest.zoo_dir()
    entries = manifest.load(folder)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    models = [m.name for m in registry.select(args.only, args.tier)
              if entries.get(m.name, {}).get("status") == manifest.BUILT and m.name not in skip]
    if not models:
        print(f"no built zoo models in {folder}", file=sys.stderr)
        return 1
    results = []
    for provider in args.providers:
        for name in models:
            r = explain_model(str(manifest.model_file(folder, name)), provider)
            print(f"{provider} {name}: {r.nodes} node(s), {len(r.unclaimed)} left, {len(r.vague)} vague"
                  f"{', ' + r.error if r.error else ''} ({r.cpu_s:.1f} s CPU)", flush=True)
            results.append(r)
    print("\n".join(report_lines(results)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{**asdict(r), "vague": len(r.vague)} for r in results], f, indent=1)
    bad = sum(len(r.vague) + bool(r.error) for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
