// robotmem web UI: the plots, on uPlot (vendored in static/vendor/uplot, see VENDOR.json there).
// uPlot draws the scales, axes, ticks and grid on a canvas; the marks of each plot (points, bars,
// intervals, cells) are drawn in its draw hook, at the positions its scales give. Nothing here
// fetches or aggregates: the server sends bins and counts ready to draw.
"use strict";

const Charts = (() => {
  const COLOR = { ok: "#1a7f37", bad: "#cf222e", unknown: "#8c959f", accent: "#1f6feb", ink: "#1d232b", muted: "#66707c", object: "#8250df" };
  const FONT_FAMILY = '"Segoe UI", "Helvetica Neue", Arial, "WenQuanYi Micro Hei", "Noto Sans CJK SC", sans-serif';
  const FONT = `12px ${FONT_FAMILY}`;
  const LABEL_FONT = `600 12px ${FONT_FAMILY}`;
  const px = () => uPlot.pxRatio || 1;
  // Times are shown in UTC, as everywhere on the page.
  const utc = (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC");
  // Tick labels of a time axis in UTC, 24-hour, as precise as the span needs.
  const timeTicks = (u, splits) => {
    const span = u.scales.x.max - u.scales.x.min;
    const [from, to] = span < 600 ? [11, 19] : span < 2 * 86400 ? [11, 16] : span < 60 * 86400 ? [5, 16] : [0, 10];
    return splits.map((s) => new Date(s * 1000).toISOString().slice(from, to).replace("T", " "));
  };

  function outcomeColor(success) {
    return success === true ? COLOR.ok : success === false ? COLOR.bad : COLOR.unknown;
  }

  function axis(label, extra) {
    return Object.assign(
      { label, font: FONT, labelFont: LABEL_FONT, stroke: COLOR.muted, grid: { stroke: "#e6e9ed", width: 1 }, ticks: { stroke: "#c9d0d8", width: 1, size: 5 } },
      extra || {},
    );
  }

  // A plot whose scales follow `view` ({x: [min, max], y: [min, max]}); `draw(u, ctx)` draws the marks,
  // clipped to the plot area, in canvas pixels (u.valToPos(value, key, true)).
  function framePlot(target, { width, height, view, xAxis, yAxis, xTime, draw }) {
    const options = {
      width,
      height,
      tzDate: utc,
      legend: { show: false },
      cursor: { drag: { x: false, y: false, setScale: false }, points: { show: false } },
      scales: {
        x: { time: Boolean(xTime), auto: false, range: () => view.x.slice() },
        y: { auto: false, range: () => view.y.slice() },
      },
      axes: [axis(xAxis.label, Object.assign({ size: 48 }, xAxis.extra)), axis(yAxis.label, Object.assign({ size: 64 }, yAxis.extra))],
      series: [{}, { scale: "y", paths: () => null, points: { show: false } }],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.beginPath();
            ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
            ctx.clip();
            draw(u, ctx);
            ctx.restore();
          },
        ],
      },
    };
    const u = new uPlot(options, [[view.x[0], view.x[1]], [view.y[0], view.y[1]]], target);
    u.view = view;
    u.applyView = () => u.batch(() => {
      u.setScale("x", { min: view.x[0], max: view.x[1] });
      u.setScale("y", { min: view.y[0], max: view.y[1] });
    });
    u.applyView(); // lays out and draws now rather than in a microtask, so a view's render time includes it
    target.uplot = u; // tests and tools read the live scales from the element
    return u;
  }

  // The plot area in CSS pixels.
  function area(u) {
    return { width: u.bbox.width / px(), height: u.bbox.height / px() };
  }

  // Position of a mouse event relative to the plot area, in CSS pixels.
  function pointer(u, event) {
    const rect = u.over.getBoundingClientRect();
    return { left: event.clientX - rect.left, top: event.clientY - rect.top };
  }

  function nearest(items, left, top, radius) {
    let best = null;
    let bestDistance = radius * radius;
    for (const item of items) {
      const dx = item.left - left, dy = item.top - top;
      const distance = dx * dx + dy * dy;
      if (distance <= bestDistance) {
        best = item;
        bestDistance = distance;
      }
    }
    return best;
  }

  function tooltip(u) {
    const tip = document.createElement("div");
    tip.className = "chart-tip";
    tip.hidden = true;
    u.over.append(tip);
    return {
      show(text, left, top) {
        tip.textContent = text;
        tip.hidden = false;
        const width = area(u).width;
        tip.style.left = `${Math.min(left + 12, Math.max(0, width - 260))}px`;
        tip.style.top = `${Math.max(0, top - 34)}px`;
      },
      hide() {
        tip.hidden = true;
      },
    };
  }

  // Hover shows `describe(item)`, a click calls `open(item)`; items come from `locate()` in CSS pixels
  // ({left, top, ...}), recomputed after every redraw.
  function pickable(u, locate, describe, open, radius) {
    const tip = tooltip(u);
    let cache = null;
    u.hooks.draw = u.hooks.draw || [];
    u.hooks.draw.push(() => {
      cache = null;
    });
    const items = () => (cache = cache || locate());
    u.over.addEventListener("mousemove", (event) => {
      if (u.dragging) return tip.hide();
      const at = pointer(u, event);
      const found = nearest(items(), at.left, at.top, radius || 7);
      if (found) tip.show(describe(found), found.left, found.top);
      else tip.hide();
      u.over.style.cursor = found && open ? "pointer" : "";
    });
    u.over.addEventListener("mouseleave", () => tip.hide());
    if (open) {
      u.over.addEventListener("click", (event) => {
        if (u.moved) return;
        const at = pointer(u, event);
        const found = nearest(items(), at.left, at.top, radius || 7);
        if (found) open(found);
      });
    }
    return { items, tip };
  }

  function dot(path, x, y, r) {
    path.moveTo(x + r, y);
    path.arc(x, y, r, 0, 2 * Math.PI);
  }

  // ---- map: one plane of a coordinate frame, equal scales, zoom and pan ----------------------------

  // `layers`: [{id, items: [{x, y, success, ...}], radius, describe(item), open(item)}], drawn in order.
  // A layer may also draw `lines` (polylines of {x, y}), its items as `marker: "diamond"` in `color`,
  // and a `label(item)` beside each. What was drawn is counted in `u.drawn[layer.id]` (tests read it).
  function map(target, { width, height, unit, labels, layers }) {
    const all = layers.flatMap((layer) => layer.items.concat(...(layer.lines || [])));
    const view = { x: [0, 1], y: [0, 1] };
    const u = framePlot(target, {
      width,
      height,
      view,
      xAxis: { label: `${labels[0]} [${unit}]` },
      yAxis: { label: `${labels[1]} [${unit}]` },
      draw: (plot, ctx) => {
        if (!plot.fitted) return; // the first layout only sizes the plot area that fit() needs
        plot.drawn = {};
        for (const layer of layers) drawLayer(plot, ctx, layer);
        if (plot.crosshair) drawCrosshair(plot, ctx);
      },
    });
    // CSS pixels right of the points for the widest label drawn beside them (at most a third of the plot).
    const labelRoom = (width) => {
      let widest = 0;
      u.ctx.font = `600 ${11 * px()}px ${FONT_FAMILY}`; // as drawLabels writes them
      for (const layer of layers.filter((l) => l.label)) {
        const offset = (layer.radius || (layer.items.length > 2000 ? 2.5 : 3.5)) * 1.8 + 3; // as drawLayer
        for (const item of layer.items) widest = Math.max(widest, offset + u.ctx.measureText(layer.label(item)).width / px());
      }
      return Math.min(widest, width / 3);
    };
    const fit = () => {
      let bounds = all.length ? [Infinity, -Infinity, Infinity, -Infinity] : [-1, 1, -1, 1];
      for (const p of all) bounds = [Math.min(bounds[0], p.x), Math.max(bounds[1], p.x), Math.min(bounds[2], p.y), Math.max(bounds[3], p.y)];
      const size = area(u);
      const room = labelRoom(size.width);
      const spanX = Math.max(bounds[1] - bounds[0], 1e-6), spanY = Math.max(bounds[3] - bounds[2], 1e-6);
      const perPixel = Math.max(spanX / (size.width - room), spanY / size.height) * 1.1;
      setView((bounds[0] + bounds[1]) / 2 + (room * perPixel) / 2, (bounds[2] + bounds[3]) / 2, perPixel);
    };
    // One unit per pixel for both axes: the plot area's width and height set each range.
    const setView = (cx, cy, perPixel) => {
      const size = area(u);
      view.x = [cx - (size.width * perPixel) / 2, cx + (size.width * perPixel) / 2];
      view.y = [cy - (size.height * perPixel) / 2, cy + (size.height * perPixel) / 2];
      u.applyView();
    };
    const state = () => {
      const size = area(u);
      return { cx: (view.x[0] + view.x[1]) / 2, cy: (view.y[0] + view.y[1]) / 2, perPixel: (view.x[1] - view.x[0]) / size.width };
    };
    const zoom = (factor, anchorLeft, anchorTop) => {
      const size = area(u), now = state();
      const left = anchorLeft === undefined ? size.width / 2 : anchorLeft;
      const top = anchorTop === undefined ? size.height / 2 : anchorTop;
      const ax = u.posToVal(left, "x"), ay = u.posToVal(top, "y");
      const perPixel = now.perPixel * factor;
      setView(ax + (now.cx - ax) * factor, ay + (now.cy - ay) * factor, perPixel);
    };
    const pan = (dxPixels, dyPixels) => {
      const now = state();
      setView(now.cx - dxPixels * now.perPixel, now.cy + dyPixels * now.perPixel, now.perPixel);
    };
    u.layers = layers; // tests read what each layer drew from the element
    u.fitted = true;
    fit();
    interact(u, { zoom, pan, fit });
    const hits = layers.filter((layer) => layer.open || layer.describe);
    const locate = () =>
      hits.flatMap((layer) => layer.items.map((item) => ({ item, layer, left: u.valToPos(item.x, "x"), top: u.valToPos(item.y, "y") })));
    const pick = pickable(u, locate, (found) => found.layer.describe(found.item), (found) => found.layer.open && found.layer.open(found.item));
    // Enter opens the point nearest the centre (shown by a crosshair while the map has the focus).
    u.openCentre = () => {
      const size = area(u);
      const found = nearest(pick.items(), size.width / 2, size.height / 2, 12);
      if (found && found.layer.open) found.layer.open(found.item);
    };
    return Object.assign(u, { zoom, pan, fit });
  }

  function drawLayer(u, ctx, layer) {
    const lines = layer.lines ? drawLines(u, ctx, layer.lines, layer.color || COLOR.accent) : 0;
    const radius = layer.radius || (layer.items.length > 2000 ? 2.5 : 3.5);
    // Labels under the markers: a label never hides another object's marker.
    if (layer.label) drawLabels(u, ctx, layer.items, layer.label, radius * 1.8 + 3);
    if (layer.marker === "diamond") drawDiamonds(u, ctx, layer.items, layer.color || COLOR.accent, radius * 1.8);
    else drawDots(u, ctx, layer.items, radius);
    u.drawn[layer.id] = { items: layer.items.length, lines };
  }

  // Each line through its points in order, with a small dot at each; returns how many were drawn.
  function drawLines(u, ctx, lines, color) {
    const path = new Path2D(), dots = new Path2D(), r = 1.8 * px();
    let drawn = 0;
    for (const line of lines) {
      if (line.length < 2) continue;
      drawn += 1;
      line.forEach((p, i) => {
        const x = u.valToPos(p.x, "x", true), y = u.valToPos(p.y, "y", true);
        if (i === 0) path.moveTo(x, y);
        else path.lineTo(x, y);
        dot(dots, x, y, r);
      });
    }
    ctx.globalAlpha = 0.7;
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5 * px();
    ctx.stroke(path);
    ctx.fillStyle = color;
    ctx.fill(dots);
    ctx.globalAlpha = 1;
    return drawn;
  }

  function drawDiamonds(u, ctx, items, color, radius) {
    const r = radius * px(), path = new Path2D();
    for (const item of items) {
      const x = u.valToPos(item.x, "x", true), y = u.valToPos(item.y, "y", true);
      path.moveTo(x, y - r);
      path.lineTo(x + r, y);
      path.lineTo(x, y + r);
      path.lineTo(x - r, y);
      path.closePath();
    }
    ctx.fillStyle = color;
    ctx.fill(path);
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 1.5 * px();
    ctx.stroke(path);
  }

  function drawLabels(u, ctx, items, label, offset) {
    ctx.font = `600 ${11 * px()}px ${FONT_FAMILY}`;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.lineJoin = "round";
    ctx.lineWidth = 3 * px();
    for (const item of items) {
      const x = u.valToPos(item.x, "x", true) + offset * px(), y = u.valToPos(item.y, "y", true);
      const text = label(item);
      ctx.strokeStyle = "rgba(255, 255, 255, 0.85)";
      ctx.strokeText(text, x, y);
      ctx.fillStyle = COLOR.ink;
      ctx.fillText(text, x, y);
    }
  }

  function drawDots(u, ctx, items, radius) {
    const r = radius * px();
    const groups = new Map();
    for (const item of items) {
      const color = item.color || outcomeColor(item.success);
      if (!groups.has(color)) groups.set(color, new Path2D());
      dot(groups.get(color), u.valToPos(item.x, "x", true), u.valToPos(item.y, "y", true), r);
    }
    ctx.globalAlpha = 0.8;
    for (const color of [COLOR.unknown, COLOR.ok, COLOR.bad, ...groups.keys()]) {
      const path = groups.get(color);
      if (!path) continue;
      ctx.fillStyle = color;
      ctx.fill(path);
      groups.delete(color);
    }
    ctx.globalAlpha = 1;
  }

  function drawCrosshair(u, ctx) {
    const cx = u.bbox.left + u.bbox.width / 2, cy = u.bbox.top + u.bbox.height / 2, arm = 10 * px();
    ctx.strokeStyle = COLOR.ink;
    ctx.lineWidth = px();
    ctx.beginPath();
    ctx.moveTo(cx - arm, cy);
    ctx.lineTo(cx + arm, cy);
    ctx.moveTo(cx, cy - arm);
    ctx.lineTo(cx, cy + arm);
    ctx.stroke();
  }

  // Wheel zooms about the pointer, a drag pans; with the focus: + and - zoom, arrows pan, 0 fits,
  // Enter opens the point under the crosshair.
  function interact(u, { zoom, pan, fit }) {
    const over = u.over;
    over.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        const at = pointer(u, event);
        zoom(Math.exp(Math.max(-1, Math.min(1, event.deltaY * 0.0015))), at.left, at.top);
      },
      { passive: false },
    );
    over.addEventListener("mousedown", (event) => {
      if (event.button !== 0) return;
      let last = { x: event.clientX, y: event.clientY };
      u.dragging = true;
      u.moved = false;
      const move = (e) => {
        const dx = e.clientX - last.x, dy = e.clientY - last.y;
        if (Math.abs(dx) + Math.abs(dy) > 0) {
          u.moved = u.moved || Math.abs(e.clientX - event.clientX) + Math.abs(e.clientY - event.clientY) > 3;
          pan(dx, dy);
          last = { x: e.clientX, y: e.clientY };
        }
      };
      const up = () => {
        u.dragging = false;
        window.removeEventListener("mousemove", move);
        window.removeEventListener("mouseup", up);
        setTimeout(() => (u.moved = false), 0);
      };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
    const root = u.root;
    root.tabIndex = 0;
    root.setAttribute("role", "application");
    root.setAttribute("aria-roledescription", "map");
    root.setAttribute("aria-label", "Map: + and - zoom, arrow keys pan, 0 fits every point, Enter opens the point under the crosshair");
    root.addEventListener("focus", () => {
      u.crosshair = true;
      u.redraw(false);
    });
    root.addEventListener("blur", () => {
      u.crosshair = false;
      u.redraw(false);
    });
    root.addEventListener("keydown", (event) => {
      const step = 40;
      const keys = {
        "+": () => zoom(0.8),
        "=": () => zoom(0.8),
        "-": () => zoom(1.25),
        "0": () => fit(),
        ArrowLeft: () => pan(step, 0),
        ArrowRight: () => pan(-step, 0),
        ArrowUp: () => pan(0, step),
        ArrowDown: () => pan(0, -step),
        Enter: () => u.openCentre && u.openCentre(),
      };
      if (keys[event.key]) {
        event.preventDefault();
        keys[event.key]();
      }
    });
  }

  // ---- parameter against outcome -------------------------------------------------------------------

  // Deterministic jitter in [-0.5, 0.5) from a memory id, so points keep their place between renders.
  function jitter(id) {
    const x = Math.sin(id * 12.9898) * 43758.5453;
    return x - Math.floor(x) - 0.5;
  }

  // Bars of the success rate per bin, the 95 % interval of each, its count above it, and the raw
  // points: successes in a band above 1, failures in a band below 0.
  function rateByBin(target, { width, height, result, open }) {
    const edges = result.x.edges;
    const pad = (edges[edges.length - 1] - edges[0]) * 0.02;
    const view = { x: [edges[0] - pad, edges[edges.length - 1] + pad], y: [-0.2, 1.2] };
    const unit = result.x.unit ? ` [${result.x.unit}]` : "";
    const points = result.points.map((p) => ({ x: p.x, y: p.success ? 1.1 + jitter(p.memory_id) * 0.12 : -0.1 + jitter(p.memory_id) * 0.12, success: p.success, id: p.memory_id }));
    const u = framePlot(target, {
      width,
      height,
      view,
      xAxis: { label: `${result.x.field}${unit}` },
      yAxis: {
        label: "success rate",
        extra: { splits: () => [0, 0.25, 0.5, 0.75, 1], values: (plot, splits) => splits.map((s) => `${Math.round(s * 100)}%`) },
      },
      draw: (plot, ctx) => {
        drawBins(plot, ctx, result.bins);
        drawDots(plot, ctx, points, 2.2);
      },
    });
    const locate = () => [
      ...points.map((p) => ({ kind: "point", p, left: u.valToPos(p.x, "x"), top: u.valToPos(p.y, "y") })),
      ...result.bins.map((b) => ({ kind: "bin", b, left: u.valToPos((b.lo + b.hi) / 2, "x"), top: u.valToPos(b.rate === null ? 0 : b.rate, "y") })),
    ];
    const describe = (found) =>
      found.kind === "point"
        ? `#${found.p.id}: ${fmt(found.p.x)}${unit} — ${found.p.success ? "success" : "failure"}`
        : `${fmt(found.b.lo)}–${fmt(found.b.hi)}${unit}: ${found.b.successes}/${found.b.count}` +
          (found.b.rate === null ? "" : ` = ${pct(found.b.rate)} (95% ${pct(found.b.low)}–${pct(found.b.high)})`);
    pickable(u, locate, describe, (found) => found.kind === "point" && open(found.p.id), 8);
    return u;
  }

  function drawBins(u, ctx, bins) {
    const r = px();
    const zero = u.valToPos(0, "y", true);
    ctx.font = `${11 * r}px ${FONT_FAMILY}`;
    ctx.textAlign = "center";
    for (const b of bins) {
      const left = u.valToPos(b.lo, "x", true), right = u.valToPos(b.hi, "x", true);
      const gap = Math.min(2 * r, (right - left) * 0.1);
      if (b.count === 0) continue;
      const top = u.valToPos(b.rate, "y", true);
      ctx.fillStyle = "rgba(31, 111, 235, 0.28)";
      ctx.fillRect(left + gap, top, right - left - 2 * gap, zero - top);
      const mid = (left + right) / 2, low = u.valToPos(b.low, "y", true), high = u.valToPos(b.high, "y", true);
      const cap = Math.min(6 * r, (right - left) / 4);
      ctx.strokeStyle = COLOR.ink;
      ctx.lineWidth = 1.5 * r;
      ctx.beginPath();
      ctx.moveTo(mid, low);
      ctx.lineTo(mid, high);
      ctx.moveTo(mid - cap, low);
      ctx.lineTo(mid + cap, low);
      ctx.moveTo(mid - cap, high);
      ctx.lineTo(mid + cap, high);
      ctx.stroke();
      ctx.fillStyle = COLOR.accent;
      ctx.beginPath();
      dot(ctx, mid, top, 3 * r);
      ctx.fill();
      ctx.fillStyle = COLOR.ink;
      ctx.fillText(`n=${b.count}`, mid, Math.min(high, top) - 5 * r);
    }
  }

  // Red (0 %) through amber to green (100 %).
  function rateColor(rate, alpha) {
    const hue = Math.round(rate * 120);
    return `hsla(${hue}, 70%, 42%, ${alpha})`;
  }

  // Cells of two parameters' bins, coloured by success rate, more opaque with more memories.
  function rateGrid(target, { width, height, result }) {
    const xe = result.x.edges, ye = result.y.edges;
    const view = { x: [xe[0], xe[xe.length - 1]], y: [ye[0], ye[ye.length - 1]] };
    const most = Math.max(1, ...result.cells.map((c) => c.count));
    const xUnit = result.x.unit ? ` [${result.x.unit}]` : "", yUnit = result.y.unit ? ` [${result.y.unit}]` : "";
    const u = framePlot(target, {
      width,
      height,
      view,
      xAxis: { label: `${result.x.field}${xUnit}` },
      yAxis: { label: `${result.y.field}${yUnit}` },
      draw: (plot, ctx) => {
        const r = px();
        ctx.font = `${11 * r}px ${FONT_FAMILY}`;
        ctx.textAlign = "center";
        ctx.textAlign = "left";
    ctx.textBaseline = "middle";
        for (const c of result.cells) {
          const left = plot.valToPos(xe[c.x_bin], "x", true), right = plot.valToPos(xe[c.x_bin + 1], "x", true);
          const bottom = plot.valToPos(ye[c.y_bin], "y", true), top = plot.valToPos(ye[c.y_bin + 1], "y", true);
          ctx.fillStyle = rateColor(c.rate, 0.35 + 0.65 * (c.count / most));
          ctx.fillRect(left + r, top + r, right - left - 2 * r, bottom - top - 2 * r);
          if (right - left > 34 * r && bottom - top > 16 * r) {
            ctx.fillStyle = "#fff";
            ctx.fillText(`${Math.round(c.rate * 100)}% n=${c.count}`, (left + right) / 2, (top + bottom) / 2);
          }
        }
      },
    });
    const locate = () =>
      result.cells.map((c) => ({
        c,
        left: u.valToPos((xe[c.x_bin] + xe[c.x_bin + 1]) / 2, "x"),
        top: u.valToPos((ye[c.y_bin] + ye[c.y_bin + 1]) / 2, "y"),
      }));
    const describe = (found) => {
      const c = found.c;
      return `${fmt(xe[c.x_bin])}–${fmt(xe[c.x_bin + 1])}${xUnit} × ${fmt(ye[c.y_bin])}–${fmt(ye[c.y_bin + 1])}${yUnit}: ${c.successes}/${c.count} = ${pct(c.rate)}`;
    };
    const size = area(u);
    pickable(u, locate, describe, null, Math.max(size.width / Math.max(1, xe.length - 1), size.height / Math.max(1, ye.length - 1)) / 2);
    return u;
  }

  // ---- time: an episode's timeline and the outcome of sessions over time --------------------------

  // One lane per kind (facts, then each perception type), one mark per memory at its time.
  function timeline(target, { width, memories, open }) {
    const lanes = [...new Set(memories.map((m) => (m.type === "perception" ? m.perception_type : "fact")))];
    lanes.sort((a, b) => (a === "fact" ? -1 : b === "fact" ? 1 : a.localeCompare(b)));
    const times = memories.map((m) => Date.parse(m.created_at) / 1000);
    const first = Math.min(...times), last = Math.max(...times);
    const pad = Math.max((last - first) * 0.04, 1);
    const view = { x: [first - pad, last + pad], y: [-0.6, lanes.length - 0.4] };
    const items = memories.map((m, i) => ({
      x: times[i],
      y: lanes.indexOf(m.type === "perception" ? m.perception_type : "fact"),
      success: m.task && typeof m.task.success === "boolean" ? m.task.success : null,
      memory: m,
    }));
    const u = framePlot(target, {
      width,
      height: 90 + 34 * lanes.length,
      view,
      xTime: true,
      xAxis: { label: "time (UTC)", extra: { values: timeTicks } },
      yAxis: { label: "", extra: { size: 110, splits: () => lanes.map((_, i) => i), values: () => lanes, grid: { show: false } } },
      draw: (plot, ctx) => drawDots(plot, ctx, items, 5),
    });
    const locate = () => items.map((item) => ({ item, left: u.valToPos(item.x, "x"), top: u.valToPos(item.y, "y") }));
    pickable(u, locate, (found) => `#${found.item.memory.id} ${found.item.memory.created_at.slice(11, 19)} ${found.item.memory.content}`, (found) => open(found.item.memory.id), 8);
    return u;
  }

  // Outcome score and success rate of judged memories per ended session, over time (uPlot's own lines).
  function outcomes(target, { width, sessions, open }) {
    const xs = sessions.map((s) => Date.parse(s.created_at) / 1000);
    const options = {
      width,
      height: 240,
      tzDate: utc,
      scales: { x: { time: true }, y: { auto: false, range: [0, 1] } },
      axes: [axis("session start (UTC)", { values: timeTicks }), axis("score / rate", { splits: () => [0, 0.25, 0.5, 0.75, 1], values: (plot, splits) => splits.map((s) => s.toFixed(2)) })],
      series: [
        { label: "start" },
        { label: "outcome_score", stroke: COLOR.accent, width: 2, points: { size: 6 }, spanGaps: true },
        { label: "success rate of judged memories", stroke: COLOR.ok, width: 2, dash: [5, 4], points: { size: 5 }, spanGaps: true },
      ],
      legend: { live: false },
      cursor: { drag: { x: true, y: false } },
    };
    const data = [xs, sessions.map((s) => s.outcome_score), sessions.map((s) => s.success_rate)];
    const u = new uPlot(options, data, target);
    u.over.addEventListener("click", () => {
      if (u.select.width > 0) return;
      const index = u.cursor.idx;
      if (index !== null && index !== undefined && sessions[index]) open(sessions[index].session_id);
    });
    target.uplot = u;
    return u;
  }

  function fmt(value) {
    if (value === null || value === undefined) return "—";
    return Math.abs(value) >= 1000 || Math.abs(value) < 0.01 ? Number(value).toPrecision(3) : String(Number(value.toFixed(3)));
  }

  function pct(value) {
    return value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`;
  }

  return { COLOR, map, rateByBin, rateGrid, timeline, outcomes, outcomeColor, rateColor, fmt, pct };
})();
