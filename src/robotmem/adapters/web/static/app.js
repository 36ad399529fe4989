// robotmem web UI: plain DOM and the plots of charts.js (uPlot, shipped in the package). Stored text is
// only ever written with textContent (through el() and text nodes), never parsed as HTML.
// The map, parameter and episode views are in explore.js.
"use strict";

const view = () => document.getElementById("view");
const state = {
  renders: 0,
  redraw: null, // how the view on show draws its plots again (redrawOnResize)
  memoryFilters: {},
  memoryQuery: "",
  memoryOffset: 0,
  sessionOffset: 0,
  sessionFilters: {},
  map: { field: "", plane: "0,1", window: "all", since: "", until: "" },
  params: { x: "", y: "", unit: "", bins: "", window: "all", since: "", until: "" },
};

// ---- DOM helpers -----------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "onclick" || key === "onsubmit" || key === "onchange") node.addEventListener(key.slice(2), value);
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...children) {
  view().replaceChildren(...children.flat().filter((c) => c));
}

function setStatus(message, kind) {
  const box = document.getElementById("status");
  box.className = kind || "";
  box.textContent = message || "";
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

function shortTime(iso) {
  if (!iso) return "";
  return iso.replace("T", " ").slice(0, 19);
}

function successOf(record) {
  const task = record && record.task;
  if (task && typeof task.success === "boolean") return task.success;
  return null;
}

function successBadge(value) {
  if (value === true) return el("span", { className: "badge ok" }, "success");
  if (value === false) return el("span", { className: "badge bad" }, "failure");
  return null;
}

function memoryLink(id, label) {
  return el("a", { href: `#/memory/${encodeURIComponent(id)}` }, label === undefined ? `#${id}` : label);
}

function sessionLink(id, label) {
  return el("a", { href: `#/session/${encodeURIComponent(id)}` }, label || String(id).slice(0, 12));
}

// Time a view's render (from its data in hand to its DOM and plots drawn) as a performance measure
// named "render:<view>", which the benchmark reads.
function measured(name, render) {
  const start = performance.now();
  const result = render();
  performance.measure(`render:${name}`, { start, end: performance.now() });
  return result;
}

// Each view claims the page when it starts; one overtaken by a later view (its answer arriving after
// the user moved on) draws nothing.
function claim() {
  const ticket = ++state.renders;
  state.redraw = null;
  return () => ticket === state.renders;
}

// A view whose plots are sized to the page names how to draw them again from what it fetched: the window
// resized, they are redrawn at the new width (the map keeps its equal aspect), without asking the server.
// Only a change of the page's width redraws (a zoomed map is drawn anew at its full extent).
function redrawOnResize(draw) {
  state.redraw = { draw, width: view().clientWidth };
}

let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    const width = view().clientWidth;
    if (!state.redraw || width === state.redraw.width) return;
    state.redraw.width = width;
    run(state.redraw.draw);
  }, 150);
});

// Run an action of the page: the status line is cleared first, so an error shown for an earlier
// attempt never stays above the results of a later one.
function run(action) {
  setStatus("");
  return Promise.resolve()
    .then(action)
    .catch(report);
}

function plotWidth(node) {
  return Math.max(320, Math.min(1100, (node.clientWidth || view().clientWidth || 900) - 8));
}

function table(headers, rows) {
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows),
  );
}

function keyValueTable(pairs) {
  return el(
    "table",
    { className: "kv" },
    el("tbody", {}, pairs.map(([key, value]) => el("tr", {}, el("th", {}, key), el("td", {}, value)))),
  );
}

// ---- API -------------------------------------------------------------------------------------------

function token() {
  const box = document.getElementById("token");
  return box.hidden ? "" : box.querySelector("input").value.trim();
}

async function api(method, path, body) {
  const options = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body || {});
    if (token()) options.headers["X-Robotmem-Token"] = token();
  }
  const response = await fetch(path, options);
  let payload = null;
  try {
    payload = await response.json();
  } catch (err) {
    payload = null;
  }
  if (!response.ok) {
    const error = (payload && payload.error) || { code: String(response.status), message: response.statusText };
    if (response.status === 401) document.getElementById("token").hidden = false;
    throw new Error(`${error.code}: ${error.message}`);
  }
  return payload;
}

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

function collection() {
  return document.getElementById("collection").value;
}

// ---- views -----------------------------------------------------------------------------------------

function categoryBars(items) {
  if (!items.length) return el("p", { className: "muted" }, "No memories yet.");
  const most = Math.max(...items.map((i) => i.count));
  return el(
    "table",
    { className: "bars", "aria-label": "Categories" },
    el(
      "tbody",
      {},
      items.map((item) => {
        const bar = el("span", { className: "bar" });
        bar.style.width = `${Math.max(0.5, (100 * item.count) / most)}%`;
        return el("tr", {}, el("th", {}, item.category), el("td", { className: "bar-cell" }, bar), el("td", { className: "num" }, item.count));
      }),
    ),
  );
}

async function dashboard() {
  const current = claim();
  const stats = await api("GET", `/api/stats${query({ collection: collection() })}`);
  if (!current()) return;
  const card = (value, label) => el("div", { className: "card" }, el("div", { className: "value" }, value), el("div", { className: "label" }, label));
  measured("dashboard", () => {
    const outcomes = el("div", { id: "outcome-chart", className: "chart" });
    show(
      el("h2", {}, "Dashboard"),
      el(
        "div",
        { className: "cards", id: "totals" },
        card(stats.memories.total, "memories"),
        card(stats.memories.active, "active"),
        card(stats.memories.facts, "facts"),
        card(stats.memories.perceptions, "perceptions"),
        card(stats.last_24h, "last 24 h"),
        card(stats.sessions.total, "sessions"),
      ),
      el(
        "div",
        { className: "panel" },
        el("h3", {}, "Success per session over time"),
        el("p", { className: "muted" }, "Each ended session: its outcome_score, and the share of its memories with task.success true among those with task.success. Click a point to open the session."),
        outcomes,
      ),
      el("div", { className: "panel" }, el("h3", {}, "Categories"), categoryBars(stats.categories)),
      el(
        "div",
        { className: "panel" },
        el("h3", {}, "Collections"),
        table(
          ["collection", "memories", "active", "sessions", "last activity"],
          stats.collections.map((c) => el("tr", {}, el("td", {}, c.collection), el("td", {}, c.memories), el("td", {}, c.active), el("td", {}, c.sessions), el("td", {}, shortTime(c.last_at)))),
        ),
      ),
    );
    const judged = stats.session_outcomes.filter((o) => o.outcome_score !== null || o.success_rate !== null);
    if (judged.length) Charts.outcomes(outcomes, { width: plotWidth(outcomes), sessions: judged, open: (id) => go(`#/session/${id}`) }).batch(() => {});
    else outcomes.append(el("p", { className: "muted" }, "No ended session has an outcome score or judged memories yet."));
  });
}

function memoryRows(memories, withScore) {
  return memories.map((m) =>
    el(
      "tr",
      { className: "clickable", "data-id": m.id, onclick: () => go(`#/memory/${m.id}`) },
      el("td", {}, memoryLink(m.id)),
      el("td", { className: "memory-content" }, m.content),
      el("td", {}, m.type === "perception" ? `perception/${m.perception_type}` : m.category),
      el("td", {}, Number(m.confidence).toFixed(2)),
      el("td", {}, successBadge(successOf(m)), m.status && m.status !== "active" ? el("span", { className: `badge status-${m.status}` }, m.status) : null),
      el("td", {}, withScore ? Number(m.score).toFixed(3) : shortTime(m.created_at)),
      withScore ? el("td", { className: "relevance" }, m.relevance === null ? "—" : Number(m.relevance).toFixed(2)) : null,
    ),
  );
}

function filterField(label, node) {
  return el("label", {}, label, node);
}

async function memoriesView() {
  const current = claim();
  const f = state.memoryFilters;
  const select = (name, options) =>
    el("select", { name }, options.map((o) => el("option", { value: o, selected: f[name] === o }, o || "any")));
  const input = (name, attrs) => el("input", Object.assign({ name, value: f[name] || "" }, attrs));
  const form = el(
    "form",
    { className: "filters", id: "memory-filters" },
    filterField("Search", el("input", { name: "q", id: "search-input", value: state.memoryQuery, placeholder: "hybrid recall…", size: 28 })),
    filterField("Type", select("type", ["", "fact", "perception"])),
    filterField("Status", select("status", ["active", "superseded", "invalidated", "any"])),
    filterField("Category", input("category", { size: 10 })),
    filterField("Perception", select("perception_type", ["", "visual", "tactile", "auditory", "proprioceptive", "procedural"])),
    filterField("Min conf.", input("min_confidence", { type: "number", step: "0.05", min: 0, max: 1 })),
    filterField("Max conf.", input("max_confidence", { type: "number", step: "0.05", min: 0, max: 1 })),
    filterField("Since", input("since", { type: "datetime-local" })),
    filterField("Until", input("until", { type: "datetime-local" })),
    filterField("Context filter (search)", input("context_filter", { size: 22, placeholder: '{"task.success": true}' })),
    el("button", { className: "primary", type: "submit" }, "Apply"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    state.memoryQuery = String(data.get("q") || "").trim();
    state.memoryFilters = {};
    for (const [key, value] of data.entries()) if (key !== "q" && value !== "") state.memoryFilters[key] = String(value);
    state.memoryOffset = 0;
    run(memoriesView);
  });
  const results = el("div", { id: "memory-results" });
  show(el("h2", {}, "Memories"), form, results);
  const toUtc = (local) => (local ? new Date(local).toISOString() : undefined);
  if (state.memoryQuery || f.context_filter) {
    const found = await api(
      "GET",
      // The selector's "all" (an empty value) searches every collection ("*"), as it lists every one.
      `/api/search${query({ query: state.memoryQuery, collection: collection() || "*", context_filter: f.context_filter, n: 50, min_confidence: f.min_confidence || 0 })}`,
    );
    if (!current()) return;
    const searched = found.collections.length ? found.collections.join(", ") : "none (no active memories)";
    const where = found.collections.length === 1 ? `collection ${searched}` : `collections ${searched}`;
    results.replaceChildren(
      el("p", { className: "muted", id: "search-summary" }, `${found.total} found (${found.mode}, ${found.query_ms} ms) in ${where}`),
      ...found.warnings.map((text) => el("p", { className: "warning" }, `Filter warning: ${text}`)),
      found.note ? el("p", { className: "note", id: "search-note" }, found.note) : null,
      table(["id", "content", "category", "conf.", "", "score", "relevance"], memoryRows(found.memories, true)),
    );
    return;
  }
  const limit = 25;
  const page = await api(
    "GET",
    `/api/memories${query({
      collection: collection(), type: f.type, status: f.status, category: f.category, perception_type: f.perception_type,
      min_confidence: f.min_confidence, max_confidence: f.max_confidence, since: toUtc(f.since), until: toUtc(f.until),
      limit, offset: state.memoryOffset,
    })}`,
  );
  if (!current()) return;
  const last = Math.min(page.offset + page.memories.length, page.total);
  const pager = el(
    "div",
    { className: "pager" },
    el("button", { type: "button", disabled: page.offset === 0, onclick: () => { state.memoryOffset = Math.max(0, page.offset - limit); run(memoriesView); } }, "‹ Prev"),
    el("span", { id: "page-info" }, page.total ? `${page.offset + 1}–${last} of ${page.total}` : "0 memories"),
    el("button", { type: "button", disabled: last >= page.total, onclick: () => { state.memoryOffset = page.offset + limit; run(memoriesView); } }, "Next ›"),
  );
  results.replaceChildren(pager, table(["id", "content", "category", "conf.", "", "created"], memoryRows(page.memories, false)));
}

function formatValue(value) {
  if (value && typeof value === "object" && !Array.isArray(value) && "value" in value) {
    return [String(value.value), value.unit ? ` ${value.unit}` : "", value.type ? ` (${value.type})` : ""].join("");
  }
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function sectionTable(title, section) {
  const entries = Object.entries(section || {});
  if (!entries.length) return null;
  return el("div", { className: "panel", "data-section": title }, el("h3", {}, title), keyValueTable(entries.map(([k, v]) => [k, formatValue(v)])));
}

async function memoryDetail(id) {
  const current = claim();
  const m = await api("GET", `/api/memory/${encodeURIComponent(id)}`);
  if (!current()) return;
  const other = Object.fromEntries(Object.entries(m.context || {}).filter(([k]) => !["params", "spatial", "robot", "task"].includes(k)));
  const lineage = [];
  if (m.superseded_by) lineage.push(el("div", {}, "superseded by ", memoryLink(m.superseded_by)));
  if (m.merged_ids && m.merged_ids.length) lineage.push(el("div", {}, "merged: ", m.merged_ids.map((i) => [memoryLink(i), " "])));
  if (m.invalidated_reason) lineage.push(el("div", {}, "forgotten: ", m.invalidated_reason));
  const content = el("textarea", { id: "edit-content", rows: 3 });
  content.value = m.content;
  const contextBox = el("textarea", { id: "edit-context", rows: 6 });
  const userContext = Object.assign({}, m.context);
  delete userContext.source;
  contextBox.value = json(userContext);
  const reason = el("input", { id: "forget-reason", size: 40, placeholder: "why this memory is wrong" });
  const active = m.status === "active";
  show(
    el("h2", {}, `Memory #${m.id} `, el("span", { className: `badge status-${m.status}` }, m.status), successBadge(successOf(m))),
    el("p", { className: "content", id: "memory-content" }, m.content),
    keyValueTable([
      ["type", m.type === "perception" ? `perception (${m.perception_type})` : m.type],
      ["category", m.category],
      ["confidence", Number(m.confidence).toFixed(3)],
      ["tags", m.tags.map((t) => el("span", { className: "badge" }, t))],
      ["collection", m.collection],
      ["robot_id", el("span", { title: "the robot whose experience this is (docs/fleet.md)" }, m.robot_id || "—")],
      ["uid", el("code", { title: "stable across export, import and sync" }, m.uid || "—")],
      ["session", m.session_id ? sessionLink(m.session_id) : "—"],
      ["created / updated", `${shortTime(m.created_at)} / ${shortTime(m.updated_at)}`],
      ["accessed", `${m.access_count}× ${m.last_accessed ? "last " + shortTime(m.last_accessed) : ""}`],
      ["vector", m.has_embedding ? "yes" : "no"],
      ["lineage", lineage.length ? lineage : "—"],
    ]),
    sectionTable("params", m.params),
    sectionTable("spatial", m.spatial),
    sectionTable("robot", m.robot),
    sectionTable("task", m.task),
    Object.keys(other).length ? el("div", { className: "panel" }, el("h3", {}, "other context"), el("pre", {}, json(other))) : null,
    m.type === "perception"
      ? el("div", { className: "panel", id: "payload" }, el("h3", {}, "perception data"), el("pre", {}, json(m.data)), el("h3", {}, "metadata"), el("pre", {}, json(m.metadata)))
      : null,
    active
      ? el(
          "div",
          { className: "panel", id: "edit-panel" },
          el("h3", {}, "Edit"),
          content,
          el("label", {}, "Context (JSON)"),
          contextBox,
          el("button", { className: "primary", id: "save-edit", type: "button", onclick: () => saveEdit(m.id, content.value, contextBox.value) }, "Save"),
        )
      : null,
    active
      ? el(
          "div",
          { className: "panel", id: "forget-panel" },
          el("h3", {}, "Forget"),
          reason,
          " ",
          el("button", { className: "danger", id: "forget", type: "button", onclick: () => forgetMemory(m.id, reason.value) }, "Forget"),
        )
      : null,
  );
}

async function saveEdit(id, content, contextText) {
  let context;
  try {
    context = contextText.trim() ? JSON.parse(contextText) : {};
  } catch (err) {
    setStatus(`context: not valid JSON (${err.message})`, "error");
    return;
  }
  try {
    const result = await api("PUT", `/api/memory/${id}`, { new_content: content, context });
    setStatus(`Saved memory #${result.memory_id} (category ${result.auto_inferred.category})`, "info");
    await memoryDetail(id);
  } catch (err) {
    report(err);
  }
}

async function forgetMemory(id, reason) {
  try {
    await api("DELETE", `/api/memory/${id}`, { reason });
    setStatus(`Forgot memory #${id}`, "info");
    await memoryDetail(id);
  } catch (err) {
    report(err);
  }
}

async function failuresView() {
  const current = claim();
  const failures = await api("GET", `/api/recent-failures${query({ collection: collection() })}`);
  if (!current()) return;
  measured("failures", () =>
    show(
      el("h2", {}, "Recent failures"),
      el("h3", {}, "Failed episodes"),
      el("p", { className: "muted" }, "Ended sessions whose outcome is a failure: an outcome_score below 0.5, or without a score, fewer than half of their judged memories with task.success true."),
      failures.sessions.length ? sessionTable(failures.sessions) : el("p", { className: "muted" }, "No failed episode."),
      el("h3", {}, "Failure lessons"),
      el("p", { className: "muted" }, "Active memories with task.success false, the failure tag, or the category root_cause, postmortem or gotcha."),
      failures.memories.length
        ? table(["id", "content", "category", "conf.", "", "created"], memoryRows(failures.memories, false))
        : el("p", { className: "muted" }, "No failure recorded."),
    ),
  );
}

async function doctorView() {
  const current = claim();
  const report = await api("GET", "/api/doctor");
  if (!current()) return;
  show(
    el("h2", {}, "Doctor ", el("span", { className: report.ok ? "badge ok" : "badge bad" }, report.ok ? "ok" : "needs attention")),
    keyValueTable([
      ["database", report.database],
      ["schema", `${report.schema_version} (expected ${report.expected_schema_version})`],
      ["search mode", `${report.search_mode} — ${report.search_mode_reason}`],
      ["embedder", `${report.embedder.model_id || "none"} (${report.embedder.status})`],
      ["memories", `${report.memories.active} active of ${report.memories.total}`],
      ["full-text index", report.fts.in_sync ? "in sync" : `out of sync: ${json(report.fts)}`],
      ["vectors", json(report.vectors)],
    ]),
    el("h3", {}, "Full report"),
    el("pre", { id: "doctor-report" }, json(report)),
  );
}

// ---- routing ---------------------------------------------------------------------------------------

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function report(err) {
  setStatus(err.message || String(err), "error");
}

const VIEWS = {
  "": ["dashboard", () => dashboard()],
  memories: ["memories", () => memoriesView()],
  memory: ["memories", (id) => memoryDetail(id)],
  sessions: ["sessions", () => sessionsView()],
  session: ["sessions", (id) => sessionView(id)],
  map: ["map", () => mapView()],
  spatial: ["map", () => mapView()],
  params: ["params", () => paramsView()],
  failures: ["failures", () => failuresView()],
  doctor: ["doctor", () => doctorView()],
};

async function route() {
  const hash = location.hash || "#/";
  const [, name, arg] = hash.match(/^#\/([^/]*)\/?(.*)$/) || [null, "", ""];
  const [section, render] = VIEWS[name] || VIEWS[""];
  for (const link of document.querySelectorAll("#nav a")) {
    const active = link.dataset.view === section;
    link.classList.toggle("active", active);
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  await run(() => render(decodeURIComponent(arg || "")));
}

async function loadCollections() {
  const select = document.getElementById("collection");
  try {
    const found = await api("GET", "/api/collections");
    for (const c of found.collections) select.append(el("option", { value: c.collection }, c.collection));
  } catch (err) {
    report(err);
  }
}

// The token box appears only when the server asks for a token on writes (or a write was refused).
async function loadServer() {
  const box = document.getElementById("token");
  const input = box.querySelector("input");
  input.value = sessionStorage.getItem("robotmem-token") || "";
  input.addEventListener("change", () => sessionStorage.setItem("robotmem-token", input.value.trim()));
  try {
    const server = await api("GET", "/api/server");
    box.hidden = !server.token_required;
  } catch (err) {
    report(err);
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  await loadServer();
  document.getElementById("collection").addEventListener("change", () => route());
  window.addEventListener("hashchange", () => route());
  await loadCollections();
  await route();
});
