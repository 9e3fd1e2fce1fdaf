// The planner page: the form becomes POST /plan's body; each change (sliders as they move,
// debounced) asks again and draws the answer. The matrix and offload ask only while open.
"use strict";
const form = document.getElementById("inputs");
const $ = (id) => document.getElementById(id);
let seq = 0; // answers that arrive after a newer request was sent are dropped
let timer = null;

function requestBody() {
  const v = (name) => form.elements[name].value.trim();
  const body = {};
  const pasted = v("config_json");
  if (pasted) {
    try { body.config_json = JSON.parse(pasted); } catch (e) {
      throw new ApiError(400, { detail: "config.json is not JSON", errors: [{ field: "config_json", message: `not JSON: ${e.message}` }] });
    }
  } else body.model = v("model");
  for (const name of ["gpu", "weight_format", "kv_format"]) if (v(name)) body[name] = v(name);
  body.capacity_basis = v("capacity_basis");
  body.method = v("method");
  for (const name of ["concurrency", "context_tokens"]) body[name] = Number(v(name));
  body.gpu_memory_utilization = Number(v("gpu_memory_utilization"));
  return body;
}

function schedule(delay = 150) {
  clearTimeout(timer);
  $("answer").dataset.state = "pending";
  timer = setTimeout(refresh, delay);
}

async function refresh() {
  const mine = ++seq;
  const answer = $("answer");
  answer.dataset.state = "loading";
  let body;
  try {
    body = requestBody();
    const a = await api("/plan", { method: "POST", body });
    if (mine !== seq) return;
    clearProblems();
    render(a);
    answer.dataset.request = JSON.stringify(body);
    answer.dataset.state = "ready";
  } catch (err) {
    if (mine !== seq) return;
    clearProblems();
    showProblem(err);
    answer.dataset.request = body ? JSON.stringify(body) : "";
    answer.dataset.state = "problem";
    return;
  }
  if ($("matrix-box").open) refreshMatrix(body).catch(() => {});
  if ($("offload-box").open) refreshOffload(body).catch(() => {});
}

function render(a) {
  const status = a.kind === "vllm" ? (a.fits ? "fits" : "does_not_fit") : a.status;
  showStatus($("status"), status);
  $("summary").textContent = summaryOf(a);
  showWarnings($("warnings"), a.warnings);
  drawAnswer($("picture"), a);
  renderOptions(a.options || []);
  const d = a.decode;
  $("speed").textContent = d
    ? `Decode ceiling (memory bandwidth): ${d.tokens_per_s_per_sequence.toFixed(1)} tokens/s per conversation, ${d.tokens_per_s_aggregate.toFixed(0)} tokens/s for all ${d.concurrency}.`
    : "";
}

function renderOptions(options) {
  // With no GPU chosen: one row per GPU, best first, the bar its spare share of the budget.
  const box = $("options");
  if (!options.length) { box.replaceChildren(); return; }
  const rowH = 22, W = 640, X = 210, BW = 300;
  const svg = h("svg:svg", { viewBox: `0 0 ${W} ${options.length * rowH + 8}`, role: "img", "aria-label": "Ranked options", class: "ranked" });
  options.forEach((o, i) => {
    const y = 4 + i * rowH;
    const share = Math.max(0, Math.min(1, o.spare_fraction));
    svg.append(h("svg:text", { x: X - 8, y: y + 15, "text-anchor": "end" }, `${i + 1}. ${o.gpu_count} x ${o.gpu}`));
    svg.append(h("svg:rect", { x: X, y, width: Math.max(BW * share, 2), height: rowH - 6, class: `opt status-${o.status}`, "data-gpu": o.gpu, "data-status": o.status, "data-gpu-count": o.gpu_count }));
    svg.append(h("svg:text", { x: X + BW + 10, y: y + 15 }, `${STATUS_WORDS[o.status]}, ${(o.spare_fraction * 100).toFixed(1)}% spare`));
  });
  box.replaceChildren(h("h3", {}, "Ranked options (spare share of the budget)"), svg);
}

async function refreshMatrix(body) {
  const box = $("matrix");
  if (!body.model) { box.textContent = "The matrix reads catalogue models: choose one."; return; }
  const q = new URLSearchParams({ models: body.model, concurrency: body.concurrency, context_tokens: body.context_tokens, gpu_memory_utilization: body.gpu_memory_utilization });
  try {
    const m = await api(`/matrix?${q}`);
    const head = h("tr", {}, h("th", { scope: "col" }, "format"), ...m.gpus.map((g) => h("th", { scope: "col" }, g)));
    const rows = m.rows.map((r) => h("tr", {}, h("th", { scope: "row" }, r.weight_format),
      ...r.cells.map((c) => h("td", { class: `cell status-${c.status}${c.amber ? " amber" : ""}`, "data-status": c.status, title: c.gpu_count ? `${gb(c.spare_bytes)} spare` : "" },
        c.gpu_count ? `${c.gpu_count} (${STATUS_WORDS[c.status]})` : STATUS_WORDS[c.status]))));
    box.replaceChildren(h("p", {}, `GPUs needed, on the ${m.workload.capacity_basis} basis.`), h("div", { class: "scroll" }, h("table", { class: "matrix" }, h("thead", {}, head), h("tbody", {}, ...rows))));
  } catch (err) { box.textContent = `The matrix: ${err.message}`; }
}

async function refreshOffload(body) {
  const box = $("offload");
  if (!body.model || !body.gpu) { box.textContent = "Offload reads one catalogue model on one chosen GPU."; return; }
  const req = { model: body.model, gpu: body.gpu };
  if (body.weight_format) req.weight_format = body.weight_format;
  if (body.kv_format) req.kv_format = body.kv_format;
  try {
    const o = await api("/offload", { method: "POST", body: req });
    box.replaceChildren(h("ul", {},
      h("li", {}, `On the GPU: ${gb(o.resident_bytes)}; in CPU memory: ${gb(o.offloaded_bytes)} over ${o.link} (mechanism ${o.mechanism}).`),
      h("li", {}, `${o.tokens_per_s.toFixed(2)} tokens/s per conversation; the GPU idle ${(o.gpu_idle_fraction * 100).toFixed(1)}% of the time.`),
      ...(o.warnings || []).map((w) => h("li", {}, w.message))));
  } catch (err) { box.textContent = `Offload: ${err.message}`; }
}

function option(value, text) { return h("option", { value }, text); }

async function loadCatalogue() {
  try {
    const [models, gpus, formats] = await Promise.all([api("/models?limit=500"), api("/gpus?limit=500"), api("/formats?limit=500")]);
    $("model").replaceChildren(...models.items.map((m) => option(m.slug, m.name || m.slug)));
    if (models.items.some((m) => m.slug === "llama-3.1-70b")) $("model").value = "llama-3.1-70b";
    // Replaced whole, first option kept: a second load (after a key is given) adds no repeats.
    const fill = (id, items) => $(id).replaceChildren($(id).options[0], ...items.map((x) => option(x.slug, x.name || x.slug)));
    fill("gpu", gpus.items);
    fill("weight_format", formats.items);
    fill("kv_format", formats.items.filter((f) => f.kv_capable));
  } catch (err) { showProblem(err); }
  schedule(0);
}

for (const range of form.querySelectorAll("input[type=range]")) {
  const number = $(range.dataset.pair);
  range.addEventListener("input", () => { number.value = range.value; schedule(); });
  number.addEventListener("input", () => { range.value = number.value; schedule(); });
}
form.addEventListener("change", (ev) => { if (ev.target.type !== "range" && ev.target.type !== "number") schedule(0); });
$("config_json").addEventListener("input", () => schedule(400));
form.addEventListener("submit", (ev) => { ev.preventDefault(); schedule(0); });
for (const id of ["matrix-box", "offload-box"]) $(id).addEventListener("toggle", () => { if ($(id).open) schedule(0); });
setupKeyForm(loadCatalogue);
loadCatalogue();
