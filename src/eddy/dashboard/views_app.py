"""The pages about one app: its live charts, queries, graph, store queries, aggregation
retrievals and simulator; and the app editor."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from eddy.dashboard.app_text import AppFacts
from eddy.dashboard.html import Markup, esc, join, page, tag
from eddy.dashboard.poller import AppState
from eddy.dashboard.sessions import Session
from eddy.dashboard.views_nodes import status_cell

GRANULARITIES = ("seconds", "minutes", "hours", "days", "months", "years")
CHARTS = (("Events per second", "events_in_total_rate,events_out_total_rate"),
          ("Micro-batch latency (ms)", "batch_latency_p50_ms,batch_latency_p99_ms"),
          ("Errors per second", "errors_total_rate"),
          ("State rows", "state_rows"))
NEW_APP = """@App:name('MyApp')

define stream InStream (symbol string, price double);

@info(name = 'query1')
from InStream[price > 10.0]
select symbol, price
insert into OutStream;
"""


def chart(title: str, source: str, figures: str, chart_id: str) -> Markup:
    """A live chart the script fills from ``source`` (the figures named, comma-separated)."""
    return Markup(
        f'<figure class="chart" id="{esc(chart_id)}" data-src="{esc(source)}" '
        f'data-figures="{esc(figures)}" data-points="0">'
        f'<figcaption>{esc(title)}</figcaption>'
        f'<svg role="img" aria-label="{esc(title)}, last hour" viewBox="0 0 600 160" '
        f'preserveAspectRatio="none"></svg><div class="legend"></div></figure>')


def _select(name: str, label: str, options: Iterable[str], select_id: str,
            chosen: str | None = None) -> Markup:
    items = join(tag("option", o, value=o, selected=o == chosen) for o in options)
    return join([tag("label", label, for_=select_id),
                 tag("select", items, id=select_id, name=name)])


def _store_query(node: str, app: str) -> Markup:
    return Markup(
        f'<section aria-labelledby="sq-title"><h2 id="sq-title">Store query</h2>'
        f'<form data-json="/api/store-query" data-result="sq-result" class="stack">'
        f'<input type="hidden" name="node" value="{esc(node)}">'
        f'<input type="hidden" name="app" value="{esc(app)}">'
        f'<label for="sq-query">On-demand query</label>'
        f'<textarea id="sq-query" name="query" rows="3" required></textarea>'
        f'<button type="submit">Run query</button></form>'
        f'<div id="sq-result" role="status" aria-live="polite"></div></section>')


def _aggregation(node: str, app: str, aggregations: Sequence[str]) -> Markup:
    if not aggregations:
        return Markup("")
    return Markup(
        f'<section aria-labelledby="agg-title"><h2 id="agg-title">Aggregation</h2>'
        f'<form data-json="/api/aggregation" data-result="agg-result" class="inline">'
        f'<input type="hidden" name="node" value="{esc(node)}">'
        f'<input type="hidden" name="app" value="{esc(app)}">'
        f'{_select("aggregation", "Aggregation", aggregations, "agg-name")}'
        f'<label for="agg-minutes">Within the last (minutes)</label>'
        f'<input id="agg-minutes" name="minutes" type="number" min="1" value="60" required>'
        f'{_select("per", "Per", GRANULARITIES, "agg-per", "seconds")}'
        f'<button type="submit">Retrieve</button></form>'
        f'<div id="agg-result" role="status" aria-live="polite"></div></section>')


def _simulator(node: str, app: str, facts: AppFacts) -> Markup:
    if not facts.http_inputs:
        return Markup('<section><h2>Simulator</h2><p>The app has no HTTP source '
                      '(<code>@source(type=\'http\')</code>) to send events to.</p></section>')
    streams = [i.stream for i in facts.http_inputs]
    fields = join(
        Markup(f'<fieldset data-stream="{esc(i.stream)}"><legend>{esc(i.stream)}</legend>')
        + join(Markup(f'<label for="sim-{esc(i.stream)}-{esc(a)}">{esc(a)} ({esc(t.lower())})'
                      f'</label><input id="sim-{esc(i.stream)}-{esc(a)}" '
                      f'name="value:{esc(i.stream)}:{esc(a)}">') for a, t in i.attributes)
        + Markup("</fieldset>") for i in facts.http_inputs)
    return Markup(
        f'<section aria-labelledby="sim-title"><h2 id="sim-title">Simulator</h2>'
        f'<form data-json="/api/simulate" data-result="sim-result" class="stack">'
        f'<input type="hidden" name="node" value="{esc(node)}">'
        f'<input type="hidden" name="app" value="{esc(app)}">'
        f'{_select("stream", "Stream", streams, "sim-stream")}{fields}'
        f'<button type="submit">Send event</button></form>'
        f'<form data-json="/api/simulate-csv" data-result="sim-result" class="stack">'
        f'<input type="hidden" name="node" value="{esc(node)}">'
        f'<input type="hidden" name="app" value="{esc(app)}">'
        f'{_select("stream", "Stream", streams, "csv-stream")}'
        f'<label for="csv-file">CSV file</label>'
        f'<input id="csv-file" type="file" accept=".csv,text/csv" data-into="csv-text">'
        f'<label for="csv-text">CSV rows (one event per line)</label>'
        f'<textarea id="csv-text" name="csv" rows="4"></textarea>'
        f'<label for="csv-rate">Events per second</label>'
        f'<input id="csv-rate" name="rate" type="number" min="0.1" step="any" value="10">'
        f'<button type="submit">Send CSV</button></form>'
        f'<div id="sim-result" role="status" aria-live="polite"></div></section>')


def app_page(node: str, app: AppState, facts: AppFacts | None, graph: Markup,
             queries: list[str], session: Session) -> str:
    source = "/api/series?" + urlencode({"node": node, "app": app.name})
    charts = join(chart(title, source, figures, f"chart-{i}")
                  for i, (title, figures) in enumerate(CHARTS))
    query_rows = join(Markup(
        f'<tr data-query="{esc(q)}"><th scope="row">{esc(q)}</th>'
        f'<td>{esc((facts.operators.get(q, "") if facts else ""))}</td>'
        f'<td data-figure="events_in_total_rate">–</td>'
        f'<td data-figure="events_out_total_rate">–</td>'
        f'<td data-figure="events_out_total">–</td></tr>') for q in queries)
    edit = tag("a", "Edit in the editor",
               href="/editor?" + urlencode({"node": node, "app": app.name}))
    parts = [
        Markup(f'<p>Node {esc(node)} · status {status_cell(app)} · {edit}</p>'),
        Markup(f'<div class="charts">{charts}</div>'),
        Markup(f'<section aria-labelledby="q-title"><h2 id="q-title">Queries</h2>'
               f'<table id="queries" data-src="{esc(source)}"><caption>Per query, live'
               f'</caption><thead><tr><th scope="col">Query</th><th scope="col">Operators'
               f'</th><th scope="col">In</th><th scope="col">Out</th>'
               f'<th scope="col">Out (total)</th></tr></thead><tbody>{query_rows}</tbody>'
               f'</table></section>'),
        Markup(f'<section aria-labelledby="g-title"><h2 id="g-title">Query graph</h2>'
               f'<div class="graph-box">{graph}</div></section>')]
    if facts is not None and app.status == "active":
        parts += [_store_query(node, app.name), _aggregation(node, app.name,
                                                             facts.aggregations),
                  _simulator(node, app.name, facts)]
    return page(f"App {app.name}", join(parts), session, "/apps")


def editor_page(nodes: Sequence[str], text: str, session: Session,
                node: str | None = None) -> str:
    deploy: Markup = Markup("")
    if session.admin and nodes:
        deploy = Markup(f'{_select("node", "Node", nodes, "deploy-node", node)}'
                        f'<button type="button" id="deploy">Deploy</button>')
    body = Markup(
        f'<div class="editor-bar"><button type="button" id="explain">Explain</button>{deploy}'
        f'</div><div class="editor"><pre class="gutter" id="gutter" aria-hidden="true"></pre>'
        f'<label for="source" class="visually-hidden">App text</label>'
        f'<textarea id="source" spellcheck="false" rows="22" '
        f'aria-describedby="problems">{esc(text)}</textarea></div>'
        f'<div id="problems" role="status" aria-live="polite"></div>'
        f'<div id="deploy-result" role="status" aria-live="polite"></div>'
        f'<pre id="explanation"></pre>')
    return page("Editor", body, session, "/editor")


def json_rows(columns: list[str], records: list[list[Any]]) -> dict[str, Any]:
    return {"columns": columns, "records": records}


def app_link(node: str, app: str) -> str:
    return f"/apps/{quote(node)}/{quote(app)}"
