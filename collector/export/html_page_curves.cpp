// The page's curve plots (html_page.h): GPU busy over the whole run with what nvidia-smi / DCGM
// would sample beside it, a window of steps finely (the within-step shape), the same window per
// rank, and one step on every rank. Data: the report's `utilization` object
// (docs/report-schema.md), drawn as it is (already bounded for any job).
#include "export/html_page.h"

namespace ncclwatch::exporter::html_page {

const char* const kCurves = R"JS(
const kindFill = {checkpoint: "rgba(217,83,79,0.16)", stall: "rgba(240,173,78,0.25)", warmup: "rgba(120,120,120,0.14)", partial: "rgba(120,120,120,0.10)"};
const kindName = {checkpoint: "checkpoint", stall: "stall", warmup: "warm-up", partial: "partial"};
const marked = (U.steps && U.steps.marked) || [], inWindow = (U.steps && U.steps.window) || [];
// Marked steps (checkpoint, stall, warm-up, partial) shaded and named.
function shadeSteps(f, marks) {
  for (const m of marks) {
    if (!m.kind || m.end_us < f.x0 || m.begin_us > f.x1) continue;
    const a = f.X(Math.max(f.x0, m.begin_us)), b = f.X(Math.min(f.x1, m.end_us));
    f.ctx.fillStyle = kindFill[m.kind] || "rgba(0,0,0,0.08)"; f.ctx.fillRect(a, f.T, Math.max(2, b - a), f.B - f.T);
    f.ctx.fillStyle = "#555"; if (b - a > 24) f.ctx.fillText((kindName[m.kind] || m.kind) + " " + m.step, a + 2, f.T + 10);
  }
}
// The bins [i0, i1) of a series (bins of w µs from b0) that lie in the frame's x range.
function binRange(b0, w, n, f) { return [Math.max(0, Math.floor((f.x0 - b0) / w)), Math.min(n, Math.ceil((f.x1 - b0) / w))]; }
function band(f, b0, w, lo, hi, i0, i1, fill) {
  const ctx = f.ctx; ctx.fillStyle = fill; ctx.beginPath();
  for (let i = i0; i < i1; i++) { const x = f.X(b0 + (i + 0.5) * w); i === i0 ? ctx.moveTo(x, f.Y(hi[i])) : ctx.lineTo(x, f.Y(hi[i])); }
  for (let i = i1 - 1; i >= i0; i--) ctx.lineTo(f.X(b0 + (i + 0.5) * w), f.Y(lo[i]));
  ctx.closePath(); ctx.fill();
}
function line(f, b0, w, v, i0, i1, color, width) {
  const ctx = f.ctx; ctx.strokeStyle = color; ctx.lineWidth = width; ctx.beginPath();
  for (let i = i0; i < i1; i++) { const x = f.X(b0 + (i + 0.5) * w), y = f.Y(v[i]); i === i0 ? ctx.moveTo(x, y) : ctx.lineTo(x, y); }
  ctx.stroke(); ctx.lineWidth = 1;
  return v.slice(i0, i1);
}
// A sampling monitor's series: one flat segment per sample, as a Grafana panel of nvidia-smi's
// utilization shows it. Returns the samples drawn.
function sampledLine(f, s, color, width) {
  const [i0, i1] = binRange(s.begin_us, s.bin_us, s.bins, f), ctx = f.ctx;
  ctx.strokeStyle = color; ctx.lineWidth = width; ctx.beginPath();
  for (let i = i0; i < i1; i++) {
    const a = f.X(Math.max(f.x0, s.begin_us + i * s.bin_us)), b = f.X(Math.min(f.x1, s.begin_us + (i + 1) * s.bin_us)), y = f.Y(s.busy_pct[i]);
    i === i0 ? ctx.moveTo(a, y) : ctx.lineTo(a, y); ctx.lineTo(b, y);
  }
  ctx.stroke(); ctx.lineWidth = 1;
  return s.busy_pct.slice(i0, i1);
}
const timeLabel = u => "time since the job's first kernel (" + u.name + ")";
let ovZoom = null, ovFrame = null;  // [x0, x1] µs chosen by a drag on the overview
function overview() {
  const c = document.getElementById("ov"), O = U.overview;
  if (!O || !O.bins) { mark("ov", 0); return empty(c, "no kernel timeline (lite mode, or no GPU-timed rank)"); }
  const [x0, x1] = ovZoom || [O.begin_us, O.begin_us + O.bins * O.bin_us], u = timeUnit(x1 - x0);
  const f = ovFrame = frame(c, {x0, x1, y0: 0, y1: 100, xdiv: u.div, xlabel: timeLabel(u), ylabel: "GPU busy (%)"});
  shadeSteps(f, marked);
  const [i0, i1] = binRange(O.begin_us, O.bin_us, O.bins, f);
  band(f, O.begin_us, O.bin_us, O.busy_min_pct, O.busy_max_pct, i0, i1, "rgba(59,125,216,0.2)");
  const busy = line(f, O.begin_us, O.bin_us, O.busy_pct, i0, i1, "#3b7dd8", 1.2);
  const smi = {smi_1s: [], smi_100ms: []};
  for (const s of U.sampled || []) {
    const second = s.period_ms >= 1000;
    smi[second ? "smi_1s" : "smi_100ms"] = sampledLine(f, s, second ? "#e08a00" : "#7b3fa0", second ? 3 : 1.5);
  }
  const W = U.window;
  if (W && W.bins) {  // where the fine window below lies
    const a = f.X(Math.max(x0, W.begin_us)), b = f.X(Math.min(x1, W.begin_us + W.bins * W.bin_us));
    if (b > a) { f.ctx.fillStyle = "#333"; f.ctx.fillRect(a, f.B + 1, b - a, 3); }
  }
  legend("ov-legend", [["#3b7dd8", "busy, median rank (" + fmtTime(O.bin_us) + " bins)"], ["rgba(59,125,216,0.35)", "min–max over ranks"],
    ["#e08a00", "what nvidia-smi / DCGM shows sampling every 1 s"], ["#7b3fa0", "… every 100 ms"],
    [kindFill.checkpoint, "checkpoint step"], [kindFill.stall, "stall step"], [kindFill.warmup, "warm-up"], ["#333", "the window drawn below"]]);
  const merged = (U.sampled || []).filter(s => s.merged > 1).map(s => num(s.period_ms) + " ms samples merged by " + s.merged);
  document.getElementById("ov-note").textContent = "busy = any kernel running (what nvidia-smi counts: a rank spinning in an NCCL kernel for a late peer is busy); median over " +
    U.gpu_ranks + " GPU-timed rank(s) of " + U.ranks + "; the whole run in " + num(O.bins) + " bins of " + fmtTime(O.bin_us) +
    (merged.length ? "; " + merged.join(", ") : "") + (ovZoom ? "; zoomed (double-click: the whole run)" : "; drag to zoom");
  mark("ov", i1 - i0, {axes: f.axes, bin_us: O.bin_us, busy, smi_1s: smi.smi_1s, smi_100ms: smi.smi_100ms,
    marked: marked.map(m => ({step: m.step, kind: m.kind}))});
}
(function () {
  const c = document.getElementById("ov"); let start = null;
  const at = e => { const r = c.getBoundingClientRect(); return (e.clientX - r.left) * c.width / r.width; };
  const time = px => ovFrame.x0 + (px - ovFrame.L) / (ovFrame.R - ovFrame.L) * (ovFrame.x1 - ovFrame.x0);
  c.addEventListener("mousedown", e => { start = at(e); });
  c.addEventListener("mouseup", e => {
    if (start === null || !ovFrame) return;
    const a = Math.min(start, at(e)), b = Math.max(start, at(e)); start = null;
    if (b - a >= 5) { ovZoom = [time(a), time(b)]; overview(); }
  });
  c.addEventListener("dblclick", () => { ovZoom = null; overview(); });
})();
let winSteps = null;  // [first, last] step chosen in the page
function windowPlot() {
  const c = document.getElementById("win"), W = U.window;
  if (!W || !W.bins) { mark("win", 0); mark("rows", 0); return empty(c, "no kernel timeline"); }
  const sel = winSteps ? inWindow.filter(s => s.step >= winSteps[0] && s.step <= winSteps[1]) : [];
  const full = [W.begin_us, W.begin_us + W.bins * W.bin_us];
  const x0 = sel.length ? Math.max(full[0], sel[0].begin_us) : full[0], x1 = sel.length ? Math.min(full[1], sel[sel.length - 1].end_us) : full[1];
  const first = sel.length ? sel[0].step : W.first_step, last = sel.length ? sel[sel.length - 1].step : W.last_step;
  document.getElementById("win-title").textContent = "The shape inside the steps: " + (first === last ? "step " + first : "steps " + first + "–" + last) + " of " + W.total_steps;
  const u = timeUnit(x1 - x0);
  const f = frame(c, {x0, x1, y0: 0, y1: 100, xdiv: u.div, xlabel: timeLabel(u), ylabel: "share of GPU time (%)"});
  shadeSteps(f, inWindow);
  f.ctx.setLineDash([4, 3]); f.ctx.strokeStyle = "#888"; f.ctx.fillStyle = "#333";
  const bounds = inWindow.filter(s => s.end_us > x0 && s.begin_us < x1), every = Math.ceil(bounds.length * 60 / (f.R - f.L));
  bounds.forEach((s, k) => {
    const x = f.X(Math.max(x0, s.begin_us)); f.ctx.beginPath(); f.ctx.moveTo(x, f.T); f.ctx.lineTo(x, f.B); f.ctx.stroke();
    if (k % every === 0) f.ctx.fillText("step " + s.step, x + 3, f.B - 4);
  });
  f.ctx.setLineDash([]);
  const [i0, i1] = binRange(W.begin_us, W.bin_us, W.bins, f), b0 = W.begin_us, w = W.bin_us;
  band(f, b0, w, W.comm_pct.map(() => 0), W.comm_pct, i0, i1, "rgba(217,83,79,0.35)");
  band(f, b0, w, W.busy_min_pct, W.busy_max_pct, i0, i1, "rgba(59,125,216,0.2)");
  const compute = line(f, b0, w, W.compute_pct, i0, i1, "#2e7d32", 1.2);
  const busy = line(f, b0, w, W.busy_pct, i0, i1, "#3b7dd8", 1.6);
  legend("win-legend", [["#3b7dd8", "busy, median rank"], ["rgba(59,125,216,0.35)", "busy, min–max over ranks"], ["#2e7d32", "compute (non-NCCL kernels), median"],
    ["rgba(217,83,79,0.5)", "collectives (NCCL kernels), median"], ["#888", "step start (dashed)"], [kindFill.checkpoint, "checkpoint"], [kindFill.stall, "stall"]]);
  document.getElementById("win-note").textContent = "bins of " + fmtTime(w) + " (about 1/50 of a step); " +
    (W.total_steps > W.last_step - W.first_step + 1 ? "the page holds at most 24 steps finely: steps " + W.first_step + "–" + W.last_step +
     " (from the first steady step, moved so the first stall or checkpoint step is inside); " : "every step; ") + "choose steps to zoom";
  mark("win", i1 - i0, {axes: f.axes, bin_us: w, begin_us: b0 + i0 * w, busy, compute, comm: W.comm_pct.slice(i0, i1),
    steps: bounds.map(s => ({step: s.step, begin_us: s.begin_us, end_us: s.end_us, kind: s.kind}))});
  rowsPlot(x0, x1);
}
function rowsPlot(x0, x1) {
  const c = document.getElementById("rows"), W = U.window, R = W.rows || [];
  const rh = Math.max(3, Math.min(16, Math.floor(480 / Math.max(1, R.length))));
  c.height = rowsHeight(R.length, rh);
  const u = timeUnit(x1 - x0);
  const f = frame(c, {x0, x1, y0: 0, y1: R.length, rows: true, left: 120, right: 90, xdiv: u.div, xlabel: timeLabel(u), ylabel: "rank (rows in host order)"});
  const [i0, i1] = binRange(W.begin_us, W.bin_us, W.bins, f), info = [];
  R.forEach((r, k) => {
    let sum = 0;
    for (let i = i0; i < i1; i++) {
      const a = Math.max(f.L, f.X(W.begin_us + i * W.bin_us)), b = Math.min(f.R, f.X(W.begin_us + (i + 1) * W.bin_us));
      sum += r.busy_pct[i]; f.ctx.fillStyle = heatColor(r.busy_pct[i]); f.ctx.fillRect(a, f.T + k * rh, Math.max(1, b - a + 0.5), rh - (rh > 5 ? 1 : 0));
    }
    info.push({label: r.label, host: r.host, straggler: r.straggler, mean_busy_pct: i1 > i0 ? Math.round(sum / (i1 - i0)) : 0});
  });
  rowLabels(f, R, rh);
  document.getElementById("rows-note").textContent = "GPU busy per bin (red idle, yellow ~70 %, green busy); " +
    (W.rows_aggregated ? "past 32 ranks each row is consecutive ranks in host order (their mean); " : "") + "stragglers (or the ranks of a lagging node) framed in red";
  mark("rows", R.length ? i1 - i0 : 0, {axes: f.axes, rows: info, aggregated: !!W.rows_aggregated});
}
// A step range is also a link: the page opened as PAGE#steps=A-B starts zoomed there, and each
// zoom puts its range in the address (a view to share, and what the browser test opens).
function zoomTo(a, b) {
  winSteps = a && b && a <= b ? [a, b] : null; windowPlot();
  try { history.replaceState(null, "", winSteps ? "#steps=" + a + "-" + b : location.pathname); } catch (e) {}
}
function zoomFromAddress() {
  const m = /^#steps=(\d+)-(\d+)$/.exec(location.hash);
  if (m) { winSteps = [+m[1], +m[2]]; document.getElementById("z-from").value = m[1]; document.getElementById("z-to").value = m[2]; }
}
document.getElementById("z-show").onclick = () => zoomTo(+document.getElementById("z-from").value, +document.getElementById("z-to").value);
document.getElementById("z-all").onclick = () => zoomTo(0, 0);
const laneColors = {idle: "#eeeeee", compute: "#3b7dd8", wait: "#d9534f", transfer: "#f0ad4e", memcpy: "#9b59b6"};
const laneNames = {idle: "idle", compute: "compute", wait: "exposed communication: waiting for peers", transfer: "exposed communication: transfer", memcpy: "memcpy/memset"};
function swimlanes() {
  const host = document.getElementById("lanes"), lanes = U.swimlanes || [], states = U.lane_states || [];
  host.textContent = "";
  if (!lanes.length) { host.appendChild(el("div", "note", "no steady step on a kernel timeline")); mark("lanes", 0); return; }
  legend("lanes-legend", states.map(s => [laneColors[s] || "#000", laneNames[s] || s]));
  document.getElementById("lanes-note").textContent = "each row one rank (host order; a line between hosts) on the clock-aligned axis; communication hidden under compute is not drawn; " +
    (lanes.some(l => l.rows_aggregated) ? "past 64 ranks a row is consecutive ranks, each bin the state most of them are in" : "a rank per row");
  const info = [];
  for (const lane of lanes) {
    host.appendChild(el("h3", "", (lane.why === "worst" ? "The worst step, " : "A representative steady step, ") + "step " + lane.step +
      " (" + fmtTime(lane.end_us - lane.begin_us) + " from the earliest rank's start to the latest rank's end; job step time " + fmtTime(lane.step_us) + ")"));
    const c = el("canvas", "plot"); host.appendChild(c);
    const rows = lane.rows, rh = Math.max(3, Math.min(20, Math.floor(480 / Math.max(1, rows.length))));
    c.width = 1100; c.height = rowsHeight(rows.length, rh);
    const span = lane.end_us - lane.begin_us, u = timeUnit(span), bw = span / Math.max(1, lane.bins);
    const f = frame(c, {x0: 0, x1: span, y0: 0, y1: rows.length, rows: true, left: 120, right: 90, xdiv: u.div,
      xlabel: "time in step " + lane.step + " from its earliest start (" + u.name + ")", ylabel: "rank"});
    const rowInfo = [];
    rows.forEach((r, k) => {
      const share = {}; for (const s of states) share[s] = 0;
      for (const [first, n, st] of r.runs) {
        const name = states[st]; f.ctx.fillStyle = laneColors[name] || "#000"; share[name] = (share[name] || 0) + n;
        f.ctx.fillRect(f.X(first * bw), f.T + k * rh, Math.max(1, f.X((first + n) * bw) - f.X(first * bw)), rh - (rh > 5 ? 1 : 0));
      }
      for (const s of Object.keys(share)) share[s] = Math.round(100 * share[s] / Math.max(1, lane.bins));
      rowInfo.push({label: r.label, host: r.host, straggler: r.straggler, share_pct: share});
    });
    rowLabels(f, rows, rh);
    info.push({why: lane.why, step: lane.step, step_us: lane.step_us, axes: f.axes, rows: rowInfo});
  }
  mark("lanes", lanes.length, {lanes: info});
}
)JS";

}  // namespace ncclwatch::exporter::html_page
