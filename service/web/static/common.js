// Shared by the planner and the saved-plan page: calls to the API, problems beside their
// controls, GB/GiB labels and the stacked bar, drawn by hand in SVG from the API's bytes.
"use strict";
const SVGNS = "http://www.w3.org/2000/svg";
const KEY = "planner.api_key"; // sessionStorage: this tab only, gone when it closes

function h(tag, attrs, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function gb(bytes) {
  // Decimal GB and binary GiB side by side, always labelled (the API itself speaks bytes).
  const f = (x) => x.toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });
  return `${f(bytes / 1e9)} GB (${f(bytes / 2 ** 30)} GiB)`;
}

class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text.slice(0, 300) }; }
  if (res.status === 401) askForKey(data && data.detail);
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

function askForKey(message) {
  const form = document.getElementById("key-form");
  form.hidden = false;
  form.querySelector("[data-problem-for=Authorization]").textContent = message || "";
}

function setupKeyForm(onKey) {
  const form = document.getElementById("key-form");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const value = form.querySelector("#api-key").value.trim();
    if (value) sessionStorage.setItem(KEY, value); else sessionStorage.removeItem(KEY);
    form.querySelector("[data-problem-for=Authorization]").textContent = "";
    form.hidden = true; // a 401 opens it again
    onKey();
  });
}

function clearProblems() {
  for (const slot of document.querySelectorAll("[data-problem-for]")) {
    if (slot.dataset.problemFor !== "Authorization") slot.textContent = "";
  }
  for (const c of document.querySelectorAll("[aria-invalid]")) c.removeAttribute("aria-invalid");
}

function showProblem(err) {
  // Each errors[].field goes beside the control it names (its first segment: config_json.x
  // belongs to config_json); what names no control goes in the page's own problem line.
  const p = err instanceof ApiError ? err.problem : { detail: String(err && err.message || err) };
  const errors = Array.isArray(p.errors) && p.errors.length ? p.errors : [{ field: "body", message: p.detail || p.title }];
  for (const e of errors) {
    const name = String(e.field || "body").split(/[.[]/)[0];
    let slot = document.querySelector(`[data-problem-for="${CSS.escape(name)}"]`);
    if (!slot) slot = document.getElementById("problem");
    slot.textContent = (slot.textContent ? slot.textContent + " " : "") + `${e.field}: ${e.message}`;
    const control = document.getElementsByName(name)[0];
    if (control) control.setAttribute("aria-invalid", "true");
  }
}

const STATUS_WORDS = { fits: "fits", tight: "tight (under 10% spare)", amber: "amber (under 5% spare)", does_not_fit: "does not fit" };

function showStatus(el, status) {
  el.className = `status status-${status}`;
  el.dataset.status = status;
  el.textContent = STATUS_WORDS[status] || status;
}

function showWarnings(ul, warnings) {
  ul.replaceChildren(...(warnings || []).map((w) => h("li", { "data-code": w.code }, w.message)));
}

// One stacked bar: bands bottom up [{band, bytes, label}], lines [{line, bytes, label}].
// A band's rect carries data-band and data-bytes (the API's integer), so tests read numbers.
function drawBar(container, title, bands, lines) {
  // A band with ``from`` is an overlay at that height (the part of the stack over the line),
  // not one more layer of the stack.
  const W = 640, H = 300, X = 250, BW = 110, TOP = 24, BOT = 280;
  const stacked = bands.filter((b) => b.bytes > 0 && b.from === undefined);
  const overlays = bands.filter((b) => b.bytes > 0 && b.from !== undefined);
  const top = Math.max(...lines.map((l) => l.bytes), stacked.reduce((s, b) => s + b.bytes, 0), 1);
  const y = (bytes) => BOT - ((BOT - TOP) * bytes) / top;
  const svg = h("svg:svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "bar-title", class: "bar" });
  svg.append(h("svg:title", { id: "bar-title" }, title));
  const rect = (b, from) => {
    const y0 = y(from), y1 = y(from + b.bytes);
    svg.append(h("svg:rect", { x: X, y: y1, width: BW, height: Math.max(y0 - y1, 0.5), class: `band band-${b.band}`, "data-band": b.band, "data-bytes": b.bytes },
      h("svg:title", {}, `${b.label}: ${gb(b.bytes)}`)));
    if (y0 - y1 >= 13) svg.append(h("svg:text", { x: X + BW + 8, y: (y0 + y1) / 2 + 4, class: "band-label" }, `${b.label} ${gb(b.bytes)}`));
  };
  let at = 0;
  for (const b of stacked) { rect(b, at); at += b.bytes; }
  for (const b of overlays) rect(b, b.from);
  let last = -Infinity; // labels of lines close together step apart instead of overlapping
  for (const l of [...lines].sort((a, b) => b.bytes - a.bytes)) {
    const ly = y(l.bytes), ty = Math.max(ly + 4, last + 14);
    last = ty;
    svg.append(h("svg:line", { x1: X - 20, x2: X + BW + 20, y1: ly, y2: ly, class: `line line-${l.line}`, "data-line": l.line, "data-bytes": l.bytes }));
    svg.append(h("svg:text", { x: X - 24, y: ty, "text-anchor": "end", class: `line-label line-label-${l.line}` }, `${l.label} ${gb(l.bytes)}`));
  }
  const legend = h("ul", { class: "legend" }, ...bands.map((b) => h("li", { "data-band": b.band }, h("span", { class: `swatch band-${b.band}`, "aria-hidden": "true" }), `${b.label}: ${gb(b.bytes)}`)));
  container.replaceChildren(h("p", { class: "bar-title" }, title), svg, legend);
}

// The bands of an answer's busiest GPU: the seed method, the vllm method, or training.
function pictureOf(a) {
  const g = a.per_gpu;
  if (a.kind === "vllm") {
    const p = a.prediction.per_gpu;
    const used = p.weights_bytes + p.activation_bytes + p.non_torch_bytes + p.cuda_graph_bytes + p.kv_cache_bytes;
    return {
      bands: [
        { band: "weights", bytes: p.weights_bytes, label: "weights" },
        { band: "activation", bytes: p.activation_bytes, label: "activation peak" },
        { band: "non_torch", bytes: p.non_torch_bytes, label: "non-torch" },
        { band: "cuda_graph", bytes: p.cuda_graph_bytes, label: "CUDA graphs" },
        { band: "kv_cache", bytes: p.kv_cache_bytes, label: "KV cache" },
        { band: "spare", bytes: Math.max(p.usable_bytes - used, 0), label: "spare" },
      ],
      lines: [{ line: "utilisation", bytes: p.usable_bytes, label: "utilisation" }, { line: "capacity", bytes: p.total_bytes, label: "capacity (OOM)" }],
    };
  }
  if (a.kind === "training") {
    return {
      bands: ["weights", "gradients", "optimizer", "activations"].map((k) => ({ band: k, bytes: g[`${k}_bytes`], label: k }))
        .concat(g.spare_bytes >= 0 ? [{ band: "spare", bytes: g.spare_bytes, label: "spare" }] : [{ band: "shortfall", bytes: -g.spare_bytes, from: g.budget_bytes, label: "over the budget by" }]),
      lines: [{ line: "budget", bytes: g.budget_bytes, label: "budget" }],
    };
  }
  return {
    bands: [
      { band: "overhead", bytes: g.overhead_bytes, label: "overhead" },
      { band: "weights", bytes: g.weights_bytes, label: "weights" },
      { band: "kv_cache", bytes: g.kv_cache_bytes, label: "KV cache" },
      g.spare_bytes >= 0 ? { band: "spare", bytes: g.spare_bytes, label: "spare" } : { band: "shortfall", bytes: -g.spare_bytes, from: g.usable_bytes, label: "over the line by" },
    ],
    lines: [{ line: "utilisation", bytes: g.usable_bytes, label: "utilisation" }, { line: "capacity", bytes: g.capacity_bytes, label: "capacity (OOM)" }],
  };
}

function drawAnswer(container, a) {
  const { bands, lines } = pictureOf(a);
  const split = a.gpu_count > 1 ? `the busiest of ${a.gpu_count} x ${a.gpu}` : `one ${a.gpu}`;
  drawBar(container, `Memory of ${split}`, bands, lines);
}

function summaryOf(a) {
  const n = `${a.gpu_count} x ${a.gpu}`;
  if (a.kind === "vllm") return `${n}: vLLM logs ${a.kv_cache_tokens.toLocaleString("en-US")} tokens of KV cache, maximum concurrency ${a.max_concurrency}x.`;
  const spare = a.spare_bytes >= 0 ? `${gb(a.spare_bytes)} spare` : `${gb(-a.spare_bytes)} short`;
  return `${n} (${a.weight_format || ""} weights): ${spare} in all.`;
}

window.onerror = (msg) => { const p = document.getElementById("problem"); if (p) p.textContent = `The page hit an error: ${msg}`; };
