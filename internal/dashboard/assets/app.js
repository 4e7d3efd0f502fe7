// surge live dashboard: reads frames from /ui/events (server-sent events)
// and draws them. Plain JavaScript, no libraries, nothing fetched from
// elsewhere.
"use strict";

const WINDOW_S = 300; // seconds of history the charts show
const samples = [];   // oldest first, as the server sent them
let fresh = true;     // the next frame is a full snapshot

const fmtInt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

function fmtRate(v) { return fmtInt.format(v); }

function fmtMs(v) {
  if (v === 0) return "–";
  return fmtAxisMs(v);
}

function fmtAxisMs(v) {
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return fmtInt.format(v);
}

function color(name) {
  const v = getComputedStyle(document.documentElement).getPropertyValue("--" + name).trim();
  return v || getComputedStyle(document.documentElement).getPropertyValue("--other").trim();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// --- workload cards --------------------------------------------------------

function renderCards(latest) {
  const box = document.getElementById("workloads");
  for (const w of latest.workloads) {
    let card = box.querySelector(`[data-workload="${w.name}"]`);
    if (!card) {
      card = el("article", { class: "card", "data-workload": w.name, style: `--c: ${color(w.name)}` },
        el("h3", {}, w.name),
        el("dl", {},
          el("dt", {}, "req/s"), el("dd", { class: "rps" }),
          el("dt", {}, "p50 ms"), el("dd", { class: "p50" }),
          el("dt", {}, "p99 ms"), el("dd", { class: "p99" }),
          el("dt", {}, "5xx/s"), el("dd", { class: "errors" }),
          el("dt", {}, "requests"), el("dd", { class: "total" })));
      box.append(card);
    }
    setFigure(card, "rps", w.rps, fmtRate(w.rps));
    setFigure(card, "p50", w.p50_ms, fmtMs(w.p50_ms));
    setFigure(card, "p99", w.p99_ms, fmtMs(w.p99_ms));
    setFigure(card, "errors", w.errors_ps, fmtRate(w.errors_ps));
    setFigure(card, "total", w.total, fmtInt.format(w.total));
    card.classList.toggle("idle", w.total === 0);
  }
}

// setFigure shows a formatted figure and keeps the exact one in data-value.
function setFigure(card, cls, value, text) {
  const dd = card.querySelector("." + cls);
  dd.dataset.value = String(value);
  dd.textContent = text;
}

// --- line charts -----------------------------------------------------------

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

// fitCanvas sizes the drawing buffer to the element, for sharp lines.
function fitCanvas(canvas, cssHeight) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || canvas.width;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(cssHeight * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, w, h: cssHeight };
}

// drawChart draws series ({color, width, points: [[tMs, v]]}) over the
// last WINDOW_S seconds up to nowMs; a null v breaks the line.
function drawChart(canvas, series, nowMs, fmt) {
  const { ctx, w, h } = fitCanvas(canvas, 220);
  const pad = { l: 56, r: 8, t: 8, b: 22 };
  const x0 = nowMs - WINDOW_S * 1000;
  let ymax = 0;
  for (const s of series) for (const [, v] of s.points) if (v !== null) ymax = Math.max(ymax, v);
  ymax = niceMax(ymax);
  const X = t => pad.l + (t - x0) / (WINDOW_S * 1000) * (w - pad.l - pad.r);
  const Y = v => h - pad.b - v / ymax * (h - pad.t - pad.b);
  const muted = getComputedStyle(document.body).getPropertyValue("--muted");
  const line = getComputedStyle(document.body).getPropertyValue("--line");
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  ctx.fillStyle = muted;
  ctx.strokeStyle = line;
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, y = Y(v);
    ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    ctx.fillText(fmt(v), pad.l - 6, y);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  for (let s = 0; s <= WINDOW_S; s += 60) {
    ctx.fillText(s === WINDOW_S ? "now" : `-${(WINDOW_S - s) / 60}m`, X(x0 + s * 1000), h - pad.b + 6);
  }
  for (const s of series) {
    const pts = s.points.filter(([t]) => t >= x0);
    if (pts.length === 0) continue;
    ctx.strokeStyle = s.color;
    ctx.lineWidth = s.width;
    ctx.beginPath();
    let drawing = false;
    for (const [t, v] of pts) {
      if (v === null) { drawing = false; continue; }
      if (drawing) ctx.lineTo(X(t), Y(v)); else ctx.moveTo(X(t), Y(v));
      drawing = true;
    }
    ctx.stroke();
  }
}

function renderCharts() {
  if (samples.length === 0) return;
  const nowMs = samples[samples.length - 1].t;
  const names = samples[samples.length - 1].workloads.map(w => w.name);
  // A second without requests has a rate of 0 but no latency at all.
  const pick = (name, field) => samples.map(s => {
    const w = s.workloads.find(x => x.name === name);
    if (!w) return [s.t, null];
    return [s.t, field === "rps" || w.rps > 0 ? w[field] : null];
  });
  // Idle workloads stay off the charts, so the busy ones keep the scale.
  const active = names.filter(n => samples.some(s => s.workloads.some(w => w.name === n && w.rps > 0)));
  drawChart(document.getElementById("throughput"),
    active.map(n => ({ color: color(n), width: 2, points: pick(n, "rps") })), nowMs, fmtRate);
  drawChart(document.getElementById("latency"),
    active.flatMap(n => [
      { color: color(n), width: 1, points: pick(n, "p50_ms") },
      { color: color(n), width: 2.5, points: pick(n, "p99_ms") },
    ]), nowMs, fmtAxisMs);
}

// --- panels ----------------------------------------------------------------

function renderPanels(panels) {
  const box = document.getElementById("panels");
  for (const p of panels) {
    let div = box.querySelector(`[data-panel="${p.id}"]`);
    if (!div) {
      div = el("section", { class: "panel", "data-panel": p.id, "data-kind": p.kind }, el("h2", {}, p.title), el("div", { class: "body" }));
      box.append(div);
    }
    const body = div.querySelector(".body");
    if (p.kind === "transfers") renderTransfers(body, p.data || []);
    else if (p.kind === "events") renderEvents(body, p.data || []);
    else if (p.kind === "limits") renderLimits(body, p.data || []);
  }
}

// renderLimits lists each limit in force, its use and the share used;
// the exact figures stay in data-used and data-limit.
function renderLimits(body, limits) {
  const rows = limits.map(l => {
    const share = l.used >= 0 && l.limit > 0 ? l.used / l.limit : null;
    const bar = el("span", { class: "bar" }, el("span", { style: `width: ${Math.min(100, (share || 0) * 100).toFixed(1)}%` }));
    return el("tr", { "data-limit": l.name, "data-used": String(l.used), "data-max": String(l.limit) },
      el("td", {}, "--" + l.name),
      el("td", { class: "num" }, l.used >= 0 ? fmtInt.format(l.used) : "per connection"),
      el("td", { class: "num" }, `${fmtInt.format(l.limit)} ${l.unit}`),
      el("td", { class: "share" }, share === null ? "" : bar, share === null ? "" : ` ${(share * 100).toFixed(1)}%`));
  });
  body.replaceChildren(el("table", {},
    el("thead", {}, el("tr", {}, el("th", {}, "limit"), el("th", {}, "in use"), el("th", {}, "at most"), el("th", {}, "used"))),
    el("tbody", {}, ...rows)));
}

function clock(iso) { return new Date(iso).toLocaleTimeString("en-GB", { hour12: false }); }

function renderTransfers(body, transfers) {
  if (transfers.length === 0) {
    body.replaceChildren(el("p", { class: "empty" }, "No transfer yet."));
    return;
  }
  const rows = transfers.map(t => el("tr", { "data-transfer": t.id },
    el("td", {}, clock(t.at)), el("td", {}, t.id), el("td", {}, `${t.from} → ${t.to}`),
    el("td", { class: "num" }, `${fmtInt.format(t.amount)} ${t.currency}`), el("td", {}, t.state)));
  body.replaceChildren(el("table", {},
    el("thead", {}, el("tr", {}, el("th", {}, "time"), el("th", {}, "id"), el("th", {}, "from → to"), el("th", {}, "amount"), el("th", {}, "state"))),
    el("tbody", {}, ...rows)));
}

function renderEvents(body, events) {
  if (events.length === 0) {
    body.replaceChildren(el("p", { class: "empty" }, "No event yet."));
    return;
  }
  const seen = new Set();
  for (const ev of events) {
    seen.add(ev.name);
    let div = [...body.children].find(c => c.dataset.event === ev.name);
    if (!div) {
      div = el("div", { class: "event", "data-event": ev.name }, el("h3", {}, ev.name), el("div", { class: "meta" }), el("canvas", {}),
        el("div", { class: "legend" }, "sold: 0%", el("i", {}), "100%"));
      div.querySelector("canvas").addEventListener("mousemove", e => hoverArea(div, e));
      body.append(div);
    }
    div._event = ev;
    renderEvent(div, ev);
  }
  for (const c of [...body.children]) if (!seen.has(c.dataset.event)) c.remove();
}

function seats(a) { return a.sold + a.available; }

function renderEvent(div, ev) {
  const total = ev.areas.reduce((n, a) => n + seats(a), 0);
  const sold = ev.areas.reduce((n, a) => n + a.sold, 0);
  div.dataset.sold = String(sold);
  div.dataset.total = String(total);
  const meta = div.querySelector(".meta");
  const pct = total ? (100 * sold / total).toFixed(1) : "0.0";
  if (ev.sold_out_at) {
    let after = "";
    if (ev.opens_at) after = ` — ${((new Date(ev.sold_out_at) - new Date(ev.opens_at)) / 1000).toFixed(1)} s after opening`;
    meta.replaceChildren(el("span", { class: "soldout" }, `Sold out at ${clock(ev.sold_out_at)}`), `${after}; ${fmtInt.format(sold)} seats in ${ev.areas.length} areas.`);
  } else {
    meta.textContent = `${fmtInt.format(sold)} of ${fmtInt.format(total)} seats sold (${pct}%) in ${ev.areas.length} areas.`;
  }
  drawHeatmap(div.querySelector("canvas"), ev.areas);
}

const TILE = 26, GAP = 3;

function gridOf(n) {
  const cols = Math.max(1, Math.ceil(Math.sqrt(n * 2)));
  return { cols, rows: Math.ceil(n / cols) };
}

// heat maps a sold share (0..1) to a colour from pale amber to deep red.
function heat(f) {
  const hue = 40 - 40 * f, light = 75 - 35 * f;
  return `hsl(${hue}, 90%, ${light}%)`;
}

// drawHeatmap draws one tile per area, filled from the bottom as its seats
// sell.
function drawHeatmap(canvas, areas) {
  const g = gridOf(areas.length);
  const w = g.cols * (TILE + GAP), h = g.rows * (TILE + GAP);
  canvas.style.width = w + "px";
  canvas.style.height = h + "px";
  const { ctx } = fitCanvas(canvas, h);
  const line = getComputedStyle(document.body).getPropertyValue("--line");
  ctx.clearRect(0, 0, w, h);
  areas.forEach((a, i) => {
    const x = (i % g.cols) * (TILE + GAP), y = Math.floor(i / g.cols) * (TILE + GAP);
    const f = seats(a) ? a.sold / seats(a) : 0;
    ctx.fillStyle = line;
    ctx.fillRect(x, y, TILE, TILE);
    ctx.fillStyle = heat(f);
    const fh = Math.round(TILE * f);
    ctx.fillRect(x, y + TILE - fh, TILE, fh);
  });
}

function hoverArea(div, e) {
  const ev = div._event;
  if (!ev) return;
  const g = gridOf(ev.areas.length);
  const r = e.target.getBoundingClientRect();
  const col = Math.floor((e.clientX - r.left) / (TILE + GAP)), row = Math.floor((e.clientY - r.top) / (TILE + GAP));
  const a = ev.areas[row * g.cols + col];
  e.target.title = a ? `area ${a.id} (${a.rows}×${a.cols}): ${a.sold} sold, ${a.available} available` : "";
}

// --- the stream --------------------------------------------------------------

function setStatus(state, text) {
  const s = document.getElementById("status");
  s.dataset.state = state;
  s.textContent = text;
}

function onFrame(frame) {
  if (fresh) samples.length = 0;
  fresh = false;
  samples.push(...frame.samples);
  if (samples.length > WINDOW_S) samples.splice(0, samples.length - WINDOW_S);
  if (samples.length > 0) {
    const latest = samples[samples.length - 1];
    renderCards(latest);
    document.getElementById("clock").textContent = new Date(latest.t).toLocaleTimeString("en-GB", { hour12: false });
  }
  renderCharts();
  renderPanels(frame.panels || []);
  document.body.dataset.frames = String(Number(document.body.dataset.frames || 0) + 1);
}

function connect() {
  const es = new EventSource("/ui/events");
  es.onopen = () => { fresh = true; setStatus("live", "live"); };
  es.onmessage = e => onFrame(JSON.parse(e.data));
  es.onerror = () => setStatus("lost", "reconnecting…");
}

window.addEventListener("resize", renderCharts);
connect();
