// eddy dashboard: live charts (inline SVG), JSON forms, the editor's error marks.
// Hand-written, no libraries, nothing fetched from elsewhere (see eddy/dashboard/__init__.py).
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 2000;
const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()}};
  const response = await fetch(path, {credentials: "same-origin", ...options});
  let data = {};
  try { data = await response.json(); } catch (e) { data = {message: response.statusText}; }
  return {ok: response.ok, status: response.status, data};
}

function el(name, attrs, text) {
  const node = name.startsWith("svg:") ? document.createElementNS(SVG, name.slice(4))
    : document.createElement(name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "–";
  return Math.abs(v) >= 100 ? Math.round(v).toLocaleString() : (+v).toFixed(2);
}

// -- charts ------------------------------------------------------------------------
function drawChart(figure, series) {
  const names = figure.dataset.figures.split(",");
  const svg = figure.querySelector("svg");
  const legend = figure.querySelector(".legend");
  const lines = names.map((n) => series[n] || []);
  const all = lines.flat();
  svg.replaceChildren();
  legend.replaceChildren();
  figure.dataset.points = String(Math.max(0, ...lines.map((l) => l.length)));
  figure.dataset.max = String(Math.max(0, ...all.map((p) => p[1])));
  if (!all.length) {
    svg.append(el("svg:text", {x: 10, y: 80, class: "empty"}, "no data yet"));
    return;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]), t0 + 60000);
  const top = Math.max(...all.map((p) => p[1]), 1e-9) * 1.1;
  const x = (t) => 40 + (t - t0) / (t1 - t0) * 550, y = (v) => 150 - v / top * 140;
  svg.append(el("svg:line", {x1: 40, y1: 150, x2: 590, y2: 150, class: "axis"}));
  svg.append(el("svg:text", {x: 2, y: 16, class: "tick"}, fmt(top / 1.1)));
  svg.append(el("svg:text", {x: 2, y: 150, class: "tick"}, "0"));
  lines.forEach((points, i) => {
    const d = points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    if (points.length) svg.append(el("svg:polyline", {points: d, class: `line s${i}`}));
    const last = points.length ? points[points.length - 1][1] : null;
    legend.append(el("span", {class: `key s${i}`}, `${names[i]}: ${fmt(last)}`));
  });
}

function updateQueries(table, queries) {
  for (const row of table.querySelectorAll("tr[data-query]")) {
    const figures = queries[row.dataset.query] || {};
    for (const cell of row.querySelectorAll("td[data-figure]")) {
      const v = figures[cell.dataset.figure];
      cell.textContent = cell.dataset.figure.endsWith("_rate") ? `${fmt(v)}/s` : fmt(v);
    }
  }
}

function startLive() {
  const targets = [...document.querySelectorAll("figure.chart[data-src], table[data-src]")];
  const sources = [...new Set(targets.map((t) => t.dataset.src))];
  const tick = async () => {
    for (const src of sources) {
      const {ok, data} = await api(src);
      if (!ok) continue;
      for (const t of targets.filter((t) => t.dataset.src === src)) {
        if (t.tagName === "TABLE") updateQueries(t, data.queries || {});
        else drawChart(t, data.series || {});
      }
    }
  };
  if (sources.length) { tick(); setInterval(tick, POLL_MS); }
}

// -- JSON forms ----------------------------------------------------------------------
function rowsTable(columns, records, caption) {
  const table = el("table");
  table.append(el("caption", {}, caption));
  const head = el("tr");
  columns.forEach((c) => head.append(el("th", {scope: "col"}, c)));
  table.appendChild(el("thead")).append(head);
  const body = table.appendChild(el("tbody"));
  for (const r of records) {
    const tr = body.appendChild(el("tr"));
    r.forEach((v) => tr.append(el("td", {}, v === null ? "null" : String(v))));
  }
  return table;
}

function aggregationChart(columns, records) {
  const at = columns.indexOf("AGG_TIMESTAMP");
  if (at < 0 || !records.length) return null;
  const numeric = columns.filter((c, i) => i !== at && records.every((r) => typeof r[i] === "number"));
  if (!numeric.length) return null;
  const figure = el("figure", {class: "chart", "data-figures": numeric.join(",")});
  figure.append(el("figcaption", {}, "Retrieved values"));
  figure.append(el("svg", {role: "img", "aria-label": "Retrieved values over time",
    viewBox: "0 0 600 160", preserveAspectRatio: "none"}));
  figure.append(el("div", {class: "legend"}));
  const series = {};
  numeric.forEach((c) => {
    const i = columns.indexOf(c);
    series[c] = records.map((r) => [r[at], r[i]]).sort((a, b) => a[0] - b[0]);
  });
  drawChart(figure, series);
  return figure;
}

function showError(target, data) {
  const where = data.line ? ` (line ${data.line}, column ${data.column})` : "";
  target.replaceChildren(el("p", {class: "error", role: "alert"}, `${data.message || "failed"}${where}`));
}

async function followSimulation(target, run) {
  const line = el("p", {class: "progress"});
  target.append(line);
  for (;;) {
    const {ok, data} = await api(`/api/simulations/${run.id}`);
    if (!ok) return;
    line.textContent = `sent ${data.sent} of ${data.total} events to ${data.stream}` +
      (data.error ? ` — ${data.error}` : "") + (data.done ? " (done)" : "");
    if (data.error) line.className = "error";
    if (data.done) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

function jsonForm(form) {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const target = document.getElementById(form.dataset.result);
    const body = Object.fromEntries(new FormData(form).entries());
    target.replaceChildren(el("p", {}, "…"));
    const {ok, data} = await api(form.dataset.json, body);
    if (!ok) return showError(target, data);
    target.replaceChildren();
    if (data.columns) {
      target.append(rowsTable(data.columns, data.records, `${data.records.length} rows: ${data.query}`));
      const chart = aggregationChart(data.columns, data.records);
      if (chart) target.append(chart);
    } else {
      target.append(el("p", {class: "ok"}, data.message));
      if (data.simulation) followSimulation(target, data.simulation);
    }
  });
}

// -- the editor ------------------------------------------------------------------------
function startEditor(source) {
  const gutter = document.getElementById("gutter");
  const problems = document.getElementById("problems");
  let marks = new Map();
  const drawGutter = () => {
    const count = source.value.split("\n").length;
    gutter.replaceChildren();
    for (let i = 1; i <= count; i++) {
      const line = el("span", marks.has(i) ? {class: "err", title: marks.get(i)} : {}, String(i));
      gutter.append(line, "\n");
    }
    gutter.scrollTop = source.scrollTop;
  };
  const goTo = (line, column) => {
    const lines = source.value.split("\n");
    let at = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) at += lines[i].length + 1;
    source.focus();
    source.setSelectionRange(at + column, at + (lines[line - 1] || "").length);
  };
  let timer = null, asked = 0;
  const check = async () => {
    const mine = ++asked;
    const {ok, data} = await api("/api/validate", {text: source.value});
    if (!ok || mine !== asked) return;
    marks = new Map(data.errors.map((e) => [e.line, e.message]));
    problems.replaceChildren();
    if (!data.errors.length) problems.append(el("p", {class: "ok"}, "No errors."));
    for (const err of data.errors) {
      const b = el("button", {type: "button", class: "problem"},
        `Line ${err.line}, column ${err.column}: ${err.message}`);
      b.addEventListener("click", () => goTo(err.line, err.column));
      problems.append(b);
    }
    source.setAttribute("aria-invalid", data.errors.length ? "true" : "false");
    drawGutter();
  };
  source.addEventListener("input", () => { drawGutter(); clearTimeout(timer); timer = setTimeout(check, 300); });
  source.addEventListener("scroll", () => { gutter.scrollTop = source.scrollTop; });
  source.addEventListener("keydown", (e) => {  // Tab indents; Escape leaves the text area
    if (e.key === "Tab" && !e.shiftKey && !e.ctrlKey) {
      e.preventDefault();
      source.setRangeText("    ", source.selectionStart, source.selectionEnd, "end");
      source.dispatchEvent(new Event("input"));
    } else if (e.key === "Escape") {
      document.getElementById("explain").focus();
    }
  });
  document.getElementById("explain").addEventListener("click", async () => {
    const out = document.getElementById("explanation");
    const {data} = await api("/api/explain", {text: source.value});
    out.textContent = data.text || (data.errors || []).map(
      (e) => `line ${e.line}, column ${e.column}: ${e.message}`).join("\n") || data.message;
  });
  const deploy = document.getElementById("deploy");
  if (deploy) deploy.addEventListener("click", async () => {
    const target = document.getElementById("deploy-result");
    const node = document.getElementById("deploy-node").value;
    const {ok, data} = await api("/api/deploy", {node, text: source.value});
    if (!ok) return showError(target, data);
    const name = (data.message || "").length ? (source.value.match(/@app:name\(\s*['"]([^'"]+)/i) || [])[1] : null;
    target.replaceChildren(el("p", {class: "ok"}, data.message));
    if (name) target.append(el("a", {href: `/apps/${encodeURIComponent(node)}/${encodeURIComponent(name)}`}, `Open ${name}`));
  });
  drawGutter();
  check();
}

// -- pages that refresh themselves -----------------------------------------------------
function startRefresh(marker) {
  let touched = false;
  document.addEventListener("input", () => { touched = true; });
  setInterval(() => {
    if (!touched && document.activeElement === document.body) location.reload();
  }, Number(marker.dataset.refresh) * 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  startLive();
  document.querySelectorAll("form[data-json]").forEach(jsonForm);
  document.querySelectorAll("input[type=file][data-into]").forEach((input) => {
    input.addEventListener("change", async () => {
      if (input.files.length) document.getElementById(input.dataset.into).value = await input.files[0].text();
    });
  });
  const source = document.getElementById("source");
  if (source) startEditor(source);
  const refresh = document.querySelector("[data-refresh]");
  if (refresh) startRefresh(refresh);
});
