"""``onnxplug show``: a standalone HTML page of a partitioned graph, laid out by Graphviz ``dot``.

Nodes are filled with their provider's colour and carry ``data-provider``; an edge whose value
crosses providers is a dashed copy edge; a fused group is a boxed cluster; each node's tooltip
gives its op, provider, the reasons earlier providers declined it and, given a profile, its time.
If/Loop/Scan bodies follow as expandable sections. The page needs no network: the SVG is inline.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from typing import Any, Mapping, Sequence

from onnxplug.errors import OnnxplugError

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_source(groups: Sequence[Any], colours: Mapping[str, str], times_ms: Mapping[str, float]) -> str:
    """The Graphviz source of one graph's groups (a partitioner's ``Group`` list)."""
    lines = ["digraph G {", "rankdir=TB; node [shape=box, style=\"filled,rounded\", fontname=Helvetica, "
             "fontsize=10, fontcolor=white]; edge [fontname=Helvetica, fontsize=8];"]
    producer: dict[str, tuple[str, str]] = {}  # value -> (node id, provider)
    ids: dict[int, str] = {}
    for gi, group in enumerate(groups):
        provider = group.provider.name
        body = []
        for ni, (node, declined) in enumerate(zip(group.nodes, group.declined)):
            nid = f"n{gi}_{ni}"
            ids[id(node)] = nid
            time = times_ms.get(node.name)
            tip = [f"{node.op_type} {node.name!r}", f"provider: {provider}"]
            tip += [f"{d.provider} declined: {d.kind}: {d.reason}" for d in declined]
            if time is not None:
                tip.append(f"time: {time:.3f} ms")
            label = f"{node.op_type}\n{node.name}" + (f"\n{time:.3f} ms" if time is not None else "")
            body.append(f"{nid} [id={_q(nid)}, label={_q(label)}, fillcolor={_q(colours[provider])}, "
                        f"tooltip={_q(chr(10).join(tip))}, class={_q('provider-' + provider)}];")
            for out in node.outputs:
                if out:
                    producer[out] = (nid, provider)
        if group.fused:
            lines.append(f"subgraph cluster_{gi} {{ label={_q('fused ' + group.name)}; style=dashed; "
                         f"color={_q(colours[provider])}; fontsize=9;")
            lines += body + ["}"]
        else:
            lines += body
    for group in groups:
        for node in group.nodes:
            for name in [*node.inputs, *node.implicit_inputs]:
                if name in producer:
                    src, src_provider = producer[name]
                    if src_provider != group.provider.name:
                        lines.append(f"{src} -> {ids[id(node)]} [style=dashed, color=\"#d62728\", "
                                     f"label={_q('copy ' + name)}, class=\"copy\"];")
                    else:
                        lines.append(f"{src} -> {ids[id(node)]};")
    lines.append("}")
    return "\n".join(lines)


def render_svg(source: str) -> str:
    """Lay out with Graphviz ``dot`` (the ``graphviz`` system package)."""
    dot = shutil.which("dot")
    if dot is None:
        raise OnnxplugError("onnxplug show needs Graphviz's dot on PATH (Debian/Ubuntu: apt-get install graphviz)")
    done = subprocess.run([dot, "-Tsvg"], input=source.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        raise OnnxplugError(f"dot failed: {done.stderr.decode(errors='replace').strip()}")
    svg = done.stdout.decode()
    return svg[svg.index("<svg"):]


def node_times(profile_events: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Total ms per node name of a profile's top-level Node events."""
    times: dict[str, float] = {}
    for e in profile_events:
        if e.get("cat") == "Node" and not e.get("args", {}).get("parent"):
            name = e["name"].removesuffix("_kernel_time")
            times[name] = times.get(name, 0.0) + e["dur"] / 1e3
    return times


def page(engine: Any, title: str, times_ms: Mapping[str, float] | None = None) -> str:
    """The HTML page of an engine's main graph and bodies."""
    names = [p.name for p in engine.providers]
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    times = times_ms or {}
    legend = " ".join(f'<span class="key" style="background:{c}">{html.escape(n)}</span>' for n, c in colours.items())
    sections = [f"<h1>{html.escape(title)}</h1><p>{legend} <span class=\"copyk\">- - copy</span></p>",
                f'<div class="graph" id="main">{render_svg(dot_source(engine.groups, colours, times))}</div>']
    for graph, groups in engine.subgraph_groups:
        sections.append(f"<details><summary>body {html.escape(graph.name or '')}</summary><div class=\"graph\">"
                        f"{render_svg(dot_source(groups, colours, times))}</div></details>")
    style = ("body{font-family:Helvetica,sans-serif;margin:1em} .key{color:#fff;padding:2px 6px;border-radius:3px}"
             " .copyk{color:#d62728}")
    data = json.dumps({"providers": colours})
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(sections)}"
            f"<script type=\"application/json\" id=\"onnxplug-data\">{data}</script>"
            f"<script>{_RENDERED}</script></body></html>")


#: once laid out, the page records what it drew on ``body[data-rendered]``: per node id, its
#: provider, fill colour and drawn width (what a headless browser check reads back)
_RENDERED = """window.addEventListener('load', function () {
  var drawn = {};
  document.querySelectorAll('g.node').forEach(function (g) {
    var shape = g.querySelector('path, polygon, ellipse');
    var box = g.getBBox();
    var provider = (g.getAttribute('class').match(/provider-(\\S+)/) || [])[1] || '';
    drawn[g.id] = [provider, shape ? shape.getAttribute('fill') : '', box.width];
  });
  document.body.setAttribute('data-rendered', JSON.stringify(drawn));
});"""
