// robotmem web UI: the views an engineer explores with — episodes and their timelines, the map, and
// parameters against outcome. Helpers (el, api, show, run, measured, …) are in app.js; plots in charts.js.
"use strict";

// ---- time windows (map and parameters) -------------------------------------------------------------

const WINDOWS = [
  ["all", "all time", null],
  ["24h", "last 24 h", 24],
  ["7d", "last 7 days", 24 * 7],
  ["30d", "last 30 days", 24 * 30],
  ["custom", "from … to …", null],
];

// The window's bounds as ISO UTC text; the server bounds each memory's observed_at (when it happened) by them.
function windowBounds(choice) {
  const found = WINDOWS.find(([key]) => key === choice.window);
  if (choice.window === "custom") {
    const utc = (local) => (local ? new Date(local).toISOString() : undefined);
    return { since: utc(choice.since), until: utc(choice.until) };
  }
  if (!found || found[2] === null) return {};
  return { since: new Date(Date.now() - found[2] * 3600 * 1000).toISOString() };
}

function windowControls(choice, onChange) {
  const preset = el("select", { id: `${choice.id}-window` }, WINDOWS.map(([key, label]) => el("option", { value: key, selected: choice.window === key }, label)));
  const since = el("input", { type: "datetime-local", id: `${choice.id}-since`, value: choice.since, "aria-label": "from" });
  const until = el("input", { type: "datetime-local", id: `${choice.id}-until`, value: choice.until, "aria-label": "to" });
  const custom = el("span", { className: "inline", hidden: choice.window !== "custom" }, since, "–", until);
  preset.addEventListener("change", () => {
    choice.window = preset.value;
    custom.hidden = preset.value !== "custom";
    if (preset.value !== "custom") onChange();
  });
  for (const box of [since, until]) {
    box.addEventListener("change", () => {
      choice.since = since.value;
      choice.until = until.value;
      onChange();
    });
  }
  return filterField("Observed (when it happened)", el("span", { className: "inline" }, preset, custom));
}

// A window the server refused leaves the controls (to correct it) but not the plot of the last answer,
// which would otherwise stand under bounds it does not match. ``view``: the view's id prefix.
function refused(current, view) {
  return (err) => {
    if (current()) {
      const plot = document.getElementById(`${view}-plot`);
      if (plot) plot.replaceChildren();
      const summary = document.getElementById(`${view}-summary`);
      if (summary) summary.textContent = "Nothing shown: the server refused these settings (the message above says why).";
    }
    throw err;
  };
}

function legend(...more) {
  return el(
    "div",
    { className: "legend" },
    el("span", {}, el("span", { className: "swatch ok" }), "task.success true"),
    el("span", {}, el("span", { className: "swatch bad" }), "false"),
    el("span", {}, el("span", { className: "swatch unknown" }), "not recorded"),
    more,
  );
}

// ---- episodes ----------------------------------------------------------------------------------------

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "running";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

function outcomeParts(s) {
  const badge = { success: "badge ok", failure: "badge bad", unknown: "badge" }[s.outcome] || "badge";
  const judged = s.successes + s.failures;
  const basis = s.outcome_score !== null
    ? `score ${Number(s.outcome_score).toFixed(2)}`
    : judged ? `${Math.round(s.success_rate * 100)}% of ${judged} judged` : "no score, nothing judged";
  const note = s.outcome_score !== null && judged ? ` · ${Math.round(s.success_rate * 100)}% of ${judged} judged` : "";
  return [el("span", { className: badge }, s.outcome), " ", el("span", { className: "muted" }, basis + note)];
}

function outcomeCell(s) {
  return el("td", { "data-outcome": s.outcome }, outcomeParts(s));
}

function sessionTable(sessions) {
  return table(
    ["episode", "task", "robot", "start (UTC)", "duration", "outcome", "memories"],
    sessions.map((s) =>
      el(
        "tr",
        { className: "clickable", "data-session": s.session_id, onclick: (event) => { if (event.target.tagName !== "A") go(`#/session/${s.session_id}`); } },
        el("td", {}, sessionLink(s.session_id)),
        el("td", {}, s.task || "—"),
        el("td", {}, s.robot || "—"),
        el("td", {}, shortTime(s.created_at)),
        el("td", { className: "num" }, duration(s.duration_s)),
        outcomeCell(s),
        el("td", { className: "num" }, s.memory_count),
      ),
    ),
  );
}

async function sessionsView() {
  const current = claim();
  const f = state.sessionFilters;
  const limit = 25;
  const [facets, page] = await Promise.all([
    api("GET", `/api/episode-facets${query({ collection: collection() })}`),
    api("GET", `/api/sessions${query({ collection: collection(), robot: f.robot, task: f.task, outcome: f.outcome, status: f.status, limit, offset: state.sessionOffset })}`),
  ]);
  if (!current()) return;
  measured("sessions", () => {
    const choose = (name, label, options) => {
      const select = el("select", { name, id: `episode-${name}` }, el("option", { value: "" }, "any"), options.map(([value, text]) => el("option", { value, selected: f[name] === value }, text)));
      select.addEventListener("change", () => {
        f[name] = select.value;
        state.sessionOffset = 0;
        run(sessionsView);
      });
      return filterField(label, select);
    };
    const last = Math.min(page.offset + page.sessions.length, page.total);
    show(
      el("h2", {}, "Episodes"),
      el(
        "div",
        { className: "filters", id: "episode-filters" },
        choose("robot", "Robot", facets.robots.map((r) => [r.robot, `${r.robot} (${r.sessions})`])),
        choose("task", "Task", facets.tasks.map((t) => [t.task, `${t.task} (${t.sessions})`])),
        choose("outcome", "Outcome", [["success", "success"], ["failure", "failure"], ["unknown", "unknown"]]),
        choose("status", "Status", [["ended", "ended"], ["active", "running"]]),
      ),
      el(
        "p",
        { className: "muted" },
        "Outcome: with an outcome_score, failure below 0.5 and success otherwise; without one, the same test on the share of the episode's memories with task.success true among those that record it; unknown when it has neither.",
      ),
      el(
        "div",
        { className: "pager" },
        el("button", { type: "button", disabled: page.offset === 0, onclick: () => { state.sessionOffset = Math.max(0, page.offset - limit); run(sessionsView); } }, "‹ Prev"),
        el("span", { id: "episode-count" }, page.total ? `${page.offset + 1}–${last} of ${page.total}` : "no episodes"),
        el("button", { type: "button", disabled: last >= page.total, onclick: () => { state.sessionOffset = page.offset + limit; run(sessionsView); } }, "Next ›"),
      ),
      sessionTable(page.sessions),
    );
  });
}

async function sessionView(id) {
  const current = claim();
  const episode = await api("GET", `/api/sessions/${encodeURIComponent(id)}/memories`);
  if (!current()) return;
  const s = episode.session;
  measured("session", () => {
    const chart = el("div", { id: "timeline-chart", className: "chart" });
    show(
      el("h2", {}, "Episode ", el("code", {}, s.session_id)),
      keyValueTable([
        ["task", s.task || "—"],
        ["robot", s.robot || "—"],
        ["collection", s.collection],
        ["status", s.status],
        ["started / ended (UTC)", `${shortTime(s.created_at)} / ${shortTime(s.ended_at) || "—"}`],
        ["duration", duration(s.duration_s)],
        ["outcome", el("span", { id: "episode-outcome" }, outcomeParts(s))],
        ["context", el("pre", {}, json(s.context))],
      ]),
      el("h3", {}, `Timeline (${episode.total})`),
      legend(),
      chart,
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
    if (episode.memories.length) Charts.timeline(chart, { width: plotWidth(chart), memories: episode.memories, open: (memoryId) => go(`#/memory/${memoryId}`) });
  });
}

// ---- map ---------------------------------------------------------------------------------------------

const PLANES = [
  ["0,1", "x–y (top)"],
  ["0,2", "x–z (side)"],
  ["1,2", "y–z (front)"],
];
const AXIS_NAMES = ["x", "y", "z"];
// Coordinates are read in metres (the ROS convention, REP 103) until memories carry a unit.
const MAP_UNIT = "m";

// What the map draws, one entry per layer the server offers (MapResult.layers): each turns the
// answer into items {x, y, …} on the chosen plane (and lines, for tracks).
const onPlane = (coordinates, plane) => typeof coordinates[plane[0]] === "number" && typeof coordinates[plane[1]] === "number";
const objectName = (o) => o.label || o.object_id || "object";
const MAP_LAYERS = {
  memories: (data, plane) => ({
    id: "memories",
    items: data.points
      .filter((p) => onPlane(p.coordinates, plane))
      .map((p) => ({ x: p.coordinates[plane[0]], y: p.coordinates[plane[1]], success: p.success, point: p })),
    describe: (item) => `#${item.point.memory_id} ${shortTime(item.point.time)} (${item.point.coordinates.map((c) => Charts.fmt(c)).join(", ")}) ${item.point.content}`,
    open: (item) => go(`#/memory/${item.point.memory_id}`),
  }),
  // Each object's latest position in the frame (a labelled diamond) and its track: its sightings in
  // observed_at order, joined by a line.
  objects: (data, plane) => {
    const shown = data.objects.filter((o) => onPlane(o.position, plane));
    return {
      id: "objects",
      marker: "diamond",
      color: Charts.COLOR.object,
      items: shown.map((o) => ({ x: o.position[plane[0]], y: o.position[plane[1]], object: o })),
      lines: shown.map((o) => o.track.filter((t) => onPlane(t.position, plane)).map((t) => ({ x: t.position[plane[0]], y: t.position[plane[1]] }))),
      label: (item) => objectName(item.object),
      describe: (item) => {
        const o = item.object;
        return `${objectName(o)}${o.object_id ? ` (${o.object_id})` : ""}: last seen ${shortTime(o.observed_at)} at (${o.position.map((c) => Charts.fmt(c)).join(", ")}), ${o.sightings} sighting${o.sightings === 1 ? "" : "s"} in this window`;
      },
      open: (item) => go(`#/memory/${item.object.memory_id}`),
    };
  },
};

async function mapView() {
  const current = claim();
  const choice = Object.assign(state.map, { id: "map" });
  const data = await api("GET", `/api/map${query(Object.assign({ field: choice.field, frame: choice.frame, collection: collection(), limit: 10000 }, windowBounds(choice)))}`).catch(refused(current, "map"));
  if (!current()) return;
  // A frame chosen before that this field or window no longer has: back to the default one.
  if (choice.frame && data.frames.length && !data.frames.some((f) => f.frame === choice.frame)) {
    choice.frame = undefined;
    return run(mapView);
  }
  const draw = () => drawMap(choice, data);
  measured("map", draw);
  redrawOnResize(draw);
}

function mapSummary(data, plane, layers) {
  if (!data.field) return "No memory has a spatial.* coordinate list in this window.";
  const count = (id) => (layers.find((layer) => layer.id === id) || { items: [] }).items.length;
  const flat = data.objects.length - count("objects"); // latest positions without this plane's axes
  const objects = data.objects.length
    ? ` ${count("objects")} object${count("objects") === 1 ? "" : "s"} seen in this frame (◆ latest position, line: track in time order, from ${data.sightings} sightings)` +
      (flat ? `; ${flat} more have no z, so this plane cannot show them.` : ".")
    : " No object seen in this frame.";
  return (
    `Showing ${count("memories")} of ${data.total} memories with ${data.field} in frame ${data.frame}` +
    (data.total > data.points.length ? ` (the newest ${data.points.length} were fetched)` : "") +
    ` on ${AXIS_NAMES[plane[0]]}–${AXIS_NAMES[plane[1]]}; coordinates in ${MAP_UNIT}, both axes at one scale.` +
    objects +
    " Scroll or + / − to zoom, drag or arrow keys to pan, 0 to fit, click a point to open it."
  );
}

function drawMap(choice, data) {
  const redraw = () => run(mapView);
  const fieldSelect = el(
    "select",
    { id: "map-field" },
    data.fields.length ? data.fields.map((f) => el("option", { value: f.field, selected: f.field === data.field }, `${f.field} (${f.memories})`)) : el("option", { value: "" }, "none"),
  );
  fieldSelect.addEventListener("change", () => {
    choice.field = fieldSelect.value;
    redraw();
  });
  // One coordinate frame at a time: positions of different frames never share the axes.
  const frameSelect = el(
    "select",
    { id: "map-frame", disabled: data.frames.length < 2 },
    data.frames.length ? data.frames.map((f) => el("option", { value: f.frame, selected: f.frame === data.frame }, `${f.frame} (${f.memories})`)) : el("option", { value: "" }, "none"),
  );
  frameSelect.addEventListener("change", () => {
    choice.frame = frameSelect.value;
    redraw();
  });
  const dimensions = Math.max(2, ...data.points.slice(0, 200).map((p) => p.coordinates.length), ...data.objects.slice(0, 200).map((o) => o.position.length));
  const planes = PLANES.filter(([key]) => key.split(",").every((i) => Number(i) < dimensions));
  if (!planes.some(([key]) => key === choice.plane)) choice.plane = planes[0][0];
  const planeSelect = el("select", { id: "map-plane" }, planes.map(([key, label]) => el("option", { value: key, selected: key === choice.plane }, label)));
  planeSelect.addEventListener("change", () => {
    choice.plane = planeSelect.value;
    drawMap(choice, data);
  });
  const controls = [filterField("Position", fieldSelect), filterField("Frame", frameSelect), filterField("Plane", planeSelect), windowControls(choice, redraw)];
  const plane = choice.plane.split(",").map(Number);
  const layers = data.layers.filter((name) => MAP_LAYERS[name]).map((name) => MAP_LAYERS[name](data, plane));
  const plot = el("div", { id: "map-plot", className: "chart" });
  show(
    el("h2", {}, "Map"),
    el("div", { className: "filters", id: "map-controls" }, controls),
    legend(el("span", {}, el("span", { className: "swatch object" }), "object: latest position and track")),
    el("p", { className: "muted", id: "map-summary" }, mapSummary(data, plane, layers)),
    plot,
  );
  if (!data.field) return;
  const width = plotWidth(plot);
  Charts.map(plot, { width, height: Math.round(Math.min(640, width * 0.62)), unit: MAP_UNIT, labels: [AXIS_NAMES[plane[0]], AXIS_NAMES[plane[1]]], layers });
}

// ---- parameters against outcome ----------------------------------------------------------------------

async function paramsView() {
  const current = claim();
  const choice = Object.assign(state.params, { id: "params" });
  const bounds = windowBounds(choice);
  const fields = (await api("GET", `/api/params${query(Object.assign({ collection: collection() }, bounds))}`).catch(refused(current, "param"))).fields;
  if (!current()) return;
  if (!fields.some((f) => f.field === choice.x)) choice.x = fields.length ? fields[0].field : "";
  if (choice.y === choice.x || (choice.y && !fields.some((f) => f.field === choice.y))) choice.y = "";
  let result = null;
  if (choice.x) {
    const field = fields.find((f) => f.field === choice.x);
    const unit = choice.unit !== "" && field.units && choice.unit in field.units ? choice.unit : undefined;
    result = await api(
      "GET",
      `/api/params/outcome${query(Object.assign({ x: choice.x, y: choice.y, x_unit: unit, bins: choice.bins, y_bins: choice.bins, collection: collection(), points: 10000 }, bounds))}`,
    );
  }
  if (!current()) return;
  const draw = () => drawParams(choice, fields, result);
  measured("params", draw);
  redrawOnResize(draw);
}

function drawParams(choice, fields, result) {
  const redraw = () => run(paramsView);
  const label = (f) => `${f.field}${f.unit ? ` [${f.unit}]` : ""} (${f.memories})`;
  const xSelect = el("select", { id: "param-x" }, fields.length ? fields.map((f) => el("option", { value: f.field, selected: f.field === choice.x }, label(f))) : el("option", { value: "" }, "none"));
  const ySelect = el("select", { id: "param-y" }, el("option", { value: "" }, "success rate (one parameter)"), fields.filter((f) => f.field !== choice.x).map((f) => el("option", { value: f.field, selected: f.field === choice.y }, `${label(f)} — heat map`)));
  const binSelect = el("select", { id: "param-bins" }, ["", "5", "10", "20", "40"].map((b) => el("option", { value: b, selected: String(choice.bins || "") === b }, b || "auto")));
  xSelect.addEventListener("change", () => { choice.x = xSelect.value; choice.unit = ""; redraw(); });
  ySelect.addEventListener("change", () => { choice.y = ySelect.value; redraw(); });
  binSelect.addEventListener("change", () => { choice.bins = binSelect.value; redraw(); });
  const controls = [filterField("Parameter", xSelect), filterField("Against", ySelect), filterField("Bins", binSelect)];
  const field = fields.find((f) => f.field === choice.x);
  if (field && Object.keys(field.units).length > 1) {
    const unitSelect = el("select", { id: "param-unit" }, Object.entries(field.units).map(([unit, count]) => el("option", { value: unit, selected: (result && (result.x.unit || "")) === unit }, `${unit || "no unit"} (${count})`)));
    unitSelect.addEventListener("change", () => { choice.unit = unitSelect.value; redraw(); });
    controls.push(filterField("Unit", unitSelect));
  }
  controls.push(windowControls(choice, redraw));
  const plot = el("div", { id: "param-plot", className: "chart" });
  show(el("h2", {}, "Parameters against outcome"), el("div", { className: "filters", id: "param-controls" }, controls), paramSummary(result), plot, result ? paramTable(result) : null);
  if (!result || !result.judged) return;
  const width = plotWidth(plot);
  const open = (id) => go(`#/memory/${id}`);
  if (result.y) Charts.rateGrid(plot, { width, height: Math.round(Math.min(560, width * 0.55)), result });
  else Charts.rateByBin(plot, { width, height: 380, result, open });
}

function paramSummary(result) {
  if (!result) return el("p", { className: "muted", id: "param-summary" }, "No memory has a numeric params.* value (a number, or {\"value\": number, \"unit\": …}) in this window.");
  const left = result.left_out;
  const parts = [];
  if (left.no_outcome) parts.push(`${left.no_outcome} without task.success`);
  if (left.other_unit) parts.push(`${left.other_unit} in another unit`);
  if (left.no_y) parts.push(`${left.no_y} without ${result.y ? result.y.field : "y"}`);
  return el(
    "div",
    { className: "muted", id: "param-summary" },
    el("p", {}, `${result.judged} memories judged by task.success (true = success, false = failure), ${result.successes} successes.`, parts.length ? ` Left out: ${parts.join(", ")}.` : " None left out."),
    el(
      "p",
      {},
      result.y
        ? "Each cell: the success rate of the memories in both bins (red 0 % → green 100 %), more opaque with more memories; hover for counts."
        : "Bars: success rate per bin, n = memories in the bin; whiskers: Wilson score interval, 95 %; dots: each memory (successes above 100 %, failures below 0 %), click one to open it.",
    ),
  );
}

function paramTable(result) {
  const unit = result.x.unit ? ` ${result.x.unit}` : "";
  if (result.y) {
    const ye = result.y.edges, xe = result.x.edges, yUnit = result.y.unit ? ` ${result.y.unit}` : "";
    return el(
      "details",
      { className: "panel" },
      el("summary", {}, `Cells as a table (${result.cells.length} with memories)`),
      table(
        [result.x.field, result.y.field, "memories", "successes", "success rate"],
        result.cells.map((c) => el("tr", {}, el("td", {}, `${Charts.fmt(xe[c.x_bin])}–${Charts.fmt(xe[c.x_bin + 1])}${unit}`), el("td", {}, `${Charts.fmt(ye[c.y_bin])}–${Charts.fmt(ye[c.y_bin + 1])}${yUnit}`), el("td", { className: "num" }, c.count), el("td", { className: "num" }, c.successes), el("td", { className: "num" }, Charts.pct(c.rate)))),
      ),
    );
  }
  return el(
    "div",
    { className: "panel" },
    el("h3", {}, "Bins"),
    el(
      "table",
      { id: "param-bin-table" },
      el("thead", {}, el("tr", {}, ["bin (lo ≤ value < hi)", "memories", "successes", "success rate", "95 % interval (Wilson)"].map((h) => el("th", {}, h)))),
      el(
        "tbody",
        {},
        result.bins.map((b, i) =>
          el(
            "tr",
            { "data-lo": b.lo, "data-hi": b.hi, "data-count": b.count, "data-successes": b.successes },
            el("td", {}, `${Charts.fmt(b.lo)} – ${Charts.fmt(b.hi)}${unit}${i === result.bins.length - 1 ? " (hi included)" : ""}`),
            el("td", { className: "num" }, b.count),
            el("td", { className: "num" }, b.successes),
            el("td", { className: "num" }, Charts.pct(b.rate)),
            el("td", { className: "num" }, b.count ? `${Charts.pct(b.low)} – ${Charts.pct(b.high)}` : "—"),
          ),
        ),
      ),
    ),
  );
}
