// The page's HTML skeleton, its CSS and the drawing helpers every plot shares (html_page.h).
#include "export/html_page.h"

namespace ncclwatch::exporter::html_page {

// The curve comes first: it is the shape the method reads before anything else.
const char* const kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>ncclwatch report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:22px 0 6px} h3{font-size:14px;margin:12px 0 4px}
.f{padding:3px 8px;margin:2px 0;border-left:4px solid #999;background:#fff;white-space:pre-wrap}
.f.warning{border-color:#e08a00}.f.critical{border-color:#c00;background:#fff3f3}.f.info{border-color:#7a9}
.src{font-weight:600;margin-right:6px} canvas{background:#fff;border:1px solid #ddd;display:block}
table{border-collapse:collapse;background:#fff} td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
td.t{text-align:left;font-family:monospace}
.note{color:#666;font-size:12px} .legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
.zoom{font-size:12px;margin:4px 0} .zoom input{width:56px}
</style></head>
<body data-status="loading">
<h1 id="title">ncclwatch report</h1>
<h2>Findings</h2><div id="findings"></div>
<h2>The whole run: step time and its breakdown (capture windows shaded)</h2>
<div class="note" id="hist-note"></div><div class="legend" id="hist-legend"></div>
<canvas id="hist" class="plot" width="1100" height="260"></canvas><div class="note" id="hist-windows"></div>
<h2>GPU utilization over the whole run</h2>
<div class="note" id="ov-note"></div>
<canvas id="ov" class="plot" width="1100" height="280"></canvas><div class="legend" id="ov-legend"></div>
<h2 id="win-title">The shape inside the steps</h2>
<div class="note" id="win-note"></div>
<div class="zoom">steps <input id="z-from" type="number" min="1"> to <input id="z-to" type="number" min="1">
<button id="z-show">show</button> <button id="z-all">all</button></div>
<canvas id="win" class="plot" width="1100" height="300"></canvas><div class="legend" id="win-legend"></div>
<h3>Per rank over the same time (rows in host order)</h3>
<div class="note" id="rows-note"></div>
<canvas id="rows" class="plot" width="1100" height="200"></canvas>
<h2>One step, every rank</h2>
<div class="note" id="lanes-note"></div><div class="legend" id="lanes-legend"></div><div id="lanes"></div>
<h2>GPU utilization per rank and step (what nvidia-smi would show over each step)</h2>
<div class="note" id="heat-note"></div><canvas id="heat" class="plot" width="1100" height="320"></canvas>
<h2>Where each step's time went (mean per steady step)</h2>
<div class="legend" id="bd-legend"></div><canvas id="bd" class="plot" width="1100" height="300"></canvas>
<h2>Step time and overlap per step</h2>
<div class="legend" id="steps-legend"></div><canvas id="steps" class="plot" width="1100" height="260"></canvas>
<h2>Time each rank waited for its peers (mean per step; stragglers make the others wait)</h2>
<div id="late-list"></div><canvas id="waits" class="plot" width="1100" height="240"></canvas>
<h2>All-reduce buckets repeating each step</h2><div id="buckets" class="plot"></div>
<h2>Topology</h2><div id="topology"></div>
<pre id="drawn" hidden></pre>
<script type="application/json" id="data">)HTML";

const char* const kCommon = R"JS(</script>
<script>
"use strict";
window.onerror = function (m) { document.body.dataset.status = "error: " + m; };
const D = JSON.parse(document.getElementById("data").textContent);
const U = D.utilization || {};
const el = (t, c, txt) => { const e = document.createElement(t); if (c) e.className = c; if (txt !== undefined) e.textContent = txt; return e; };
const colors = ["#3b7dd8", "#d9534f", "#f0ad4e", "#9b59b6", "#5bc0de", "#8d6e63", "#bbbbbb"];
// What each plot drew (its series as drawn, axes, marks): the browser test reads it from #drawn.
const drawn = {};
function mark(id, n, info) { document.getElementById(id).dataset.points = n; drawn[id] = Object.assign({points: n}, info || {}); }
function empty(c, text) { const ctx = c.getContext("2d"); ctx.clearRect(0, 0, c.width, c.height); ctx.fillStyle = "#888"; ctx.font = "13px sans-serif"; ctx.fillText(text, 20, 30); }
// Numbers for people: thousands grouped, a fixed number of decimals.
function num(v, d) { return Number(v).toLocaleString("en-US", {minimumFractionDigits: d || 0, maximumFractionDigits: d || 0}); }
// Round ticks (1, 2, 5 x 10^k apart, at least `min` apart) over [a, b], and the decimals they need.
function ticks(a, b, n, min) {
  if (!(b > a)) return {v: [a], dec: 0};
  const raw = Math.max((b - a) / n, min || 0), p = Math.pow(10, Math.floor(Math.log10(raw)));
  const s = [1, 2, 5, 10].map(m => m * p).find(x => x >= raw * (1 - 1e-9));
  const v = [];
  for (let k = Math.ceil(a / s - 1e-9); k * s <= b + s * 1e-9; k++) v.push(+(k * s).toPrecision(12));
  return {v, dec: Math.max(0, -Math.floor(Math.log10(s) + 1e-9))};
}
// The unit of a time axis spanning `us` µs, and a duration as people write it.
function timeUnit(us) { return us >= 5e6 ? {div: 1e6, name: "s"} : us >= 5e3 ? {div: 1e3, name: "ms"} : {div: 1, name: "µs"}; }
function fmtTime(us) {
  const a = Math.abs(us);
  return a >= 1e6 ? num(us / 1e6, 2) + " s" : a >= 1e3 ? num(us / 1e3, a >= 1e5 ? 0 : 1) + " ms" : num(us, 0) + " µs";
}
// A rows plot's height: its rows of rh px, the axis name above them, the x axis below.
const kRowsTop = 24;
const rowsHeight = (rows, rh) => kRowsTop + rows * rh + 44;
// Axes on canvas c, cleared first. o: x0, x1, y0, y1 (data units); xdiv, ydiv (data units per
// shown unit); xlabel, ylabel (with their units); left, right, top, bottom (margins, px); rows
// (no y ticks: the plot labels its rows; the y label above them); xcat (no x ticks: the plot labels its categories);
// xmin (the smallest x tick spacing, shown units). Returns the scales and what the axes say.
function frame(c, o) {
  const ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  const L = o.left || 64, R = c.width - (o.right || 20), T = o.top || (o.rows ? kRowsTop : 12), B = c.height - (o.bottom || 40);
  const X = v => L + (v - o.x0) / ((o.x1 - o.x0) || 1) * (R - L);
  const Y = v => B - (v - o.y0) / ((o.y1 - o.y0) || 1) * (B - T);
  const xd = o.xdiv || 1, yd = o.ydiv || 1;
  const xt = o.xcat ? {v: [], dec: 0} : ticks(o.x0 / xd, o.x1 / xd, o.xticks || 10, o.xmin);
  const yt = o.rows ? {v: [], dec: 0} : ticks(o.y0 / yd, o.y1 / yd, 5);
  ctx.font = "11px sans-serif"; ctx.lineWidth = 1; ctx.strokeStyle = "#eee";
  for (const t of yt.v) { ctx.beginPath(); ctx.moveTo(L, Y(t * yd)); ctx.lineTo(R, Y(t * yd)); ctx.stroke(); }
  ctx.strokeStyle = "#888"; ctx.beginPath(); ctx.moveTo(L, T); ctx.lineTo(L, B); ctx.lineTo(R, B); ctx.stroke();
  ctx.fillStyle = "#333"; ctx.textAlign = "center";
  for (const t of xt.v) {
    const x = X(t * xd); ctx.beginPath(); ctx.moveTo(x, B); ctx.lineTo(x, B + 4); ctx.stroke();
    ctx.fillText(num(t, xt.dec), x, B + 15);
  }
  ctx.fillText(o.xlabel, (L + R) / 2, B + 31);
  ctx.textAlign = "right";
  for (const t of yt.v) ctx.fillText(num(t, yt.dec), L - 5, Y(t * yd) + 4);
  ctx.textAlign = "left";
  if (o.rows) { ctx.fillStyle = "#666"; ctx.fillText(o.ylabel, 4, T - 8); ctx.fillStyle = "#333"; }  // above the row labels
  else { ctx.save(); ctx.translate(13, (T + B) / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center"; ctx.fillText(o.ylabel, 0, 0); ctx.restore(); }
  ctx.textAlign = "left";
  return {ctx, L, R, T, B, X, Y, x0: o.x0, x1: o.x1,
          axes: {x: o.xlabel, y: o.ylabel, x_ticks: xt.v.map(t => num(t, xt.dec)), y_ticks: yt.v.map(t => num(t, yt.dec))}};
}
function legend(id, items) {
  const lg = document.getElementById(id); lg.textContent = "";
  for (const [color, text] of items) {
    const s = el("span"), b = el("i"); b.style.background = color;
    s.appendChild(b); s.appendChild(document.createTextNode(text)); lg.appendChild(s);
  }
}
// Busy share 0..100 as a colour: red idle, yellow ~70 %, green busy.
function heatColor(v) {
  const t = Math.max(0, Math.min(1, v / 100));
  return "hsl(" + Math.round(120 * t * t) + ",70%," + Math.round(40 + 15 * (1 - t)) + "%)";
}
// Row labels of a rows plot (ranks in host order): the straggler's row in red with a frame, a
// line and the host's name where the host changes.
function rowLabels(f, rows, rh) {
  const ctx = f.ctx;
  rows.forEach((r, k) => {
    const y = f.T + k * rh;
    if (k > 0 && r.host !== rows[k - 1].host) {
      ctx.strokeStyle = "#333"; ctx.beginPath(); ctx.moveTo(f.L - 40, y); ctx.lineTo(f.R + 80, y); ctx.stroke();
    }
    if (k === 0 || r.host !== rows[k - 1].host) { ctx.fillStyle = "#555"; ctx.fillText(r.host, f.R + 6, y + Math.min(rh, 12) - 1); }
    if (r.straggler) {
      ctx.strokeStyle = "#c00"; ctx.lineWidth = 2; ctx.strokeRect(f.L - 1, y, f.R - f.L + 2, rh - 1); ctx.lineWidth = 1;
    }
    if (rh >= 8 || r.straggler) {
      ctx.fillStyle = r.straggler ? "#c00" : "#333"; ctx.font = r.straggler ? "bold 11px sans-serif" : "11px sans-serif";
      ctx.fillText((r.straggler ? "▶ " : "") + r.label, 4, y + Math.min(rh, 12) - 1); ctx.font = "11px sans-serif";
    }
  });
}
)JS";

}  // namespace ncclwatch::exporter::html_page
