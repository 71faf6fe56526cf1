"""An app's query graph as inline SVG, from the worker's ``/siddhi-apps/{app}/elements``.

Boxes are sources, streams (tables, windows, aggregations, triggers), queries and sinks;
arrows follow the events. An aggregation's entry names no query (WSO2's shape: its input
stream → the aggregation); the graph draws its feeding query, ``from S select … aggregate
every …``, as a query box of its own named after the aggregation. Columns are the longest path from a source, so a chain reads
left to right. Each query box shows the operators it runs (from ``explain``) when known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eddy.dashboard.html import Markup, esc

BOX_W, BOX_H, GAP_X, GAP_Y = 170, 46, 60, 22


@dataclass(frozen=True)
class GraphNode:
    id: str
    label: str
    kind: str  # source, sink, query, or the element's type (Stream, Table, …)
    detail: str = ""


def graph_of(elements: Sequence[Mapping[str, Any]]) -> tuple[list[GraphNode],
                                                              list[tuple[str, str]]]:
    """The nodes and edges of an app's element descriptors."""
    nodes: dict[str, GraphNode] = {}
    edges: list[tuple[str, str]] = []

    def element(name: str | None, kind: str | None) -> str | None:
        if name is None:
            return None
        nodes.setdefault(f"e:{name}", GraphNode(f"e:{name}", name, kind or "Stream"))
        return f"e:{name}"

    for entry in elements:
        if "source" in entry or "sink" in entry:
            role = "source" if "source" in entry else "sink"
            stream = element(entry.get(f"{role}Stream"), "Stream")
            io_id = f"{role}:{entry.get(role)}:{entry.get(f'{role}Stream')}"
            nodes.setdefault(io_id, GraphNode(io_id, f"@{role}({entry.get(role)})", role))
            if stream is not None:
                edges.append((io_id, stream) if role == "source" else (stream, io_id))
            continue
        query = _query_node(entry)
        nodes.setdefault(query.id, query)
        source = element(entry.get("inputStreamId"), entry.get("inputStreamType"))
        target = element(entry.get("outputStreamId"), entry.get("outputStreamType"))
        if source is not None:
            edges.append((source, query.id))
        if target is not None:
            edges.append((query.id, target))
    return list(nodes.values()), list(dict.fromkeys(edges))


def _query_node(entry: Mapping[str, Any]) -> GraphNode:
    """The query box of an entry: a query by its name, or an aggregation's feeding query."""
    name = entry.get("queryName")
    if name is None and entry.get("outputStreamType") == "Aggregation":
        aggregation = str(entry.get("outputStreamId"))
        return GraphNode(f"a:{aggregation}", f"aggregate {aggregation}", "query",
                         str(entry.get("outputStreamSiddhiApp") or ""))
    return GraphNode(f"q:{name}", str(name), "query", str(entry.get("query") or ""))


def _layers(nodes: list[GraphNode], edges: list[tuple[str, str]]) -> dict[str, int]:
    layer = {n.id: 0 for n in nodes}
    for _ in range(len(nodes)):  # longest path; bounded, so a cycle cannot loop forever
        changed = False
        for a, b in edges:
            if layer[b] < layer[a] + 1 and layer[a] + 1 < len(nodes):
                layer[b] = layer[a] + 1
                changed = True
        if not changed:
            break
    return layer


def graph_svg(elements: Sequence[Mapping[str, Any]],
              operators: Mapping[str, str] | None = None) -> Markup:
    """The graph as an ``<svg>`` with a title for screen readers."""
    nodes, edges = graph_of(elements)
    if not nodes:
        return Markup("<p>The app has no queries.</p>")
    layer = _layers(nodes, edges)
    rows: dict[int, int] = {}
    place: dict[str, tuple[int, int]] = {}
    for node in nodes:
        column = layer[node.id]
        row = rows.get(column, 0)
        rows[column] = row + 1
        place[node.id] = (column * (BOX_W + GAP_X) + 4, row * (BOX_H + GAP_Y) + 4)
    width = (max(layer.values()) + 1) * (BOX_W + GAP_X)
    height = max(rows.values()) * (BOX_H + GAP_Y) + 8
    parts = [f'<svg class="graph" role="img" aria-labelledby="graph-title" '
             f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
             f'<title id="graph-title">Query graph: {len(nodes)} elements, '
             f'{len(edges)} connections</title>'
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    for a, b in edges:
        (ax, ay), (bx, by) = place[a], place[b]
        parts.append(f'<line class="edge" x1="{ax + BOX_W}" y1="{ay + BOX_H // 2}" '
                     f'x2="{bx}" y2="{by + BOX_H // 2}" marker-end="url(#arrow)"/>')
    for node in nodes:
        x, y = place[node.id]
        second = node.kind
        if node.kind == "query" and operators and node.label in operators:
            second = operators[node.label]
        parts.append(
            f'<g class="node kind-{esc(node.kind.lower())}" data-id="{esc(node.id)}">'
            f'<title>{esc(node.detail or node.label)}</title>'
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 19}">{esc(node.label[:24])}</text>'
            f'<text class="sub" x="{x + 8}" y="{y + 36}">{esc(second[:30])}</text></g>')
    parts.append("</svg>")
    return Markup("".join(parts))
