// `ncclwatch diff` output: the text a person reads (verdict first, then each comparison with
// BASE, NEW, the change and the limit it had to exceed, '*' where it did), the JSON
// (docs/diff.md) and a self-contained HTML page (no network; inline CSS and SVG of our own).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "diff/diff_result.h"

namespace ncclwatch::diff {

// Where each run came from, for the header lines.
struct Sides {
  std::string base_path, base_kind;  // kind: RunInput::kind ("report JSON", "trace directory", ...)
  std::string new_path, new_kind;
};

// "15.5 ms", "42.0 %", "96.0 GB/s"; and a change: "+3.2 ms", "+5.0 pt", "-43.1 %".
std::string value_text(double v, const std::string& unit);
std::string change_text(const Compared& c);
// "22.5 ms/step (18.0% of step time)": a finding's cost as the report says it; "—" for none.
std::string cost_text(const std::optional<FindingCost>& cost);

std::string render_text(const DiffResult& r, const Sides& sides);
nlohmann::json render_json(const DiffResult& r, const Sides& sides);
std::string render_html(const DiffResult& r, const Sides& sides);

}  // namespace ncclwatch::diff
