// robotmem web UI: plain DOM, no dependencies. Stored text is only ever written with textContent
// (through el() and text nodes), never parsed as HTML.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const view = () => document.getElementById("view");
const state = { memoryFilters: {}, memoryQuery: "", memoryOffset: 0, sessionOffset: 0, spatialField: "" };

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

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
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

function sessionLink(id) {
  return el("a", { href: `#/session/${encodeURIComponent(id)}` }, String(id).slice(0, 12));
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
  return document.getElementById("token").value.trim();
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

// ---- charts (SVG drawn here) -------------------------------------------------------------------------

function scale(min, max, from, to) {
  const span = max - min || 1;
  return (value) => from + ((value - min) / span) * (to - from);
}

function outcomeChart(outcomes) {
  const points = outcomes.filter((o) => o.outcome_score !== null || o.success_rate !== null);
  if (!points.length) return el("p", { className: "muted" }, "No ended session has an outcome score or judged memories yet.");
  const width = 640, height = 220, pad = 34;
  const x = scale(0, Math.max(points.length - 1, 1), pad, width - pad);
  const y = scale(0, 1, height - pad, pad / 2);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img", "aria-label": "Success per session" });
  for (const tick of [0, 0.5, 1]) {
    chart.append(svg("line", { x1: pad, x2: width - pad, y1: y(tick), y2: y(tick), class: "axis" }));
    chart.append(svg("text", { x: 4, y: y(tick) + 4 }, tick.toFixed(1)));
  }
  const line = (key, cls) => {
    const coords = points.map((p, i) => (p[key] === null ? null : `${x(i)},${y(p[key])}`)).filter((c) => c);
    if (coords.length) chart.append(svg("polyline", { points: coords.join(" "), class: cls }));
  };
  line("outcome_score", "score");
  line("success_rate", "rate");
  points.forEach((p, i) => {
    const value = p.outcome_score !== null ? p.outcome_score : p.success_rate;
    const cls = value >= 0.5 ? "ok" : "bad";
    const dot = svg("circle", { cx: x(i), cy: y(value), r: 4, class: cls, onclick: () => go(`#/session/${p.session_id}`) });
    dot.append(svg("title", {}, `${shortTime(p.created_at)} outcome=${p.outcome_score} success_rate=${p.success_rate}`));
    chart.append(dot);
  });
  chart.append(svg("text", { x: pad, y: height - 8 }, shortTime(points[0].created_at)));
  chart.append(svg("text", { x: width - pad - 120, y: height - 8 }, shortTime(points[points.length - 1].created_at)));
  const legend = el(
    "div",
    { className: "legend" },
    el("span", {}, "── outcome_score"),
    el("span", {}, "- - success rate of judged memories"),
  );
  return el("div", {}, chart, legend);
}

function barChart(items) {
  if (!items.length) return el("p", { className: "muted" }, "No memories yet.");
  const width = 640, row = 22, labelWidth = 150;
  const max = Math.max(...items.map((i) => i.count));
  const chart = svg("svg", { viewBox: `0 0 ${width} ${items.length * row + 4}`, width: "100%", role: "img", "aria-label": "Categories" });
  items.forEach((item, i) => {
    const w = ((width - labelWidth - 50) * item.count) / max;
    chart.append(svg("text", { x: 0, y: i * row + 15 }, item.category));
    chart.append(svg("rect", { x: labelWidth, y: i * row + 4, width: Math.max(w, 1), height: row - 8, class: "bar" }));
    chart.append(svg("text", { x: labelWidth + w + 6, y: i * row + 15 }, item.count));
  });
  return chart;
}

// ---- views -----------------------------------------------------------------------------------------

async function dashboard() {
  const stats = await api("GET", `/api/stats${query({ collection: collection() })}`);
  const card = (value, label) => el("div", { className: "card" }, el("div", { className: "value" }, value), el("div", { className: "label" }, label));
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
    el("div", { className: "panel" }, el("h3", {}, "Success per session over time"), outcomeChart(stats.session_outcomes)),
    el("div", { className: "panel" }, el("h3", {}, "Categories"), barChart(stats.categories)),
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
    memoriesView().catch(report);
  });
  const results = el("div", { id: "memory-results" });
  show(el("h2", {}, "Memories"), form, results);
  const toUtc = (local) => (local ? new Date(local).toISOString() : undefined);
  if (state.memoryQuery || f.context_filter) {
    const found = await api(
      "GET",
      `/api/search${query({ query: state.memoryQuery, collection: collection(), context_filter: f.context_filter, n: 50, min_confidence: f.min_confidence || 0 })}`,
    );
    results.replaceChildren(
      el("p", { className: "muted" }, `${found.total} found (${found.mode}, ${found.query_ms} ms) in collection ${collection() || "default"}`),
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
  const last = Math.min(page.offset + page.memories.length, page.total);
  const pager = el(
    "div",
    { className: "pager" },
    el("button", { type: "button", disabled: page.offset === 0, onclick: () => { state.memoryOffset = Math.max(0, page.offset - limit); memoriesView().catch(report); } }, "‹ Prev"),
    el("span", { id: "page-info" }, page.total ? `${page.offset + 1}–${last} of ${page.total}` : "0 memories"),
    el("button", { type: "button", disabled: last >= page.total, onclick: () => { state.memoryOffset = page.offset + limit; memoriesView().catch(report); } }, "Next ›"),
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
  const m = await api("GET", `/api/memory/${encodeURIComponent(id)}`);
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

function sessionRows(sessions) {
  return sessions.map((s) =>
    el(
      "tr",
      { className: "clickable", onclick: () => go(`#/session/${s.session_id}`) },
      el("td", {}, sessionLink(s.session_id)),
      el("td", {}, s.collection),
      el("td", {}, s.status),
      el("td", {}, shortTime(s.created_at)),
      el("td", {}, s.outcome_score === null ? "—" : Number(s.outcome_score).toFixed(2)),
      el("td", {}, s.success_rate === null ? "—" : `${Math.round(s.success_rate * 100)}% of ${s.successes + s.failures}`),
      el("td", {}, s.memory_count),
    ),
  );
}

async function sessionsView() {
  const limit = 25;
  const page = await api("GET", `/api/sessions${query({ collection: collection(), limit, offset: state.sessionOffset })}`);
  const last = Math.min(page.offset + page.sessions.length, page.total);
  show(
    el("h2", {}, "Sessions"),
    el(
      "div",
      { className: "pager" },
      el("button", { type: "button", disabled: page.offset === 0, onclick: () => { state.sessionOffset = Math.max(0, page.offset - limit); sessionsView().catch(report); } }, "‹ Prev"),
      el("span", {}, page.total ? `${page.offset + 1}–${last} of ${page.total}` : "no sessions"),
      el("button", { type: "button", disabled: last >= page.total, onclick: () => { state.sessionOffset = page.offset + limit; sessionsView().catch(report); } }, "Next ›"),
    ),
    table(["session", "collection", "status", "started", "outcome", "success rate", "memories"], sessionRows(page.sessions)),
  );
}

async function sessionView(id) {
  const episode = await api("GET", `/api/sessions/${encodeURIComponent(id)}/memories`);
  const s = episode.session;
  show(
    el("h2", {}, "Session ", el("code", {}, s.session_id)),
    keyValueTable([
      ["collection", s.collection],
      ["status", s.status],
      ["started / ended", `${shortTime(s.created_at)} / ${shortTime(s.ended_at) || "—"}`],
      ["outcome score", s.outcome_score === null ? "—" : Number(s.outcome_score).toFixed(2)],
      ["success rate", s.success_rate === null ? "—" : `${Math.round(s.success_rate * 100)}% (${s.successes} of ${s.successes + s.failures})`],
      ["context", el("pre", {}, json(s.context))],
    ]),
    el("h3", {}, `Timeline (${episode.total})`),
    el(
      "ol",
      { className: "timeline", id: "timeline" },
      episode.memories.map((m) => {
        const success = successOf(m);
        return el(
          "li",
          { className: success === true ? "ok" : success === false ? "bad" : "" },
          el("span", { className: "time" }, shortTime(m.created_at)),
          memoryLink(m.id),
          " ",
          el("span", { className: "badge" }, m.type === "perception" ? m.perception_type : m.category),
          m.status !== "active" ? el("span", { className: `badge status-${m.status}` }, m.status) : null,
          " ",
          el("span", { className: "timeline-content" }, m.content),
        );
      }),
    ),
  );
}

async function spatialView() {
  const stats = await api("GET", `/api/stats${query({ collection: collection() })}`);
  const fields = stats.spatial_fields;
  if (!fields.length) {
    show(el("h2", {}, "Spatial"), el("p", { className: "muted" }, "No memory has a spatial.* coordinate list in its context."));
    return;
  }
  if (!fields.includes(state.spatialField)) state.spatialField = fields[0];
  const fieldSelect = el("select", { id: "spatial-field" }, fields.map((f) => el("option", { value: f, selected: f === state.spatialField }, f)));
  const axisX = el("select", { id: "axis-x" }, [0, 1, 2].map((i) => el("option", { value: i, selected: i === 0 }, `[${i}]`)));
  const axisY = el("select", { id: "axis-y" }, [0, 1, 2].map((i) => el("option", { value: i, selected: i === 1 }, `[${i}]`)));
  const plot = el("div", { id: "spatial-plot" });
  const draw = async () => {
    state.spatialField = fieldSelect.value;
    const data = await api("GET", `/api/spatial${query({ field: fieldSelect.value, collection: collection() })}`);
    plot.replaceChildren(scatter(data.points, Number(axisX.value), Number(axisY.value)));
  };
  for (const control of [fieldSelect, axisX, axisY]) control.addEventListener("change", () => draw().catch(report));
  show(
    el("h2", {}, "Spatial"),
    el("div", { className: "filters" }, filterField("Field", fieldSelect), filterField("x axis", axisX), filterField("y axis", axisY)),
    el(
      "div",
      { className: "legend" },
      el("span", {}, el("span", { className: "swatch ok" }), "task.success true"),
      el("span", {}, el("span", { className: "swatch bad" }), "false"),
      el("span", {}, el("span", { className: "swatch unknown" }), "unknown"),
    ),
    plot,
  );
  await draw();
}

function scatter(points, ix, iy) {
  const usable = points.filter((p) => typeof p.coordinates[ix] === "number" && typeof p.coordinates[iy] === "number");
  if (!usable.length) return el("p", { className: "muted" }, "No point has numbers on both chosen axes.");
  const width = 640, height = 420, pad = 40;
  const xs = usable.map((p) => p.coordinates[ix]);
  const ys = usable.map((p) => p.coordinates[iy]);
  const margin = (values) => (Math.max(...values) - Math.min(...values)) * 0.06 || 0.5;
  const x = scale(Math.min(...xs) - margin(xs), Math.max(...xs) + margin(xs), pad, width - pad);
  const y = scale(Math.min(...ys) - margin(ys), Math.max(...ys) + margin(ys), height - pad, pad);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", id: "scatter", role: "img", "aria-label": "Spatial plot" });
  chart.append(svg("line", { x1: pad, x2: width - pad, y1: height - pad, y2: height - pad, class: "axis" }));
  chart.append(svg("line", { x1: pad, x2: pad, y1: pad, y2: height - pad, class: "axis" }));
  const minX = Math.min(...xs), maxX = Math.max(...xs), minY = Math.min(...ys), maxY = Math.max(...ys);
  chart.append(svg("text", { x: x(minX) - 10, y: height - pad + 16 }, minX.toFixed(3)));
  chart.append(svg("text", { x: x(maxX) - 10, y: height - pad + 16 }, maxX.toFixed(3)));
  chart.append(svg("text", { x: 2, y: y(minY) + 4 }, minY.toFixed(3)));
  chart.append(svg("text", { x: 2, y: y(maxY) + 4 }, maxY.toFixed(3)));
  chart.append(svg("text", { x: width / 2 - 20, y: height - 6 }, `[${ix}]`));
  chart.append(svg("text", { x: 4, y: pad - 14 }, `[${iy}]`));
  for (const p of usable) {
    const cls = p.success === true ? "ok" : p.success === false ? "bad" : "unknown";
    const dot = svg("circle", { cx: x(p.coordinates[ix]), cy: y(p.coordinates[iy]), r: 6, class: `point ${cls}`, "data-id": p.memory_id, onclick: () => go(`#/memory/${p.memory_id}`) });
    dot.append(svg("title", {}, `#${p.memory_id} ${p.content} ${JSON.stringify(p.coordinates)}`));
    chart.append(dot);
  }
  return chart;
}

async function failuresView() {
  const failures = await api("GET", `/api/recent-failures${query({ collection: collection() })}`);
  show(
    el("h2", {}, "Recent failures"),
    el("h3", {}, "Failed episodes"),
    failures.sessions.length
      ? table(["session", "collection", "status", "started", "outcome", "success rate", "memories"], sessionRows(failures.sessions))
      : el("p", { className: "muted" }, "No failed episode."),
    el("h3", {}, "Failure lessons"),
    failures.memories.length
      ? table(["id", "content", "category", "conf.", "", "created"], memoryRows(failures.memories, false))
      : el("p", { className: "muted" }, "No failure recorded."),
  );
}

async function doctorView() {
  const report = await api("GET", "/api/doctor");
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

async function route() {
  const hash = location.hash || "#/";
  const [, name, arg] = hash.match(/^#\/([^/]*)\/?(.*)$/) || [null, "", ""];
  const id = decodeURIComponent(arg || "");
  const names = { "": "dashboard", memories: "memories", memory: "memories", sessions: "sessions", session: "sessions", spatial: "spatial", failures: "failures", doctor: "doctor" };
  for (const link of document.querySelectorAll("#nav a")) link.classList.toggle("active", link.dataset.view === names[name]);
  setStatus("");
  try {
    if (name === "memories") await memoriesView();
    else if (name === "memory") await memoryDetail(id);
    else if (name === "sessions") await sessionsView();
    else if (name === "session") await sessionView(id);
    else if (name === "spatial") await spatialView();
    else if (name === "failures") await failuresView();
    else if (name === "doctor") await doctorView();
    else await dashboard();
  } catch (err) {
    report(err);
  }
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

document.addEventListener("DOMContentLoaded", async () => {
  const tokenInput = document.getElementById("token");
  tokenInput.value = sessionStorage.getItem("robotmem-token") || "";
  tokenInput.addEventListener("change", () => sessionStorage.setItem("robotmem-token", tokenInput.value.trim()));
  document.getElementById("collection").addEventListener("change", () => route());
  window.addEventListener("hashchange", () => route());
  await loadCollections();
  await route();
});
