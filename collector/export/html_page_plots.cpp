// The page's per-step plots and tables (html_page.h): the heatmap of GPU utilization per rank
// and step, the breakdown bars, step time and overlap per step, waiting per rank, the bucket
// table, the topology findings; then the page's end (what was drawn, data-status, data-plots).
#include "export/html_page.h"

namespace ncclwatch::exporter::html_page {

const char* const kPlots = R"JS(
document.getElementById("title").textContent = "ncclwatch report" + (D.job ? " — " + D.job : "");
for (const f of D.findings) {
  const d = el("div", "f " + f.severity); d.appendChild(el("span", "src", "[" + f.source + "]"));
  d.appendChild(document.createTextNode(f.text)); document.getElementById("findings").appendChild(d);
}
function heat() {
  const c = document.getElementById("heat"), H = D.heatmap;
  const n = H.values.filter(v => v >= 0).length;
  if (!n) { mark("heat", 0); return empty(c, "no GPU-timed ranks"); }
  const rh = Math.max(2, Math.min(18, Math.floor(300 / H.rows)));
  c.height = rowsHeight(H.rows, rh);
  const f = frame(c, {x0: 0.5, x1: H.steps + 0.5, y0: 0, y1: H.rows, rows: true, left: 110, xmin: 1, xlabel: "step", ylabel: "rank"});
  const colMean = [];
  for (let k = 0; k < H.cols; k++) {
    const a = f.X(H.col_first[k] - 0.5), b = f.X((k + 1 < H.cols ? H.col_first[k + 1] : H.steps + 1) - 0.5);
    let sum = 0, cnt = 0;
    for (let r = 0; r < H.rows; r++) {
      const v = H.values[r * H.cols + k]; if (v < 0) continue;
      sum += v; cnt++; f.ctx.fillStyle = heatColor(v); f.ctx.fillRect(a, f.T + r * rh, Math.max(1, b - a + 0.5), rh);
    }
    colMean.push(cnt ? Math.round(sum / cnt * 10) / 10 : null);
  }
  f.ctx.fillStyle = "#333"; const every = Math.max(1, Math.ceil(12 / rh));  // labels 12 px apart
  for (let r = 0; r < H.rows; r += every) f.ctx.fillText(H.row_labels[r], 4, f.T + r * rh + Math.min(rh, 12) - 1);
  document.getElementById("heat-note").textContent = num(H.rows) + " rows × " + num(H.cols) + " columns" +
    (H.cols < H.steps || H.rows < D.gpu_ranks ? " (each cell the mean of the ranks and steps it covers)" : "") +
    "; colour = GPU busy over the step: green 100 %, yellow ~70 %, red idle" + (H.partial_left_out ? "; the last step, partial, is left out" : "");
  mark("heat", n, {axes: f.axes, rows: H.rows, cols: H.cols, col_labels: H.col_labels, col_mean_pct: colMean});
}
function bars() {
  const c = document.getElementById("bd"), B = D.breakdown;
  if (!B.bars.length) { mark("bd", 0); return empty(c, "no GPU-timed ranks"); }
  legend("bd-legend", B.parts.map((p, i) => [colors[i], p]));
  const bh = Math.max(3, Math.min(22, Math.floor(420 / B.bars.length) - 2));
  c.height = rowsHeight(B.bars.length, bh + 2);
  const totals = B.bars.map(b => b.ms.reduce((a, x) => a + x, 0)), max = Math.max(...totals) || 1;
  const f = frame(c, {x0: 0, x1: max * 1.12, y0: 0, y1: B.bars.length, rows: true, left: 110, xlabel: "time per steady step (ms)", ylabel: "rank"});
  B.bars.forEach((b, i) => {
    let x = 0; const y = f.T + i * (bh + 2) + 1;
    b.ms.forEach((v, p) => { f.ctx.fillStyle = colors[p]; f.ctx.fillRect(f.X(x), y, f.X(x + v) - f.X(x), bh); x += v; });
    f.ctx.fillStyle = "#333";
    if (bh >= 9) { f.ctx.fillText(b.label, 4, y + bh - 2); f.ctx.fillText(num(totals[i], 1) + " ms", f.X(x) + 4, y + bh - 2); }
  });
  mark("bd", B.bars.length, {axes: f.axes, totals_ms: totals.map(t => Math.round(t * 100) / 100),
    filled_pct: Math.round(100 * B.bars.length * (bh + 2) / (f.B - f.T))});
}
function lines() {
  const c = document.getElementById("steps"), S = D.steps, n = S.step.length;
  if (!n) { mark("steps", 0); return empty(c, "no steps"); }
  const maxMs = Math.max(...S.step_ms) * 1.1 || 1;
  const f = frame(c, {x0: S.step[0], x1: Math.max(S.step[n - 1], S.step[0] + 1), y0: 0, y1: maxMs, right: 60, xmin: 1, xlabel: "step", ylabel: "step time (ms)"});
  const draw = (vals, scale, col) => {
    f.ctx.strokeStyle = col; f.ctx.fillStyle = col; f.ctx.lineWidth = 2; f.ctx.beginPath();
    vals.forEach((v, i) => { const y = f.Y(v * scale); i ? f.ctx.lineTo(f.X(S.step[i]), y) : f.ctx.moveTo(f.X(S.step[i]), y); });
    f.ctx.stroke(); f.ctx.lineWidth = 1;
    if (n <= 60) vals.forEach((v, i) => f.ctx.fillRect(f.X(S.step[i]) - 2, f.Y(v * scale) - 2, 4, 4));
  };
  draw(S.step_ms, 1, colors[0]); draw(S.overlap_pct, maxMs / 100, colors[2]);
  f.ctx.fillStyle = "#333";  // the right axis: overlap in %
  for (const t of [0, 25, 50, 75, 100]) f.ctx.fillText(t + " %", f.R + 6, f.Y(t * maxMs / 100) + 4);
  legend("steps-legend", [[colors[0], "step time, mean over ranks (ms, left axis)"], [colors[2], "communication overlapped by compute (%, right axis)"]]);
  mark("steps", n, {axes: Object.assign(f.axes, {y2: "communication overlapped by compute (%)"}), step: S.step, step_ms: S.step_ms, overlap_pct: S.overlap_pct});
}
function waits() {
  const c = document.getElementById("waits"), W = D.waits, ll = document.getElementById("late-list");
  for (const s of W.stragglers) ll.appendChild(el("div", "f " + s.severity, "straggler: rank " + s.rank + " (" + s.host + ") " +
    num(s.lateness_ms, 1) + " ms late at " + s.late_at + (s.pattern === "periodic" ? " every " + s.period + " steps" : s.pattern === "spikes" ? " in its late steps" : "") +
    ", costing " + num(s.cost_ms, 1) + " ms/step (" + num(s.cost_pct, 1) + " % of step time) — cause " + s.cause + ": " + s.cause_text));
  if (!W.stragglers.length) ll.appendChild(el("div", "note", "no straggler found"));
  if (!W.bars.length) { mark("waits", 0); return empty(c, "no ranks"); }
  const max = Math.max(...W.bars.map(b => b.ms)) * 1.1 || 1, late = new Set(W.stragglers.map(s => "rank " + s.rank));
  const f = frame(c, {x0: 0, x1: W.bars.length, y0: 0, y1: max, xcat: true, xlabel: "rank (stragglers in dark red)", ylabel: "waiting (ms per step)"});
  const bw = (f.R - f.L) / W.bars.length;
  W.bars.forEach((b, i) => {
    f.ctx.fillStyle = late.has(b.label) ? "#8b0000" : colors[1];
    f.ctx.fillRect(f.X(i) + 1, f.Y(b.ms), Math.max(1, bw - 2), f.B - f.Y(b.ms));
    if (bw > 40) { f.ctx.fillStyle = "#333"; f.ctx.fillText(b.label, f.X(i) + 2, f.B + 15); }
  });
  mark("waits", W.bars.length, {axes: f.axes, ms: W.bars.map(b => b.ms)});
}
// The run's history: step time and its parts per period over wall time, windows shaded.
function history() {
  const c = document.getElementById("hist"), H = D.history, P = H.periods, n = P.length;
  if (!n) { mark("hist", 0); document.getElementById("hist-note").textContent = "no step summaries in these traces (layout version 5 writes them)"; return empty(c, "no history"); }
  const tEnd = Math.max(P[n - 1].t_end, P[0].t + 0.01);
  const maxMs = Math.max(...P.map(p => p.step || 0)) * 1.1 || 1, secs = tEnd - P[0].t < 2;  // minutes
  const f = frame(c, {x0: P[0].t, x1: tEnd, y0: 0, y1: maxMs, xdiv: secs ? 1 / 60 : 1, ylabel: "ms per step",
                      xlabel: (secs ? "seconds" : "minutes") + " since the run's start"});
  for (const w of H.windows) {
    const a = f.X(Math.max(w.from, P[0].t)), b = f.X(Math.min(w.to === null ? tEnd : w.to, tEnd));
    f.ctx.fillStyle = "rgba(70,110,200,0.15)"; f.ctx.fillRect(a, f.T, Math.max(2, b - a), f.B - f.T);
    f.ctx.fillStyle = "#335"; f.ctx.fillText(w.index + " " + w.trigger, a + 2, f.T + 10);
  }
  const series = [["step", "#222"], ["compute", colors[0]], ["exposed", colors[1]], ["wait", colors[2]], ["idle", colors[3]]];
  for (const [k, col] of series) {
    f.ctx.strokeStyle = col; f.ctx.lineWidth = k === "step" ? 2 : 1; f.ctx.beginPath(); let on = false;
    for (const p of P) {  // each period a level from its start to its end
      if (p[k] === null) { on = false; continue; }
      const y = f.Y(p[k]); on ? f.ctx.lineTo(f.X(p.t), y) : f.ctx.moveTo(f.X(p.t), y); f.ctx.lineTo(f.X(p.t_end), y); on = true;
    }
    f.ctx.stroke();
  }
  f.ctx.lineWidth = 1;
  legend("hist-legend", [["#222", "step time"], [colors[0], "compute"], [colors[1], "exposed communication"], [colors[2], "waiting for peers"], [colors[3], "idle"]]);
  document.getElementById("hist-note").textContent = num(n) + " periods from step " + num(P[0].first_step) + "; " + H.windows.length + " capture window(s)";
  const wl = document.getElementById("hist-windows");  // each window with what triggered it
  for (const w of H.windows) wl.appendChild(el("div", "", "window " + w.index + " (" + w.trigger + (w.text ? ": " + w.text : "") + ")"));
  mark("hist", n, {axes: f.axes, windows: H.windows.length});
}
// A table; `fmt` per column: a number of decimals (numbers for people), or "t" for text.
function table(id, rows, cols, head, fmt) {
  const host = document.getElementById(id);
  if (!rows.length) { host.appendChild(el("div", "note", "none")); mark(id, 0); return; }
  const t = el("table"), tr = el("tr"), cells = [];
  head.forEach(h => tr.appendChild(el("th", "", h))); t.appendChild(tr);
  rows.forEach(r => {
    const row = el("tr"), text = cols.map((k, i) => fmt[i] === "t" ? String(r[k]) : num(r[k], fmt[i]));
    text.forEach((s, i) => row.appendChild(el("td", fmt[i] === "t" ? "t" : "", s))); t.appendChild(row); cells.push(text);
  });
  host.appendChild(t); mark(id, rows.length, {cells});
}
zoomFromAddress(); history(); overview(); windowPlot(); swimlanes(); heat(); bars(); lines(); waits();
table("buckets", D.buckets, ["comm", "ordinal", "mib", "gpu_ms", "overlap_pct", "exposed_ms"],
      ["comm", "#", "size (MiB)", "GPU time (ms)", "overlapped (%)", "exposed (ms per step)"], ["t", 0, 1, 2, 1, 2]);
const topo = document.getElementById("topology");
if (!D.topology.length) topo.appendChild(el("div", "note", "no topology findings (no NCCL_DEBUG logs found, or none to report)"));
for (const f of D.topology) topo.appendChild(el("div", "f " + (f.severity || "info"), f.message));
if (U.window && U.window.bins) {
  for (const [id, v] of [["z-from", U.window.first_step], ["z-to", U.window.last_step]]) {
    const e = document.getElementById(id); e.value = e.value || v; e.min = U.window.first_step; e.max = U.window.last_step;
  }
}
document.getElementById("drawn").textContent = JSON.stringify(drawn);
document.body.dataset.plots = Object.values(drawn).filter(d => d.points > 0).length;
if (document.body.dataset.status === "loading") document.body.dataset.status = "ok";
</script></body></html>
)JS";

}  // namespace ncclwatch::exporter::html_page
