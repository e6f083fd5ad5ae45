// `ncclwatch diff --html FILE`: the same comparison as one self-contained page: the verdict, the
// two steps as stacked bars of their parts (inline SVG), and the tables of the text output.
#include <fmt/format.h>

#include "diff/diff_render.h"

namespace ncclwatch::diff {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

constexpr const char* kColors[] = {"#4c72b0", "#dd8452", "#c44e52", "#8172b3",
                                   "#937860", "#da8bc3", "#8c8c8c", "#ccb974"};

// BASE and NEW as horizontal bars of their parts, on one scale.
std::string bars(const DiffResult& r) {
  if (!r.step.both() || r.parts.empty()) return "";
  const double scale = std::max(r.step.base->value, r.step.now->value);
  if (scale <= 0) return "";
  std::string svg = "<svg width=\"860\" height=\"120\" role=\"img\" aria-label=\"step parts\">";
  int row = 0;
  for (const RunSummary* s : {&r.base, &r.now}) {
    const int y = 10 + row * 40;
    svg += fmt::format("<text x=\"0\" y=\"{}\">{}</text>", y + 18, row == 0 ? "BASE" : "NEW");
    double x = 50;
    for (std::size_t i = 0; i < r.parts.size(); ++i) {
      const Compared& p = r.parts[i];
      const std::optional<Figure>& f = row == 0 ? p.base : p.now;
      if (!f || f->value <= 0) continue;
      const double w = 700.0 * f->value / scale;  // room for the label after the bar
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"26\" fill=\"{}\"><title>{}: "
          "{}</title></rect>",
          x, y, w, kColors[i % 8], esc(p.label), esc(value_text(f->value, "us")));
      x += w;
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", x + 4, y + 18,
                       esc(value_text(s->step_us(), "us")));
    ++row;
  }
  svg += "</svg><p class=\"legend\">";
  for (std::size_t i = 0; i < r.parts.size(); ++i) {
    svg += fmt::format("<span style=\"color:{}\">&#9632;</span> {} &nbsp; ", kColors[i % 8],
                       esc(r.parts[i].label));
  }
  return svg + "</p>";
}

std::string table(const std::vector<Compared>& rows, const std::string& title) {
  if (rows.empty()) return "";
  std::string out = "<h2>" + esc(title) +
                    "</h2><table><tr><th></th><th>BASE</th><th>NEW</th><th>change</th>"
                    "<th>limit</th></tr>";
  for (const Compared& c : rows) {
    out +=
        fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    c.significant ? "flag" : "", esc(c.label),
                    c.base ? esc(value_text(c.base->value, c.unit)) : "&mdash;",
                    c.now ? esc(value_text(c.now->value, c.unit)) : "&mdash;", esc(change_text(c)),
                    c.both() ? "&plusmn;" + esc(value_text(c.threshold, c.unit)) : "");
  }
  return out + "</table>";
}

}  // namespace

std::string render_html(const DiffResult& r, const Sides& sides) {
  std::string body = "<h1>" + esc(r.verdict) + "</h1>";
  body += fmt::format("<p>BASE: {} ({})<br>NEW: {} ({})</p>", esc(sides.base_path),
                      esc(sides.base_kind), esc(sides.new_path), esc(sides.new_kind));
  for (const std::string& n : r.notes) body += "<p class=\"note\">" + esc(n) + "</p>";
  body += bars(r);
  std::vector<Compared> step = {r.step};
  step.insert(step.end(), r.parts.begin(), r.parts.end());
  if (r.comparable_steps) body += table(step, "Step time (mean per steady step)");
  body += table(r.rank_classes, "Compute per rank class");
  body += table(r.rank_compute, "Compute per rank");
  body += table(r.buckets, "Gradient buckets");
  body += table(r.busbw, "Bus bandwidth");
  std::string f;
  for (const auto* list : {&r.stragglers, &r.slow_links}) {
    for (const FindingChange& x : *list) {
      f += fmt::format(
          "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "<td>{} &rarr; {}</td></tr>",
          x.flagged ? "flag" : "", esc(x.kind), esc(x.who), esc(x.where), esc(x.cause),
          esc(cost_text(x.base_cost)), esc(cost_text(x.new_cost)));
    }
  }
  if (!f.empty()) {
    body +=
        "<h2>Stragglers and slow links</h2><table><tr><th>kind</th><th>who</th><th>where</th>"
        "<th>cause</th><th>cost per step (share of step time)</th></tr>" +
        f + "</table>";
  }
  body += fmt::format("<h2>Pattern</h2><p>BASE: {}<br>NEW: {}</p>", esc(r.base.pattern_text),
                      esc(r.now.pattern_text));
  body += table(r.kernels, "Compute kernels whose time per step changed most");
  std::string e;
  for (const EnvChange& x : r.environment) {
    e += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
                     x.changed ? "flag" : "", esc(x.label), esc(x.base), esc(x.now));
  }
  if (!e.empty())
    body += "<h2>Environment as recorded</h2><table><tr><th></th><th>BASE</th><th>NEW</th></tr>" +
            e + "</table>";
  if (!r.not_compared.empty()) {
    body += "<h2>Not compared</h2><ul>";
    for (const std::string& n : r.not_compared) body += "<li>" + esc(n) + "</li>";
    body += "</ul>";
  }
  return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ncclwatch diff</title><style>"
         "body{font-family:sans-serif;margin:2em;max-width:1100px}h1{font-size:1.2em}"
         "table{border-collapse:collapse;margin-bottom:1em}td,th{border-bottom:1px solid #ddd;"
         "padding:2px 8px;text-align:right}td:first-child{text-align:left}"
         "tr.flag td{background:#fde8e8;font-weight:bold}.note{color:#555}.legend{font-size:.9em}"
         "</style></head><body>" +
         body + "</body></html>\n";
}

}  // namespace ncclwatch::diff
